import { randomBytes } from 'node:crypto'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { encodeEntry, etagOf } from '../../src/cache/cache-entry.js'
import { ConfigError } from '../../src/config.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { KEYS, REPORT_PATH as PATH, TEAMS_YAML, teamsYamlWith, testConfig, WEEK_BY_DATE as QUERY, type TestGateway } from '../helpers/build-gateway.js'
import { ensureBuilt } from '../helpers/gateway-process.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'

// Redis is shared, not trusted: what a replica reads there is bounded before it is
// decoded, even under the gateway's own seal (a replica with other settings, a secret
// that leaked). And without GATEWAY_SECRET there is no Redis at all: anyone who may
// write to it could otherwise plant answers every replica serves.

const { available } = redisAvailability()

const SECRET = 'redis-bounds-test-secret-0000000000000'
const MAX_ENTRY_BYTES = 256 * 1024
const TTL_S = 60
const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))

const YAML = teamsYamlWith({
  platform: { timeout: '3s' },
  redis: { commandTimeout: '500ms' },
  cache: { maxEntryBytes: MAX_ENTRY_BYTES, ttl: { recent: `${TTL_S}s`, settled: `${TTL_S}s` }, staleWhileRevalidate: '10s', staleIfError: '1h' },
})

/** A value sealed as a replica holding SECRET would seal it under `key`. */
function sealedEntry(key: string, body: { gzip: Buffer; identityBytes: number }, lifetime: { freshMs: number; errorMs: number }, advertiserIds: number[] = [101]): Buffer {
  const now = Date.now()
  const value = encodeEntry({
    contentType: 'application/json',
    gzip: body.gzip,
    identity: null,
    etag: etagOf(body.gzip),
    fetchedAt: now,
    freshUntil: now + lifetime.freshMs,
    staleUntil: now + lifetime.freshMs,
    errorUntil: now + lifetime.errorMs,
    advertiserIds,
  })
  return new RedisSeal(SECRET).seal(key, value)
}

describe('Redis without GATEWAY_SECRET', () => {
  it('is a configuration error naming how to make a secret', () => {
    let err: unknown
    try {
      testConfig({ PLATFORM_BASE_URL: 'https://platform.example', PLATFORM_TOKEN: 'x'.repeat(20), REDIS_URL: 'redis://127.0.0.1:6399', GATEWAY_SECRET: '' })
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(ConfigError)
    expect((err as ConfigError).problems).toEqual([expect.stringMatching(/^GATEWAY_SECRET: required with Redis \(REDIS_URL\).*openssl rand -base64 32/)])
    // Sentinel and Cluster from the config file alike.
    expect(() => testConfig({ PLATFORM_BASE_URL: 'https://platform.example', PLATFORM_TOKEN: 'x'.repeat(20), GATEWAY_SECRET: '' }, `${TEAMS_YAML}redis:\n  cluster: [{ host: 127.0.0.1, port: 7000 }]\n`)).toThrow(/GATEWAY_SECRET: required with Redis \(redis\.cluster\)/)
  })

  it('stops the start: exit 78 and one line', async () => {
    ensureBuilt()
    const child = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH ?? '', PLATFORM_BASE_URL: 'https://platform.example', PLATFORM_TOKEN: 'x'.repeat(20), REDIS_URL: 'redis://127.0.0.1:6399', PORT: '0', ADMIN_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c))
    child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c))
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
    clearTimeout(timer)
    expect(code).toBe(78)
    const lines = out.split('\n').filter(Boolean)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^report-gateway: invalid configuration: GATEWAY_SECRET: required with Redis \(REDIS_URL\).*`openssl rand -base64 32`/)
  })
})

describe.skipIf(!available)('what is read from Redis is bounded before it is decoded', () => {
  const sandbox = useSandbox()
  const { server, client } = useRedis()
  const gateways = useGateways()

  const replica = () => gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, GATEWAY_SECRET: SECRET }, YAML))
  const get = (gw: TestGateway) => gw.proxy.inject({ method: 'GET', url: `${PATH}?${QUERY}`, headers: { 'x-api-key': KEYS.all } })
  const reportCalls = () => sandbox.countRequests((r) => r.path === PATH)

  /** The Redis key of the report, filled through a first replica. */
  async function reportKey(): Promise<string> {
    const a = await replica()
    expect((await get(a)).headers['x-cache']).toBe('MISS')
    const keys = await client.keys('rgw:report:*')
    expect(keys).toHaveLength(1)
    return keys[0] as string
  }

  it('does not inflate a gzip bomb: a body past cache.maxEntryBytes is a miss', async () => {
    const key = await reportKey()
    // 64 MiB of spaces in about 64 KB of gzip: well under the entry limit as stored.
    const gzip = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20), { level: 9 })
    expect(gzip.length).toBeLessThan(MAX_ENTRY_BYTES)
    await client.set(key, sealedEntry(key, { gzip, identityBytes: 64 * 1024 * 1024 }, { freshMs: 30_000, errorMs: 60_000 }), 'PX', 60_000)
    const b = await replica()
    const calls = reportCalls()
    const res = await get(b)
    expect(res.headers['x-cache']).toBe('MISS')
    expect(res.body.length).toBeLessThan(MAX_ENTRY_BYTES)
    expect(reportCalls()).toBe(calls + 1)
  })

  it('does not read an entry larger than cache.maxEntryBytes', async () => {
    const key = await reportKey()
    const gzip = randomBytes(2 * MAX_ENTRY_BYTES)
    await client.set(key, sealedEntry(key, { gzip, identityBytes: gzip.length }, { freshMs: 30_000, errorMs: 60_000 }), 'PX', 60_000)
    const b = await replica()
    const calls = reportCalls()
    const res = await get(b)
    expect(res.headers['x-cache']).toBe('MISS')
    expect(reportCalls()).toBe(calls + 1)
  })

  it('never serves an entry fresher than the TTL policy could make it', async () => {
    const key = await reportKey()
    const identity = Buffer.from('{"data":[{"forged":true}]}')
    // Ten years of freshness, and no advertiser, so that no purge by advertiser finds it.
    const tenYears = 315_360_000_000
    await client.set(key, sealedEntry(key, { gzip: gzipSync(identity), identityBytes: identity.length }, { freshMs: tenYears, errorMs: tenYears }, []), 'PX', 3_600_000)
    const b = await replica()
    const res = await get(b)
    const maxAge = Number(/max-age=(\d+)/.exec(String(res.headers['cache-control']))?.[1])
    expect(maxAge).toBeLessThanOrEqual(TTL_S)
    expect(b.reports.freshInMemory(key, Date.now() + (TTL_S + 1) * 1000)).toBeNull()
  })
})
