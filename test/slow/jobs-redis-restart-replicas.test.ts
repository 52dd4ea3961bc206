import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ChildProcess } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useCleanups, useSandbox } from '../helpers/fixtures.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { launchRedis, onFreePorts, redisAvailability, releasePort, stopRedis } from '../helpers/start-redis.js'
import { PROCESS_START_MS, startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'
import { useReceivers } from '../helpers/webhook-receiver.js'

// Two gateway processes (dist/main.js) running report jobs on one real redis-server, the
// sandbox and a webhook receiver; Redis restarts WITH its data while the jobs' calls are at
// the platform: stopped (SIGTERM, its RDB written at the shutdown) or killed (SIGKILL, its
// append-only file fsynced at every write), and started again on the same port from that
// data. What docs/jobs.md promises across a Redis restart: every job ends once, done, its
// result the one run's, nothing lost; no job runs twice (no takeover: each run renews its
// lease once Redis answers again, within the lease); each job pushed once. And a push the
// receiver took while Redis was down, its attempt unrecorded: made again once its claim ran
// out, with the same webhook-id (at least once, as documented), recorded delivered once.

const GATEWAY_SECRET = 'jobs-redis-restart-replicas-secret-0123456789'
const SECRET = `whsec_${randomBytes(24).toString('base64')}`
const JOBS = 4
// The jobs' lease: a run renews it every third (30 s). Redis, started again once each
// replica's renewal failed, then has the two thirds left (60 s, a process start's time:
// PROCESS_START_MS) to answer before a lease runs out and another replica takes a job over.
// The jobs' calls are held at the platform all that time: their deadline (platform.timeout,
// 30 s by default) is past the test's end.
const LEASE_MS = 90_000
const PLATFORM_TIMEOUT_MS = 240_000
// Two gateways and Redis started again, and a third of the lease for a renewal to fail.
const RESTART_TEST_MS = startsTimeout(3) + LEASE_MS / 3
// A year of advertiser 101, one report per job: the jobs share no fill.
const report = (i: number) => `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2025-01-0${i + 1}&dateTo=2025-12-31`

const redisCheck = redisAvailability('the report jobs across a Redis restart test')

interface Status {
  state: string
  runs?: number
  startedAt: string | null
  error: unknown
}

/** A redis-server on a port of its own, restarted on it from the data in its directory. */
async function persistentRedis(persistence: string[]): Promise<{ url: string; stop(hard: boolean): Promise<void>; start(): Promise<void>; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'rgw-redis-restart-'))
  let child: ChildProcess | null = null
  const stop = async (hard: boolean) => {
    const c = child
    child = null
    if (c) await stopRedis(c, hard)
  }
  // A port no other server is handed while this one is down (reservedPorts).
  return onFreePorts(1, async ([port]) => {
    const start = async () => {
      child = await launchRedis(port as number, [...persistence, '--dir', dir])
    }
    await start()
    return { url: `redis://127.0.0.1:${port}`, stop, start, close: async () => (await stop(true), rmSync(dir, { recursive: true, force: true }), releasePort(port as number)) }
  })
}

describe.skipIf(!redisCheck.available)('two replicas running report jobs while Redis restarts with its data', () => {
  const sandbox = useSandbox()
  const cleanups = useCleanups()
  const receiver = useReceivers()

  const get = (gw: GatewayProcess, path: string, headers: Record<string, string> = {}) => fetch(`${gw.url}${path}`, { headers: { 'x-api-key': KEYS.all, ...headers } })
  const reportCalls = () => sandbox.requests.filter((r) => r.path === REPORT_PATH).length
  const lines = (gw: GatewayProcess, msg: string) => gw.output().split('\n').filter((l) => l.includes(`"msg":"${msg}`))
  const status = async (gw: GatewayProcess, location: string): Promise<Status> => (await (await get(gw, location)).json()) as Status

  it.each([
    { how: 'stopped, its RDB written at the shutdown', persistence: ['--save', '3600 1', '--appendonly', 'no'], hard: false },
    { how: 'killed, its append-only file fsynced at every write', persistence: ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always'], hard: true },
  ])('$how: every job ends done once, its one run\'s result, one platform call each, pushed once each, none taken over', async ({ persistence, hard }) => {
    expect((LEASE_MS * 2) / 3).toBeGreaterThanOrEqual(PROCESS_START_MS)
    expect(PLATFORM_TIMEOUT_MS).toBeGreaterThan(RESTART_TEST_MS)
    const redis = await persistentRedis(persistence)
    cleanups.push(() => redis.close())
    const r = await receiver(0)
    r.answer(204)
    const team = TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${r.url}", secret: "${SECRET}" }\n`)
    const yaml = `${team}jobs:\n  webhookHosts: [localhost]\n  lease: ${LEASE_MS}ms\n  poll: 200ms\n  perReplica: 2\ncache:\n  lockTtl: 2s\nredis:\n  breakerCooldown: 200ms\nplatform:\n  timeout: ${PLATFORM_TIMEOUT_MS}ms\nserver:\n  connectionTimeout: ${PLATFORM_TIMEOUT_MS + 60_000}ms\n`
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, GATEWAY_SECRET }
    const replicas = [await spawnGateway({ env, yaml }), await spawnGateway({ env, yaml })]
    cleanups.push(...replicas.map((gw) => () => gw.close()), () => sandbox.releaseHeld())

    // Every job's call held at the platform: two jobs asked of each replica, each replica running two.
    sandbox.clearRequests()
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: JOBS })
    const locations: string[] = []
    for (let i = 0; i < JOBS; i++) {
      const asked = await get(replicas[i % 2]!, report(i), { prefer: 'respond-async' })
      expect(asked.status).toBe(202)
      await asked.arrayBuffer()
      locations.push(asked.headers.get('location') as string)
    }
    await waitFor('every job\'s call at the platform', () => sandbox.concurrency().held === JOBS)
    const started = await Promise.all(locations.map((l) => status(replicas[0]!, l)))
    expect(started.map((s) => s.state)).toEqual(locations.map(() => 'running'))

    await redis.stop(hard)
    // Redis is out while the calls are at the platform: each replica's runs fail to renew.
    await waitFor('both replicas met Redis down', () => replicas.every((gw) => lines(gw, "renewing a report job's lease failed").length > 0))
    await redis.start()
    sandbox.releaseHeld()

    for (const location of locations) await waitFor(`job ${location} done`, async () => (await status(replicas[1]!, location)).state === 'done', testTimeLeft(), 50)
    await waitFor('a push of every job', () => new Set(r.hits.map((h) => h.id)).size === JOBS, testTimeLeft(), 50)
    const ended = await Promise.all(locations.map((l) => status(replicas[0]!, l)))
    // The run that started each job ended it: started once, never again.
    expect(ended.map((s) => s.startedAt)).toEqual(started.map((s) => s.startedAt))
    for (const location of locations) {
      const result = await get(replicas[0]!, `${location}/result`)
      expect(result.status).toBe(200)
      await result.arrayBuffer()
    }
    expect({
      calls: reportCalls(),
      pushes: r.hits.length,
      takenOver: replicas.flatMap((gw) => lines(gw, 'report job taken over')).length,
      lost: replicas.flatMap((gw) => lines(gw, 'report job gone from Redis while it ran')).length,
    }).toEqual({ calls: JOBS, pushes: JOBS, takenOver: 0, lost: 0 })
  }, RESTART_TEST_MS)

  it('killed with its AOF while a push is at the receiver, answered 2xx before Redis is back: the push is made again with the same webhook-id (at least once), the delivery recorded delivered once', async () => {
    const redis = await persistentRedis(['--save', '', '--appendonly', 'yes', '--appendfsync', 'always'])
    cleanups.push(() => redis.close())
    const r = await receiver(0)
    const team = TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${r.url}", secret: "${SECRET}" }\n`)
    const yaml = `${team}jobs:\n  webhookHosts: [localhost]\n  lease: 2s\n  poll: 200ms\n  webhookTimeout: 1s\ncache:\n  lockTtl: 2s\nredis:\n  breakerCooldown: 200ms\n`
    // At info: the delivery's end is logged there.
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, GATEWAY_SECRET, LOG_LEVEL: 'info' }
    const replicas = [await spawnGateway({ env, yaml }), await spawnGateway({ env, yaml })]
    cleanups.push(...replicas.map((gw) => () => gw.close()))
    sandbox.clearRequests()
    r.hold()
    const asked = await get(replicas[0]!, report(0), { prefer: 'respond-async' })
    expect(asked.status).toBe(202)
    await asked.arrayBuffer()
    await waitFor('the push at the receiver', () => r.inFlight() === 1, testTimeLeft(), 20)
    await redis.stop(true)
    r.answer(204)
    await waitFor('the attempt\'s record met Redis down', () => replicas.some((gw) => lines(gw, 'recording a webhook attempt failed').length > 0), testTimeLeft(), 20)
    await redis.start()
    await waitFor('the push made again once its claim ran out', () => r.hits.length >= 2, testTimeLeft(), 50)
    await waitFor('the delivery recorded delivered', () => replicas.some((gw) => lines(gw, "report job pushed to its team's webhook").length > 0), testTimeLeft(), 50)
    expect({ ids: new Set(r.hits.map((h) => h.id)).size, calls: reportCalls(), delivered: replicas.flatMap((gw) => lines(gw, "report job pushed to its team's webhook")).length }).toEqual({ ids: 1, calls: 1, delivered: 1 })
  }, startsTimeout(2))
})
