import { describe, expect, it } from 'vitest'
import { PlatformTime, secondsToNextDay } from '../../src/observe/platform-time.js'
import { fakeClock } from '../helpers/clock.js'

const NOON = Date.parse('2026-03-10T12:00:00Z')
const DAY = Date.parse('2026-03-10T00:00:00Z')

describe('a team\'s platform time over the last minute and the UTC day', () => {
  it('counts a call in the minute until a minute after it, and not after', () => {
    const clock = fakeClock(NOON)
    const time = new PlatformTime(clock)
    time.spend('growth', 1_000)
    clock.advance(30_000)
    time.spend('growth', 500)
    expect(time.minuteMs('growth')).toBe(1_500)
    expect(time.minuteMs('other')).toBe(0)
    clock.advance(30_500)
    expect(time.minuteMs('growth')).toBe(500)
    clock.advance(30_000)
    expect(time.minuteMs('growth')).toBe(0)
    // The day keeps both.
    expect(time.dayMs('growth')).toBe(1_500)
  })

  it('starts the day again at UTC midnight', () => {
    const clock = fakeClock(Date.parse('2026-03-10T23:59:30Z'))
    const time = new PlatformTime(clock)
    time.spend('growth', 2_000)
    expect(time.dayMs('growth')).toBe(2_000)
    clock.advance(31_000)
    expect(time.dayMs('growth')).toBe(0)
    // The minute does not care for days.
    expect(time.minuteMs('growth')).toBe(2_000)
  })

  it('takes the day\'s total of every replica from a flush, this replica\'s time since added', () => {
    const clock = fakeClock(NOON)
    const time = new PlatformTime(clock)
    time.spend('growth', 300)
    time.spend('growth', 100)
    // The flush sent 300 (the 100 came after) and read back 5,000 of every replica.
    time.shared('growth', DAY, 300, 5_000)
    expect(time.dayMs('growth')).toBe(5_100)
    // Yesterday's flush says nothing of today.
    time.shared('growth', DAY - 86_400_000, 100, 90_000)
    expect(time.dayMs('growth')).toBe(5_100)
  })

  it('keeps what it knew of the day when Redis reads back less (a reset there)', () => {
    const clock = fakeClock(NOON)
    const time = new PlatformTime(clock)
    time.spend('growth', 300)
    time.shared('growth', DAY, 300, 5_000)
    time.spend('growth', 200)
    // Reset to 0 in Redis before this flush: it reads back the 200 it sent alone.
    time.shared('growth', DAY, 200, 200)
    expect(time.dayMs('growth')).toBe(5_200)
    time.shared('growth', DAY, 0, 9_000)
    expect(time.dayMs('growth')).toBe(9_000)
  })

  it('holds a team over its bound until the day ends: the seconds to UTC midnight, then none', () => {
    const clock = fakeClock(NOON)
    const time = new PlatformTime(clock)
    expect(time.overBound('growth', 2, clock.now())).toBe(0)
    time.spend('growth', 1_999)
    expect(time.overBound('growth', 2)).toBe(0)
    time.spend('growth', 1)
    expect(time.overBound('growth', 2)).toBe(12 * 3600)
    expect(time.overBound('growth', null)).toBe(0)
    clock.advance(12 * 3600 * 1000 - 1_500)
    expect(time.overBound('growth', 2)).toBe(2)
    clock.advance(1_500)
    expect(time.overBound('growth', 2)).toBe(0)
  })

  it('says at least one second to the next day', () => {
    expect(secondsToNextDay(DAY)).toBe(86_400)
    expect(secondsToNextDay(DAY + 86_400_000 - 1)).toBe(1)
  })
})

describe('the teams whose platform time is kept', () => {
  // A replica's teams change with reloads: a team removed, or idle since a past day, has no
  // time left to count (its day is over, its minute empty), and its entry goes.
  it('are those of the UTC day and the last minute: 100 teams, one a day, leave one kept', () => {
    const clock = fakeClock(NOON)
    const time = new PlatformTime(clock)
    for (let i = 0; i < 100; i++) {
      time.spend(`team-${i}`, 1_000)
      clock.advance(86_400_000)
    }
    expect(time.size).toBe(1)
    expect(time.dayMs('team-99', clock.now() - 86_400_000)).toBe(1_000)
  })

  it('keep a past day\'s team while its last minute holds time, and every team of the day', () => {
    const clock = fakeClock(Date.parse('2026-03-10T23:59:50Z'))
    const time = new PlatformTime(clock)
    time.spend('late', 2_000)
    time.spend('also-today', 500)
    clock.advance(20_000)
    time.spend('after-midnight', 1_000)
    expect(time.size).toBe(3)
    expect(time.minuteMs('late')).toBe(2_000)
    clock.advance(60_000)
    time.spend('next', 1_000)
    expect(time.size).toBe(2)
    expect([time.minuteMs('late'), time.dayMs('late'), time.dayMs('after-midnight')]).toEqual([0, 0, 1_000])
  })
})
