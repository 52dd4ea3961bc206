import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useCleanups, useSandbox } from '../helpers/fixtures.js'
import { spawnGateway } from '../helpers/gateway-process.js'
import { opensslAvailable, privateCa } from '../helpers/private-ca.js'
import { launchRedis, onFreePorts, redisAvailability, stopRedis } from '../helpers/start-redis.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'

// A standalone Redis over TLS (`rediss://`) whose certificate a private CA signs, as a
// cluster's cert-manager issues it: the gateway process (dist/main.js) trusts that CA
// through NODE_EXTRA_CA_CERTS (docs/operations/replicas.md), stores its reports there,
// and without the CA keeps serving from memory with Redis listed as down, the password
// never in its output. One redis-server, with a plain port beside its TLS port for the
// test's own look at what the gateway wrote.

const redisCheck = redisAvailability('the Redis over TLS test')
const available = redisCheck.available && opensslAvailable('the Redis over TLS test')
const PASSWORD = 'tls-redis-password-0123456789'
const WEEK = 'advertiserId=101&dateFrom=2025-03-03&dateTo=2025-03-09'

describe.skipIf(!available)('Redis over TLS, its certificate signed by a private CA (gateway processes)', () => {
  const sandbox = useSandbox()
  const cleanups = useCleanups()
  let dir = ''
  let ca = ''
  let server: ChildProcess | null = null
  let plainPort = 0
  let tlsPort = 0

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rgw-redis-tls-'))
    const files = privateCa(dir, ['DNS:localhost', 'IP:127.0.0.1'])
    ca = files.ca
    await onFreePorts(2, async ([plain, tls]) => {
      const tlsArgs = ['--tls-port', String(tls), '--tls-cert-file', files.cert, '--tls-key-file', files.key, '--tls-ca-cert-file', files.ca, '--tls-auth-clients', 'no']
      server = await launchRedis(plain as number, ['--save', '', '--appendonly', 'no', '--dir', dir, ...tlsArgs])
      ;[plainPort, tlsPort] = [plain as number, tls as number]
    })
    // Set once it answers (the launch waits for a PING without a password).
    const admin = new Redis({ port: plainPort, host: '127.0.0.1' })
    await admin.config('SET', 'requirepass', PASSWORD)
    admin.disconnect()
  }, 60_000)

  afterAll(async () => {
    if (server) await stopRedis(server)
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const start = (extra: Record<string, string>) =>
    spawnGateway({ env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: `rediss://:${PASSWORD}@localhost:${tlsPort}`, ...extra }, yaml: TEAMS_YAML })
  const readiness = async (adminUrl: string) => (await (await fetch(`${adminUrl}/readyz`)).json()) as { redis: string; degraded: string[] }

  it('trusts the CA named by NODE_EXTRA_CA_CERTS: redis ok, and the reports it fills are in that Redis', async () => {
    const gw = await start({ NODE_EXTRA_CA_CERTS: ca })
    cleanups.push(() => gw.close())
    await waitFor('redis ok', async () => (await readiness(gw.adminUrl)).redis === 'ok', testTimeLeft(), 50)
    const read = await fetch(`${gw.url}${REPORT_PATH}?${WEEK}`, { headers: { 'x-api-key': KEYS.all } })
    expect([read.status, read.headers.get('x-cache')]).toEqual([200, 'MISS'])
    const plain = new Redis({ port: plainPort, host: '127.0.0.1', password: PASSWORD, lazyConnect: true })
    cleanups.push(() => plain.quit().then(() => undefined))
    await plain.connect()
    await waitFor('the report written to Redis over TLS', async () => (await plain.keys('rgw:report:*')).length === 1, testTimeLeft(), 50)
  }, startsTimeout(1))

  it('without the CA: serves from memory, lists redis as down, and never prints the password', async () => {
    const gw = await start({})
    cleanups.push(() => gw.close())
    await waitFor('redis down', async () => (await readiness(gw.adminUrl)).redis === 'down', testTimeLeft(), 50)
    expect((await readiness(gw.adminUrl)).degraded).toContain('redis')
    const read = await fetch(`${gw.url}${REPORT_PATH}?${WEEK}`, { headers: { 'x-api-key': KEYS.all } })
    expect(read.status).toBe(200)
    await waitFor('a log line about Redis', () => /redis/i.test(gw.output()), testTimeLeft(), 50)
    expect(gw.output()).not.toContain(PASSWORD)
  }, startsTimeout(1))
})
