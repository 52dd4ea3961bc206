import { describe, expect, it } from 'vitest'
import type { Clock } from '../../src/clock.js'
import { MemoryJobStore } from '../../src/jobs/job-store.js'
import type { JobRunner } from '../../src/jobs/job-runner.js'
import type { JobWaits } from '../../src/jobs/job-waits.js'
import { Jobs } from '../../src/jobs/jobs.js'
import type { CanonicalReport } from '../../src/reports/report-query.js'

// jobs.maxKeptPerTeam bounds the jobs a team keeps (open, and ended until dropped): asks
// made at once are counted with each other, not each against the count before any of
// them was added.

/** Jobs in a memory store on the clock `now`, a team keeping `maxKeptPerTeam`. */
function jobsOn(now: () => number, maxKeptPerTeam: number): Jobs {
  return new Jobs({
    store: new MemoryJobStore(),
    runner: { poke: () => undefined } as unknown as JobRunner,
    settings: { maxOpenPerTeam: 100, maxKeptPerTeam },
    waits: {} as JobWaits,
    clock: { now } as Clock,
    expectedSeconds: () => null,
    finality: () => ({ settledThrough: null, provisionalDays: [] }) as never,
    purged: () => false,
  })
}

describe('a team\'s kept jobs', () => {
  it('are jobs.maxKeptPerTeam at most when the team asks many at once', async () => {
    const now = 1_800_000_000_000
    const jobs = jobsOn(() => now, 3)
    const ask = (i: number) => jobs.ask({ team: 'growth', warm: false, credential: 'default', report: { path: `/r/${i}` } as unknown as CanonicalReport, key: `k${i}` })
    const asked = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => ask(i)))
    expect(asked.filter((a) => a.status === 'fulfilled')).toHaveLength(3)
    const refused = asked.flatMap((a) => (a.status === 'rejected' ? [(a.reason as { message: string }).message] : []))
    expect(refused).toHaveLength(9)
    for (const message of refused) expect(message).toContain('jobs.maxKeptPerTeam')
  })

  it('ask orders are kept for the asks of the current millisecond only, however many teams ever asked', async () => {
    let now = 1_800_000_000_000
    const jobs = jobsOn(() => now, 100)
    const ask = (team: string, i: number) => jobs.ask({ team, warm: false, credential: 'default', report: { path: `/r/${i}` } as unknown as CanonicalReport, key: `k${i}` })
    for (let i = 0; i < 50; i++) {
      const [a, b] = [await ask(`t${i}`, i), await ask(`t${i}`, i + 1000)]
      // Asks within one millisecond still sort as they came.
      expect(a.id < b.id).toBe(true)
      expect(jobs.orderedTeams).toBe(1)
      now += 1
    }
  })
})
