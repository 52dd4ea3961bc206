import { Redis } from 'ioredis'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { RedisClock, REDIS_CLOCK_MAX_ROUND_TRIP_MS } from '../../src/redis/redis-clock.js'
import { captureLogs } from '../helpers/build-gateway.js'
import { onRealTimers } from '../helpers/clock.js'
import { useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'

// Redis' clock as a replica reads it (src/redis/redis-clock.ts), on a real redis-server:
// the offset to this replica's clock, said once at warn when it is a second or more, again
// when it moves, at info once it is back; a slow reading not taken; Redis gone, the last kept.

const { available } = redisAvailability("Redis' clock")

describe.skipIf(!available)("Redis' clock as a replica reads it", () => {
  const { server, client: redis } = useRedis()

  function skewedClock(): { clock: RedisClock; skew: { ms: number }; logs: ReturnType<typeof captureLogs>; offsets: number[] } {
    const skew = { ms: 0 }
    const logs = captureLogs()
    const offsets: number[] = []
    const own = onRealTimers(() => Date.now() + skew.ms)
    const clock = new RedisClock(own, { redis, key: 'rgw:{jobs}:due', log: pino({ level: 'info' }, logs.stream), onRead: (ms) => offsets.push(ms) })
    return { clock, skew, logs, offsets }
  }
  const said = (logs: ReturnType<typeof captureLogs>) => logs.records().map((r) => [r.level, String(r.msg).replace(/[\d.]+ s/, 'N s')])

  it('reads the offset, and its now() is Redis\' time however far this clock is off; says so once, again when it moves, and when it agrees again', async () => {
    const { clock, skew, logs, offsets } = skewedClock()
    skew.ms = 30_000
    await clock.read()
    expect(Math.abs(clock.offsetMs + 30_000)).toBeLessThan(500)
    expect(Math.abs(clock.now() - Date.now())).toBeLessThan(500)
    await clock.read()
    expect(offsets).toHaveLength(2)
    expect(said(logs)).toEqual([[40, "this replica's clock is N s ahead of Redis': the times replicas share (job leases, webhook claims, announcements, rate-limit windows, token changes, platform pauses) are on Redis' clock; set this machine's time (NTP)"]])
    skew.ms = -5_000
    await clock.read()
    skew.ms = 0
    await clock.read()
    expect(said(logs).slice(1)).toEqual([
      [40, "this replica's clock is N s behind Redis': the times replicas share (job leases, webhook claims, announcements, rate-limit windows, token changes, platform pauses) are on Redis' clock; set this machine's time (NTP)"],
      [30, "this replica's clock agrees with Redis' again"],
    ])
  })

  it('does not take a reading whose round trip is longer than a second, nor one Redis does not answer: the last offset holds', async () => {
    const { clock, skew, offsets } = skewedClock()
    skew.ms = 30_000
    await clock.read()
    const kept = clock.offsetMs
    // A clock that moves on past the bound while the reading is on its way.
    const own = onRealTimers(() => Date.now() + skew.ms)
    let calls = 0
    const slow = new RedisClock({ ...own, now: () => own.now() + (calls++ % 2) * (REDIS_CLOCK_MAX_ROUND_TRIP_MS + 1) }, { redis, key: 'rgw:{jobs}:due', log: pino({ level: 'silent' }) })
    await slow.read()
    expect(slow.offsetMs).toBe(0)
    // Redis gone: a client that fails at once (no offline queue), as the gateway's does.
    const direct = new Redis(server.url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 })
    direct.on('error', () => undefined)
    await direct.connect()
    const cut = new RedisClock(own, { redis: direct, key: 'rgw:{jobs}:due', log: pino({ level: 'silent' }) })
    await cut.read()
    const before = cut.offsetMs
    expect(Math.abs(before + 30_000)).toBeLessThan(500)
    await server.stop()
    try {
      skew.ms = 0
      await cut.read()
      expect(cut.offsetMs).toBe(before)
    } finally {
      direct.disconnect()
      await server.restart()
    }
    expect(clock.offsetMs).toBe(kept)
    expect(offsets).toHaveLength(1)
  })
})
