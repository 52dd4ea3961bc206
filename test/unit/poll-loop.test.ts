import { describe, expect, it } from 'vitest'
import { PollLoop } from '../../src/jobs/poll-loop.js'
import { fakeClock } from '../helpers/clock.js'

// The loop the job runner and the webhook deliverer look for work with (poll-loop.ts).

const settle = () => new Promise((resolve) => setImmediate(resolve))

function loop(nextMs = 1000) {
  const clock = fakeClock(0)
  const passes: number[] = []
  let release: (() => void) | null = null
  let hold = false
  const l = new PollLoop(clock, async () => {
    passes.push(clock.now())
    if (hold) await new Promise<void>((resolve) => (release = resolve))
    return nextMs
  })
  return { clock, passes, l, holdNext: () => (hold = true), release: () => { hold = false; release?.() } }
}

describe('PollLoop', () => {
  it('makes no pass before start, however poked: its first pass is the start\'s', async () => {
    const { clock, passes, l } = loop(10)
    l.poke()
    l.poke()
    await settle()
    clock.advance(1000)
    await settle()
    expect([passes, l.polling]).toEqual([[], false])
    l.start()
    await settle()
    expect(passes).toEqual([1000])
  })

  it('runs one pass at a time: pokes during a pass make one more pass right after it', async () => {
    const { passes, l, holdNext, release } = loop()
    holdNext()
    l.start()
    await settle()
    expect(l.polling).toBe(true)
    l.poke()
    l.poke()
    expect(passes).toEqual([0])
    release()
    await settle()
    await settle()
    expect(passes).toEqual([0, 0])
    expect(l.polling).toBe(false)
  })

  it('passes again when the pass said, or sooner at a poke', async () => {
    const { clock, passes, l } = loop(1000)
    l.start()
    await settle()
    clock.advance(999)
    await settle()
    expect(passes).toEqual([0])
    clock.advance(1)
    await settle()
    expect(passes).toEqual([0, 1000])
    clock.advance(300)
    l.poke()
    await settle()
    clock.advance(999)
    await settle()
    // The poke's pass moved the next one to 1,000 ms after it: the old timer is gone.
    expect(passes).toEqual([0, 1000, 1300])
  })

  it('starts no pass after stop, and arms no timer after a pass under way ends', async () => {
    const { clock, passes, l, holdNext, release } = loop(10)
    holdNext()
    l.start()
    await settle()
    l.stop()
    release()
    await settle()
    clock.advance(1000)
    l.poke()
    await settle()
    expect([passes, l.stopped]).toEqual([[0], true])
  })
})
