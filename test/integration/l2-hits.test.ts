import { describe, expect, it } from 'vitest'
import { request } from 'undici'
import { KEYS, REPORT_PATH as PATH, listen, teamsYamlWith, testConfig, WEEK_BY_DATE as Q101 } from '../helpers/build-gateway.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'

// With L1 off every hit is a read of L2: answered before Fastify's router (fast-path.ts)
// with one GETRANGE, as the route answers it; a copy that is not fresh goes on to the
// route with what was read, not read again.

const { available } = redisAvailability()
const YAML = teamsYamlWith({ cache: { l1MaxBytes: 0, ttl: { recent: '60s', settled: '60s' }, refreshAhead: 0 } })

describe.skipIf(!available)('L2 hits', () => {
  const sandbox = useSandbox()
  const { server: redis, client } = useRedis()
  const gateways = useGateways()
  const clock = fakeClock()

  const getranges = async (): Promise<number> => Number(/cmdstat_getrange:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0)
  const metric = async (gw: { admin: { inject: (o: object) => Promise<{ body: string }> } }, line: string): Promise<number> => {
    const found = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body.split('\n').find((l) => l.startsWith(`${line} `))
    return found ? Number(found.slice(line.length + 1)) : 0
  }

  it('answers a fresh copy of L2 before the router with one read, and hands a stale one to the route without a second', async () => {
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url }, YAML), { clock: onRealTimers(clock.now) }))
    const get = async (headers: Record<string, string> = {}) => {
      const res = await request(`${gw.url}${PATH}?${Q101}`, { headers: { 'x-api-key': KEYS.all, ...headers } })
      return { status: res.statusCode, headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()) }
    }
    const miss = await get()
    expect(miss.headers['x-cache']).toBe('MISS')
    await client.config('RESETSTAT')
    for (let i = 0; i < 5; i++) {
      const hit = await get({ 'x-request-id': `l2-${i}` })
      expect(hit.headers).toMatchObject({ 'x-cache': 'HIT', 'x-request-id': `l2-${i}`, 'content-type': miss.headers['content-type'], etag: miss.headers.etag })
      expect(hit.body.equals(miss.body)).toBe(true)
    }
    expect(await getranges()).toBe(5)
    expect(await metric(gw, 'gateway_cache_requests_total{result="HIT",tier="l2"}')).toBe(5)
    // Past its freshness: the route answers STALE from the copy the fast path read.
    clock.advance(61_000)
    await client.config('RESETSTAT')
    expect((await get()).headers['x-cache']).toBe('STALE')
    expect(await getranges()).toBe(1)
  })
})
