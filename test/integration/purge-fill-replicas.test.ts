import { createServer, connect, type AddressInfo, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { REPORT_PATH, TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis } from '../helpers/fixtures.js'
import { proxyGet } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'
import { heldPlatform } from '../helpers/held-platform.js'

// A fill asked on replica A before a purge made on replica B, and answered after it: the
// platform may have read its figures before the purge, so no replica serves the copy as a
// HIT, whether A heard of the purge before it stored the copy in Redis or only after (its
// subscriber away meanwhile). Two gateway instances in this process stand for two
// replicas, on one real redis-server; A reaches it through a way that holds what Redis
// sends its subscriber while the test says so.

const ADMIN_TOKEN = 'purge-fill-admin-token-0123456789abcdef'
const GATEWAY_SECRET = 'purge-fill-gateway-secret-0123456789a'
const REPORT = `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2025-03-01&dateTo=2025-03-07`

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)

/** A TCP way to Redis that holds, while `muted`, what Redis sends on connections that subscribed. */
async function mutingWay(port: number) {
  let muted = false
  const subscribers = new Set<{ held: Buffer[]; socket: Socket }>()
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    const upstream = connect(port, '127.0.0.1')
    sockets.add(socket).add(upstream)
    socket.on('error', () => upstream.destroy())
    upstream.on('error', () => socket.destroy())
    const way = { held: [] as Buffer[], socket }
    socket.on('data', (chunk: Buffer) => {
      if (/subscribe/i.test(chunk.toString('latin1'))) subscribers.add(way)
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (muted && subscribers.has(way)) way.held.push(chunk)
      else socket.write(chunk)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
    subscribed: () => subscribers.size > 0,
    mute: () => (muted = true),
    unmute: () => {
      muted = false
      for (const way of subscribers) for (const chunk of way.held.splice(0)) way.socket.write(chunk)
    },
    close: () => {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

describe.skipIf(!redisCheck.available)('a fill under way on one replica and a purge on another (Redis)', () => {
  const { server: redis } = useRedis()
  const gateways = useGateways()
  const closing: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const close of closing.splice(0)) await close()
  })

  const replica = (platform: string, redisUrl: string): Promise<TestGateway> =>
    gateways.build(testConfig({ PLATFORM_BASE_URL: platform, PLATFORM_TOKEN: 'held-platform-token', ADMIN_TOKEN, REDIS_URL: redisUrl, GATEWAY_SECRET }, TEAMS_YAML))
  const impressions = (res: { body: string }) => (JSON.parse(res.body) as { data: { impressions: number }[] }).data[0]?.impressions

  it('a copy A stored before it heard of the purge is served as a HIT by neither replica', async () => {
    const platform = await heldPlatform()
    closing.push(platform.close)
    const way = await mutingWay(redis.port)
    closing.push(way.close)
    const a = await replica(platform.url, way.url)
    const b = await replica(platform.url, redis.url)
    await waitFor("A's subscriber to subscribe", () => way.subscribed())
    platform.hold()
    const filling = proxyGet(a, REPORT)
    await waitFor('A to ask the platform', () => platform.waiting() === 1)
    way.mute()
    expect((await b.admin.inject({ method: 'DELETE', url: '/admin/cache?advertiserId=101', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).statusCode).toBe(200)
    platform.release()
    const filled = await filling
    expect(filled.statusCode).toBe(200)
    expect(impressions(filled)).toBe(1)
    // B: the copy in Redis holds figures the platform may have read before B's purge.
    const fromB = await proxyGet(b, REPORT)
    expect(fromB.headers['x-cache']).toBe('MISS')
    expect(impressions(fromB)).toBe(2)
    way.unmute()
    await waitFor('A to stop answering the copy filled across the purge', async () => impressions(await proxyGet(a, REPORT)) !== 1)
  })
})
