import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useCleanups, useSandbox } from '../helpers/fixtures.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { opensslAvailable, privateCa } from '../helpers/private-ca.js'
import { redisAvailability, type RedisTls } from '../helpers/start-redis.js'
import { startRedisCluster, startRedisSentinel, type RedisTopology } from '../helpers/start-redis-topology.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'

// A Redis Cluster, and a master behind a Sentinel, over TLS as an operator runs them:
// the certificates (a private CA's, trusted through NODE_EXTRA_CA_CERTS) name DNS names
// only (a headless Service's), while the nodes are announced by address (CLUSTER SLOTS,
// SENTINEL GET-MASTER-ADDR-BY-NAME: 127.0.0.1). Node checks a certificate against the
// name it connects to, so each node reached by its address is refused, until
// redis.tlsServername names what the certificates hold. Gateway processes (dist/main.js).

const what = 'the Redis Cluster and Sentinel over TLS tests'
const available = redisAvailability(what).available && opensslAvailable(what)
const PASSWORD = 'tls-topology-password-0123456789'
const WEEK = 'advertiserId=101&dateFrom=2025-03-03&dateTo=2025-03-09'
/** The certificates' names: neither is the address the nodes are announced by. */
const NAMES = ['DNS:redis.test', 'DNS:localhost']

/** A topology over TLS from a private CA, started once for the describe block it is called in. */
function useTopologyOverTls(startTopology: (tls: RedisTls) => Promise<RedisTopology>): { ca: () => string; topology: () => RedisTopology } {
  let dir = ''
  let ca = ''
  let topology: RedisTopology | undefined
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rgw-redis-tls-topology-'))
    const files = privateCa(dir, NAMES)
    ca = files.ca
    topology = await startTopology({ files, servername: 'localhost', password: PASSWORD })
  }, 60_000)
  afterAll(async () => {
    await topology?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })
  return { ca: () => ca, topology: () => topology as RedisTopology }
}

const readiness = async (adminUrl: string) => (await (await fetch(`${adminUrl}/readyz`)).json()) as { redis: string; degraded: string[] }
const readWeek = (url: string) => fetch(`${url}${REPORT_PATH}?${WEEK}`, { headers: { 'x-api-key': KEYS.all } })

/** Redis is ok for `gw`, and the report a read fills is stored there; no password printed. */
async function expectStoredOverTls(gw: GatewayProcess, topology: RedisTopology): Promise<void> {
  await waitFor('redis ok', async () => (await readiness(gw.adminUrl)).redis === 'ok', testTimeLeft(), 50)
  const read = await readWeek(gw.url)
  expect([read.status, read.headers.get('x-cache')]).toEqual([200, 'MISS'])
  await waitFor('the report written to Redis over TLS', async () => (await topology.keys('rgw:report:*')).length === 1, testTimeLeft(), 50)
  expect(gw.output()).not.toContain(PASSWORD)
}

describe.skipIf(!redisAvailability('the redis.tlsServername start check').available)('redis.tlsServername without rediss:// (gateway process)', () => {
  const sandbox = useSandbox()

  it('stops the start with exit 78 and one line naming the key, never the URL', async () => {
    const start = spawnGateway({
      env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:6379` },
      yaml: `${TEAMS_YAML}\nredis:\n  tlsServername: redis.test\n`,
    })
    const err = (await start.then(
      (gw) => gw.close().then(() => new Error('the gateway started')),
      (refused: unknown) => refused,
    )) as Error
    expect(err.message).toMatch(/^gateway exited \(78\) at start:\nreport-gateway: invalid configuration: redis\.tlsServername: set, but Redis is not reached over TLS: /)
    expect(err.message).not.toContain(PASSWORD)
  }, startsTimeout(1))
})

const topologies: [string, (tls: RedisTls) => Promise<RedisTopology>][] = [
  ['a 3-master Redis Cluster', (tls) => startRedisCluster(3, tls)],
  ['a master and a replica behind Redis Sentinel', (tls) => startRedisSentinel('mymaster', tls)],
]

describe.skipIf(!available).each(topologies)('%s over TLS, its nodes announced by address, its certificates naming DNS names only', (_name, startTopology) => {
  const sandbox = useSandbox()
  const cleanups = useCleanups()
  const { ca, topology } = useTopologyOverTls(startTopology)

  // Credentials and the scheme come from REDIS_URL; its host is not used with sentinels or cluster.
  const start = (redisLines: string[]) =>
    spawnGateway({
      env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: `rediss://:${PASSWORD}@localhost:6379`, NODE_EXTRA_CA_CERTS: ca() },
      yaml: `${TEAMS_YAML}\nredis:\n${[...topology().configLines, ...redisLines].join('\n')}\n`,
    })

  it('without redis.tlsServername: every node reached by its address is refused, so redis is down; it serves from memory and never prints the password', async () => {
    const gw = await start([])
    cleanups.push(() => gw.close())
    await waitFor('redis down', async () => (await readiness(gw.adminUrl)).redis === 'down', testTimeLeft(), 50)
    expect((await readiness(gw.adminUrl)).degraded).toContain('redis')
    expect((await readWeek(gw.url)).status).toBe(200)
    await waitFor('a log line about Redis', () => /redis unavailable/.test(gw.output()), testTimeLeft(), 50)
    expect(gw.output()).not.toContain(PASSWORD)
    expect(await topology().keys('rgw:report:*')).toEqual([])
  }, startsTimeout(1))

  it('with redis.tlsServername naming what the certificates hold: redis ok, and the report it fills is stored there', async () => {
    const gw = await start(['  tlsServername: redis.test'])
    cleanups.push(() => gw.close())
    await expectStoredOverTls(gw, topology())
  }, startsTimeout(1))
})

// Sentinels that themselves listen on TLS only and ask for a password (`requirepass` in
// sentinel.conf: Bitnami's chart with `auth.sentinel` and TLS on), in front of a TLS
// master: reached without TLS or without the password, no Sentinel answers, so the
// gateway runs without Redis (never ending for a Sentinel's refused handshake); with
// redis.sentinelTls and REDIS_SENTINEL_PASSWORD, the master is found and used.
describe.skipIf(!available)('Sentinels on TLS only, with a password, in front of a TLS master', () => {
  const sandbox = useSandbox()
  const cleanups = useCleanups()
  const { ca, topology } = useTopologyOverTls((tls) => startRedisSentinel('mymaster', tls, { sentinelTls: true }))

  const start = (redisLines: string[], env: Record<string, string> = {}) =>
    spawnGateway({
      env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: `rediss://:${PASSWORD}@localhost:6379`, NODE_EXTRA_CA_CERTS: ca(), ...env },
      yaml: `${TEAMS_YAML}\nredis:\n${[...topology().configLines, '  tlsServername: redis.test', ...redisLines].join('\n')}\n`,
    })

  // A refused login at the Sentinels is named so, with the setting that gives the password.
  it.each([
    ['without redis.sentinelTls', [], { REDIS_SENTINEL_PASSWORD: PASSWORD }, null],
    ['without REDIS_SENTINEL_PASSWORD', ['  sentinelTls: true'], {}, 'answer but ask a password (NOAUTH): set REDIS_SENTINEL_PASSWORD'],
    ['with a wrong REDIS_SENTINEL_PASSWORD', ['  sentinelTls: true'], { REDIS_SENTINEL_PASSWORD: 'not-the-sentinel-password-0123' }, 'answer but refuse the password REDIS_SENTINEL_PASSWORD gives (WRONGPASS)'],
  ])('%s: redis is down; it serves from memory, keeps running and never prints a password', async (_name, lines, env, cause) => {
    const gw = await start(lines, env)
    cleanups.push(() => gw.close())
    await waitFor('redis down', async () => (await readiness(gw.adminUrl)).redis === 'down', testTimeLeft(), 50)
    expect((await readWeek(gw.url)).status).toBe(200)
    await waitFor('a log line about Redis', () => /redis unavailable/.test(gw.output()), testTimeLeft(), 50)
    if (cause !== null) expect(gw.output().split('\n').find((l) => l.includes('redis unavailable'))).toContain(cause)
    // Still running: a refused handshake's later errors end no process.
    expect((await readiness(gw.adminUrl)).redis).toBe('down')
    expect(gw.output()).not.toContain(PASSWORD)
    expect(gw.output()).not.toContain('not-the-sentinel-password-0123')
    expect(await topology().keys('rgw:report:*')).toEqual([])
  }, startsTimeout(1))

  it('with redis.sentinelTls and REDIS_SENTINEL_PASSWORD: redis ok, and the report it fills is stored on the master', async () => {
    const gw = await start(['  sentinelTls: true'], { REDIS_SENTINEL_PASSWORD: PASSWORD })
    cleanups.push(() => gw.close())
    await expectStoredOverTls(gw, topology())
  }, startsTimeout(1))
})
