import { describe, expect, it } from 'vitest'
import { PLAIN_PROGRESS_MS, plainProgress } from '../../src/cli/warm-progress.js'
import { fakeClock } from '../helpers/clock.js'

// The warm command's progress in a job's log (no terminal), on a fake clock; the built CLI
// writing it in a process of its own: test/slow/warm-progress.test.ts.

const tally = (warmed: number) => ({ warmed, fresh: 0, stale: 0, uncacheable: 0, failed: 0 })

describe('plainProgress', () => {
  it('writes where the run stands every 5 seconds, from its last update, and nothing once stopped', () => {
    const clock = fakeClock()
    const lines: string[] = []
    const progress = plainProgress(3, (line) => lines.push(line), clock)
    clock.advance(PLAIN_PROGRESS_MS - 1)
    expect(lines).toEqual([])
    clock.advance(1)
    expect(lines).toEqual(['warm: 0/3: 0 warmed, 0 already fresh, 0 stale, 0 not cacheable, 0 failed\n'])
    progress.update({ done: 2, total: 3, tally: tally(2) })
    clock.advance(PLAIN_PROGRESS_MS)
    expect(lines.at(-1)).toBe('warm: 2/3: 2 warmed, 0 already fresh, 0 stale, 0 not cacheable, 0 failed\n')
    progress.stop()
    clock.advance(10 * PLAIN_PROGRESS_MS)
    expect(lines).toHaveLength(2)
  })

  it('says how many jobs are queued or running with --jobs', () => {
    const clock = fakeClock()
    const lines: string[] = []
    const progress = plainProgress(3, (line) => lines.push(line), clock)
    progress.update({ done: 1, total: 3, tally: tally(1), open: 2 })
    clock.advance(PLAIN_PROGRESS_MS)
    progress.stop()
    expect(lines).toEqual(['warm: 1/3: 1 warmed, 0 already fresh, 0 stale, 0 not cacheable, 0 failed; 2 jobs queued or running\n'])
  })
})
