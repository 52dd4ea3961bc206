import pino from 'pino'
import { describe, expect, it } from 'vitest'
import { systemClock } from '../../src/clock.js'
import { PauseSharing, type PeerPause } from '../../src/platform/pauses/pause-sharing.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisBus } from '../../src/redis/bus.js'
import { createRedisClient } from '../../src/redis/client.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { useCleanups, useRedis } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A replica tells the others of a pause (and of its end) on the bus, and Redis hands every
// message to every subscriber, the replica that sent it too. Its own word is no news: taken
// as a peer's, a pause's echo would set its end again from the echo's arrival (later than
// the pause's own, by the bus's delay or a Redis stall), and an end's echo could end a pause
// begun since.

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)
const log = pino({ level: 'silent' })
const SECRET = 'pause-sharing-test-secret-0123456789'

describe.skipIf(!redisCheck.available)('pause sharing between replicas (Redis)', () => {
  const { server } = useRedis()
  const cleanups = useCleanups()

  async function replica(heard: PeerPause[]): Promise<PauseSharing> {
    const client = createRedisClient({ url: server.url, commandTimeoutMs: 1000 } as Parameters<typeof createRedisClient>[0], log)
    if (client === null) throw new Error('no client')
    const bus = new RedisBus(client, 'rgw:bus:', log, { seal: new RedisSeal(SECRET) })
    cleanups.push(async () => {
      await bus.close()
      client.disconnect()
    })
    const breaker = new RedisBreaker({ cooldownMs: 1000, log })
    const sharing = new PauseSharing({ redis: client, breaker, bus, seal: new RedisSeal(SECRET), keyPrefix: 'rgw:', maxPauseMs: 60_000, log, onUnverified: () => undefined, clock: systemClock })
    await sharing.start(['default'], (word) => heard.push(word))
    return sharing
  }

  const pause = (team: string, ms: number) => ({ scope: { kind: 'team-route' as const, team, route: '/api/v1/report/x/get' }, team, route: '/api/v1/report/x/get', until: systemClock.now() + ms })

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
