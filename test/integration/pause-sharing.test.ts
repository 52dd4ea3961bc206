import pino from 'pino'
import { describe, expect, it } from 'vitest'
import { systemClock, type Clock } from '../../src/clock.js'
import { PauseSharing, type PeerPause } from '../../src/platform/pauses/pause-sharing.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisBus } from '../../src/redis/bus.js'
import { createRedisClient } from '../../src/redis/client.js'
import { RedisClock } from '../../src/redis/redis-clock.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { testConfig, TEST_GATEWAY_SECRET } from '../helpers/build-gateway.js'
import { onRealTimers } from '../helpers/clock.js'
import { useCleanups, useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A replica tells the others of a pause (and of its end) on the bus, and Redis hands every
// message to every subscriber, the replica that sent it too. Its own word is no news: taken
// as a peer's, a pause's echo would set its end again from the echo's arrival (later than
// the pause's own, by the bus's delay or a Redis stall), and an end's echo could end a pause
// begun since.
//
// A replica that starts reads the pauses under way from Redis: their ends are on Redis'
// clock (redis-clock.ts), so a replica whose clock is off takes each for the time it has left.

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)
const log = pino({ level: 'silent' })
const SECRET = 'pause-sharing-test-secret-0123456789'

describe.skipIf(!redisCheck.available)('pause sharing between replicas (Redis)', () => {
  const { server } = useRedis()
  const cleanups = useCleanups()
  const sandbox = useSandbox()
  const gateways = useGateways()

  /** A replica whose own clock is `skewMs` ahead of the machine's (negative: behind), on Redis' clock for what it shares, as the gateway starts one. */
  async function replica(heard: PeerPause[], skewMs = 0): Promise<PauseSharing & { clock: Clock }> {
    const client = createRedisClient({ url: server.url, commandTimeoutMs: 1000 } as Parameters<typeof createRedisClient>[0], log)
    if (client === null) throw new Error('no client')
    const bus = new RedisBus(client, 'rgw:bus:', log, { seal: new RedisSeal(SECRET) })
    cleanups.push(async () => {
      await bus.close()
      client.disconnect()
    })
    const breaker = new RedisBreaker({ cooldownMs: 1000, log })
    const clock = onRealTimers(() => Date.now() + skewMs)
    const redisClock = new RedisClock(clock, { redis: client, key: 'rgw:{jobs}:due', log })
    // As the gateway reads it: once connected (no offline queue), before the pauses under way.
    await waitFor('the client to connect', () => client.status === 'ready')
    await redisClock.read()
    const sharing = new PauseSharing({ redis: client, breaker, bus, seal: new RedisSeal(SECRET), keyPrefix: 'rgw:', maxPauseMs: 60_000, log, onUnverified: () => undefined, clock, sharedNow: redisClock.now })
    await sharing.start(['default'], (word) => heard.push(word))
    return Object.assign(sharing, { clock })
  }

  const pause = (team: string, ms: number, clock: Clock = systemClock) => ({ scope: { kind: 'team-route' as const, team, route: '/api/v1/report/x/get' }, team, route: '/api/v1/report/x/get', until: clock.now() + ms })

  it("a route's own limiter's pause keeps its mark on the bus and in Redis, and another pause gets none", async () => {
    const heard: PeerPause[] = []
    await replica(heard)
    const writer = await replica([])
    await writer.share('default', { ...pause('own', 20_000), own: true })
    await writer.share('default', pause('count', 20_000))
    await waitFor('both pauses on the bus', () => heard.length === 2)
    const marks = (words: PeerPause[]) => Object.fromEntries(words.map((w) => ('pause' in w ? [w.pause.team, w.pause.own ?? null] : [w.ended, 'ended'])))
    expect(marks(heard)).toEqual({ own: true, count: null })
    const stored: PeerPause[] = []
    await replica(stored)
    expect(marks(stored)).toEqual({ own: true, count: null })
  })

  it("a replica that starts takes each stored pause for the time it has left, whichever replica's clock is 30 s off", async () => {
    const ahead = await replica([], 30_000)
    const writer = await replica([])
    await ahead.share('default', pause('ahead', 20_000, ahead.clock))
    await writer.share('default', pause('writer', 20_000))
    for (const skewMs of [0, 30_000, -30_000]) {
      const heard: PeerPause[] = []
      const starting = await replica(heard, skewMs)
      const left = Object.fromEntries(heard.map((w) => ('pause' in w ? [w.pause.team, w.pause.until - starting.clock.now()] : [w.ended, 0])))
      expect(Object.keys(left).sort(), `skew ${skewMs}`).toEqual(['ahead', 'writer'])
      for (const [team, ms] of Object.entries(left)) {
        expect(ms, `skew ${skewMs}: ${team}`).toBeGreaterThan(15_000)
        expect(ms, `skew ${skewMs}: ${team}`).toBeLessThanOrEqual(20_000)
      }
    }
  })

  it('a gateway that starts 30 s ahead of Redis takes a pause another replica stored with 20 s left', async () => {
    const config = testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url })
    const [credential] = Object.keys(config.credentials)
    // The replica that drew the 429, as the gateway shares it (its prefix, its GATEWAY_SECRET).
    const client = createRedisClient({ url: server.url, commandTimeoutMs: 1000 } as Parameters<typeof createRedisClient>[0], log)
    if (client === null || credential === undefined) throw new Error('no client')
    cleanups.push(() => client.disconnect())
    await waitFor('the client to connect', () => client.status === 'ready')
    const redisClock = new RedisClock(systemClock, { redis: client, key: 'rgw:{jobs}:due', log })
    await redisClock.read()
    const breaker = new RedisBreaker({ cooldownMs: 1000, log })
    const writer = new PauseSharing({ redis: client, breaker, bus: null, seal: new RedisSeal(TEST_GATEWAY_SECRET), keyPrefix: config.redis.keyPrefix, maxPauseMs: 60_000, log, onUnverified: () => undefined, clock: systemClock, sharedNow: redisClock.now })
    await writer.share(credential, pause('growth', 20_000))

    const clock = onRealTimers(() => Date.now() + 30_000)
    const ahead = await gateways.build(config, { clock })
    const [taken] = ahead.governors.pausesOf(credential)
    expect(taken?.team).toBe('growth')
    expect(taken!.until - clock.now()).toBeGreaterThan(15_000)
    expect(taken!.until - clock.now()).toBeLessThanOrEqual(20_000)
  })

  it('tells the other replica of a pause and of its end, and never itself', async () => {
    const heardA: PeerPause[] = []
    const heardB: PeerPause[] = []
    const a = await replica(heardA)
    const b = await replica(heardB)
    const c = await replica([])
    await a.share('default', pause('one', 5000))
    await a.shareEnd('default', pause('one', 5000))
    await b.share('default', pause('two', 5000))
    // C's word last: one subscriber hears a channel's messages in the order they were
    // published, so once A and B have heard it, they have heard every echo of their own.
    await c.share('default', pause('three', 5000))
    const words = (heard: PeerPause[]) => heard.map((w) => ('ended' in w ? `ended ${w.ended}` : `pause ${w.pause.team}`))
    await waitFor('A and B to hear C', () => words(heardA).includes('pause three') && words(heardB).includes('pause three'))
    expect(words(heardA)).toEqual(['pause two', 'pause three'])
    expect(words(heardB)).toEqual(['pause one', expect.stringMatching(/^ended /), 'pause three'])
  })
})
