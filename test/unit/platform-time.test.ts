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
