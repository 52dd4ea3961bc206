import { describe, expect, it } from 'vitest'
import type { CacheEntry } from '../../src/cache/cache-entry.js'
import type { TeamConfig } from '../../src/config.js'
import { ReportAnswerFacts } from '../../src/http/reads/report-facts.js'
import { PlatformTime } from '../../src/observe/platform-time.js'

const NOON = Date.parse('2026-03-10T12:00:00Z')
const team = { name: 'growth', credential: 'default', weight: 1, platformSecondsPerDay: null } as unknown as TeamConfig
const copy = (fillMs: number) => ({ fetchedAt: NOON, fillMs }) as unknown as CacheEntry

function facts(time: PlatformTime): ReportAnswerFacts {
  return new ReportAnswerFacts({ platformTime: time, policy: { settledAfterDays: 3, timeZone: 'UTC' }, shareSeats: () => null })
}

describe('the platform-usage line of a report answer', () => {
  it('makes the line once a fill: the answers of one fill in a second say what its first answer said, with that fill counted', () => {
    const time = new PlatformTime()
    const usage = facts(time)
    const fill = copy(1_500)
    time.spend('growth', 1_500, NOON)
    const first = usage.usage(team, 1_500, NOON, fill)
    expect(first).toBe('fill=1.500, minute=1.500, day=1.500, reset=43200')
    // Another call of the team ends between two waiters of the fill: the waiters say the same.
    time.spend('growth', 250, NOON + 100)
    expect(usage.usage(team, 1_500, NOON + 200, fill)).toBe(first)
    // A hit of that second says what the line said (once a second, as before).
    expect(usage.usage(team, 0, NOON + 300)).toBe('fill=0, minute=1.500, day=1.500, reset=43200')
    expect(usage.usage(team, 1_500, NOON + 400, fill)).toBe(first)
  })

  it('makes the line anew for another fill, another fill time of the same copy and another second', () => {
    const time = new PlatformTime()
    const usage = facts(time)
    const fill = copy(1_500)
    time.spend('growth', 1_500, NOON)
    usage.usage(team, 1_500, NOON, fill)
    time.spend('growth', 250, NOON + 100)
    // Another copy's fill: made anew, both calls counted.
    expect(usage.usage(team, 250, NOON + 200, copy(250))).toBe('fill=0.250, minute=1.750, day=1.750, reset=43200')
    // The first copy again, after the other fill's line: made anew.
    expect(usage.usage(team, 1_500, NOON + 300, fill)).toBe('fill=1.500, minute=1.750, day=1.750, reset=43200')
    // The same copy with another fill time (a job's own call): made anew.
    time.spend('growth', 1_000, NOON + 400)
    expect(usage.usage(team, 2_000, NOON + 500, fill)).toBe('fill=2.000, minute=2.750, day=2.750, reset=43200')
    // The next second: made anew.
    time.spend('growth', 1_000, NOON + 1_100)
    expect(usage.usage(team, 2_000, NOON + 1_200, fill)).toBe('fill=2.000, minute=3.750, day=3.750, reset=43199')
    // An answer whose fill was not kept (no copy): made anew each time.
    time.spend('growth', 1_000, NOON + 1_300)
    expect(usage.usage(team, 2_000, NOON + 1_400)).toBe('fill=2.000, minute=4.750, day=4.750, reset=43199')
  })
})
