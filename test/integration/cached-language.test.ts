import { describe, expect, it } from 'vitest'
import { KEYS, listen, teamsYamlWith, testConfig, TEST_GATEWAY_SECRET, type TestGateway } from '../helpers/build-gateway.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { RedisSeal } from '../../src/redis/seal.js'

// A report copy says the language the platform wrote it in (`content-language`), as the
// platform's answer to its fill did: on the MISS, on every HIT and STALE, on another
// replica reading it from Redis, and once more after the fill that follows a copy an
// earlier build kept without it. The platform is localized (the sandbox's `localized`);
// report fills ask in no language, so it answers in its default one, English.

const { available } = redisAvailability()
const YAML = teamsYamlWith({ cache: { ttl: { recent: '60s', settled: '60s' }, refreshAhead: 0 } })
const PLACEMENTS = '/api/v1/report/adPlacementPositions/get'
const TARGET = `${PLACEMENTS}?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-07`

interface Read {
  status: number
  cache: string | null
  language: string | null
  etag: string | null
  contentType: string | null
}

describe.skipIf(!available)('the language of a report copy', () => {
  const sandbox = useSandbox({ localized: true })
  const { server: redis, client } = useRedis()
  const gateways = useGateways()
  const clock = fakeClock()

  async function replica(): Promise<TestGateway & { url: string }> {
    return listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url }, YAML), { clock: onRealTimers(clock.now) }))
  }

  async function read(gw: { url: string }, headers: Record<string, string> = {}): Promise<Read> {
    const res = await fetch(`${gw.url}${TARGET}`, { headers: { 'x-api-key': KEYS.all, 'accept-language': 'de-DE, de;q=0.9', ...headers } })
    await res.arrayBuffer()
    return { status: res.status, cache: res.headers.get('x-cache'), language: res.headers.get('content-language'), etag: res.headers.get('etag'), contentType: res.headers.get('content-type') }
  }

  it('is the platform\'s on MISS, HIT, STALE and an L2 hit on another replica; a 304 carries the validator only, as for the content type', async () => {
    const a = await replica()
    const miss = await read(a)
    expect([miss.status, miss.cache, miss.language]).toEqual([200, 'MISS', 'en'])
    expect((await read(a)).language).toBe('en')
    expect((await read(a)).cache).toBe('HIT')
    // Written through writeHead rather than from the rendered head: the same header.
    const injected = await a.proxy.inject({ method: 'GET', url: TARGET, headers: { 'x-api-key': KEYS.all } })
    expect([injected.headers['x-cache'], injected.headers['content-language']]).toEqual(['HIT', 'en'])

    const b = await replica()
    const l2 = await read(b)
    expect([l2.cache, l2.language]).toEqual(['HIT', 'en'])

    const notModified = await read(a, { 'if-none-match': miss.etag ?? '' })
    expect([notModified.status, notModified.cache, notModified.contentType, notModified.language]).toEqual([304, 'HIT', null, null])

    clock.advance(61_000)
    const stale = await read(b)
    expect([stale.cache, stale.language]).toEqual(['STALE', 'en'])
    expect(sandbox.requests.filter((r) => r.path === PLACEMENTS).every((r) => r.headers['accept-language'] === undefined)).toBe(true)
  })

  it('a copy an earlier build kept in Redis without it is read, and says it from its next fill on', async () => {
    const a = await replica()
    expect((await read(a)).language).toBe('en')
    const [key] = await client.keys('rgw:report:*')
    if (key === undefined) throw new Error('no report copy in Redis')
    // The same copy as the earlier build writes it: its header without the language.
    const seal = new RedisSeal(TEST_GATEWAY_SECRET)
    const data = seal.open(key, (await client.getBuffer(key)) as Buffer) as Buffer
    const headerLength = data.readUInt32BE(0)
    const { lang: _lang, ...earlier } = JSON.parse(data.subarray(4, 4 + headerLength).toString('utf8')) as Record<string, unknown>
    const header = Buffer.from(JSON.stringify(earlier))
    const length = Buffer.alloc(4)
    length.writeUInt32BE(header.length, 0)
    await client.set(key, seal.seal(key, Buffer.concat([length, header, data.subarray(4 + headerLength)])), 'KEEPTTL')

    const b = await replica()
    const old = await read(b)
    expect([old.status, old.cache, old.language]).toEqual([200, 'HIT', null])
    clock.advance(61_000)
    expect((await read(b)).cache).toBe('STALE')
    await waitFor('the refill', async () => (await read(b)).cache === 'HIT', testTimeLeft(), 25)
    expect((await read(b)).language).toBe('en')
  })
})
