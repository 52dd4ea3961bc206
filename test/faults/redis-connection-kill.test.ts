import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { KEYS, TEAMS_YAML } from '../helpers/build-gateway.js'
import { spawnGateway, steadyLoad, timedRequest, type GatewayProcess, type TimedResponse } from '../helpers/gateway-process.js'
import { redisAvailability, startRedis, type RedisServer } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// Every Redis connection killed (CLIENT KILL, what a Redis restart, a
// failover or an operator does to them) while traffic flows that uses every Redis path:
// cache reads and fills (lock, heartbeat, release), rate-limit syncs (MULTI), usage
// flushes (MULTI) and reads (pipeline), ownership lists, token rotation (EVAL, publish),
// purges, reloads and the subscriber. The process must keep serving, and nothing may
// reach it as an unhandled rejection or uncaught exception.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const KILLS = 50
const WORKERS = 6
const MAX_REQUESTS = 20_000
const ADMIN_TOKEN = 'connection-kill-admin-token-0123456789'
const GATEWAY_SECRET = 'connection-kill-gateway-secret-0123456789'
// The default platform.timeout (30 s): a read waits for Redis, a lock or a seat on a loaded
// machine too, and a deadline of a few seconds would answer 504 what the kills did not cause.
const YAML = `${TEAMS_YAML}
platform:
  maintenanceInterval: 100ms
redis:
  commandTimeout: 250ms
  breakerCooldown: 100ms
  rateLimitSync: 20ms
cache:
  ttl: { recent: 200ms, settled: 200ms }
  lockTtl: 150ms
usage:
  flush: 20ms
`

interface Call {
  name: string
  ok: number[]
  send: (gw: GatewayProcess, i: number) => Promise<TimedResponse>
}

const report = (key: string, advertiserId: number) => (gw: GatewayProcess, i: number) =>
  timedRequest(`${gw.url}/api/v1/report/campaigns/get?advertiserId=${advertiserId}&byDate=1&dateFrom=2026-04-01&dateTo=2026-04-${String(1 + (i % 12)).padStart(2, '0')}`, {
    headers: { 'x-api-key': key },
  })
const admin = (method: string, path: string, body?: object) => (gw: GatewayProcess) =>
  timedRequest(`${gw.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  })

describe.skipIf(!available)('every Redis connection killed 50 times under load', () => {
  let sandbox: Sandbox
  let redis: RedisServer
  let killer: Redis
  let gw: GatewayProcess
  let stderr = ''

  beforeAll(async () => {
    sandbox = await startSandbox()
    redis = await startRedis()
    killer = new Redis(redis.url, { maxRetriesPerRequest: 1 })
    killer.on('error', () => undefined)
    gw = await spawnGateway({
      env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, ADMIN_TOKEN, GATEWAY_SECRET, LOG_LEVEL: 'warn' },
      yaml: YAML,
    })
    gw.child.stderr?.on('data', (chunk: string) => (stderr += chunk))
  }, 120_000)

  afterAll(async () => {
    await gw?.close()
    killer?.disconnect()
    await redis?.close()
    await sandbox?.close()
  })

  // Admin calls that need Redis may answer 503 while it is out (a purge that could not
  // reach every replica says so); nothing may answer 500 or fail to answer.
  const calls: Call[] = [
    { name: 'report (all)', ok: [200], send: report(KEYS.all, 101) },
    { name: 'report (growth)', ok: [200], send: report(KEYS.growth, 102) },
    { name: 'report (rate-limited team)', ok: [200, 429], send: report(KEYS.limited, 101) },
    {
      name: 'proxied campaign list',
      ok: [200],
      send: (g) => timedRequest(`${g.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: '{"userId":101}' }),
    },
    { name: 'campaign of a limited team (ownership list)', ok: [200, 404], send: (g) => timedRequest(`${g.url}/api/v1/campaign/101001?userId=101`, { headers: { 'x-api-key': KEYS.growth } }) },
    { name: 'purge all', ok: [200, 503], send: admin('DELETE', '/admin/cache') },
    { name: 'purge one advertiser', ok: [200, 503], send: admin('DELETE', '/admin/cache?advertiserId=101') },
    { name: 'usage', ok: [200, 503], send: admin('GET', '/admin/usage') },
    { name: 'token change', ok: [200], send: () => admin('PUT', '/admin/token', { token: sandbox.issueToken() })(gw) },
    { name: 'reload', ok: [200], send: admin('POST', '/admin/reload') },
  ]

  /** Mostly report reads; every other call in turn. */
  function load(): { stop: () => Promise<{ call: Call; answer: TimedResponse }[]> } {
    return steadyLoad(WORKERS, MAX_REQUESTS, async (i) => {
      const call = (i % 3 === 0 ? calls[3 + ((i / 3) % (calls.length - 3))] : calls[i % 3]) as Call
      return { call, answer: await call.send(gw, i) }
    })
  }

  // The gateway logs to stdout: stderr is where Node reports an error that escaped.
  function stray(): string[] {
    return stderr.split('\n').filter((line) => line !== '')
  }

  function alive(pid: number): void {
    expect(gw.child.exitCode, `the gateway exited:\n${stray().join('\n')}`).toBeNull()
    expect(gw.child.signalCode).toBeNull()
    // Signal 0 only checks that the process is there.
    expect(process.kill(pid, 0)).toBe(true)
  }

  it('keeps serving in the same process, with no unhandled rejection', { timeout: 120_000 }, async () => {
    const pid = gw.child.pid as number
    const traffic = load()
    await sleep(300)
    for (let kill = 0; kill < KILLS; kill++) {
      // Commands' connections and the subscriber's, in turns and together.
      if (kill % 3 !== 1) await killer.client('KILL', 'TYPE', 'normal')
      if (kill % 3 !== 0) await killer.client('KILL', 'TYPE', 'pubsub')
      // Through the subscriber's reconnection (200 ms after a drop): its new connection
      // is cut as soon as it subscribes, at times while its SUBSCRIBE is unanswered.
      const until = Date.now() + 150 + (kill % 5) * 40
      while (Date.now() < until) await killer.client('KILL', 'TYPE', kill % 2 === 0 ? 'pubsub' : 'normal')
      alive(pid)
      const answer = await report(KEYS.all, 101)(gw, kill)
      expect(answer.status, `after kill ${kill + 1}: ${answer.body}`).toBe(200)
    }
    await sleep(500)
    const answers = await traffic.stop()
    alive(pid)
    expect((await report(KEYS.all, 101)(gw, 0)).status).toBe(200)
    // And it uses Redis again: the breaker closed, the subscriber subscribed anew.
    await waitFor('the breaker to close', async () => (await timedRequest(`${gw.adminUrl}/readyz`)).body.includes('"redis":"ok"'), testTimeLeft(), 50)
    await waitFor('the subscriber to subscribe again', async () => /\bsub=[1-9]/.test(String(await killer.call('CLIENT', 'LIST', 'TYPE', 'pubsub'))), testTimeLeft(), 50)

    expect(answers.length).toBeGreaterThan(KILLS * 4)
    const wrong = answers.filter(({ call, answer }) => !call.ok.includes(answer.status))
    expect(wrong.map(({ call, answer }) => `${call.name}: ${answer.status} ${answer.body.slice(0, 200)}`)).toEqual([])
    expect(stray()).toEqual([])
    expect(gw.output()).not.toMatch(/unhandled|uncaught/i)
  })
})
