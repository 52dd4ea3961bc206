import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, teamsYamlWith, testConfig, TEST_GATEWAY_SECRET, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { CLOSED_PORT, redisAvailability } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { resolveRef, type Json } from '../helpers/openapi-doc.js'

// With Redis down, the gateway says what happened in its own words: an answer names
// Redis's unavailability and what was (not) done, never the driver's text (ioredis's
// "Stream isn't writeable and enableOfflineQueue options is false", an address). A
// failure it handles (contract, "Logs") is a warn line with the error's code and message
// and no stack, in the background as on a read.

const { available } = redisAvailability()
const ADMIN_TOKEN = 'redis-down-words-admin-token-0123456789'
const DRIVER_WORDS = /Stream isn't writeable|enableOfflineQueue|ECONNREFUSED|Connection is closed|ioredis|127\.0\.0\.1/
// The driver's words for a command it did not send (no offline queue) or lost in flight:
// they name its options, which no setting of the gateway reaches.
const DRIVER_OPTIONS = /Stream isn't writeable|enableOfflineQueue|maxRetriesPerRequest/i
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'

/** The GW_* codes the admin document gives an operation's answer of this status. */
function documentedCodes(doc: Json, method: string, path: string, status: number): string[] {
  const paths = doc.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>
  const response = resolveRef(doc, paths[path]?.[method.toLowerCase()]?.responses[String(status)])
  return JSON.stringify(response).match(/GW_[A-Z_]+/g) ?? []
}

describe.skipIf(!available)('Redis down', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()
  const { server } = useRedis()

  const admin = (gw: TestGateway, method: 'GET' | 'PUT' | 'DELETE', url: string, payload?: object) =>
    gw.admin.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ...(payload ? { payload } : {}) })

  it('is answered and logged in the gateway\'s words: no driver text in an answer, no stack on a warn line', async () => {
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, REDIS_URL: server.url, GATEWAY_SECRET: TEST_GATEWAY_SECRET }
    const gw = await gateways.build(testConfig(env, teamsYamlWith({ jobs: { perReplica: 1, poll: '100ms', lease: '1s' } })))
    const doc = (await admin(gw, 'GET', '/admin/openapi.json')).json<Json>()
    await server.stop()
    try {
      await waitFor('Redis seen down', async () => (await admin(gw, 'DELETE', '/admin/cache?dryRun=1')).statusCode === 503, testTimeLeft(), 50)
      const calls: [method: 'GET' | 'PUT' | 'DELETE', url: string, payload?: object][] = [
        ['DELETE', '/admin/cache?dryRun=1'],
        ['DELETE', '/admin/cache'],
        ['DELETE', '/admin/cache?advertiserId=101'],
        ['PUT', '/admin/log-level', { level: 'info' }],
        ['GET', '/admin/usage'],
        ['GET', '/admin/jobs'],
      ]
      for (const [method, url, payload] of calls) {
        const res = await admin(gw, method, url, payload)
        const body = res.json<{ code: string; message: string }>()
        expect([res.statusCode, body.code], res.body).toEqual([503, expect.stringMatching(/^GW_(REDIS|JOBS)_UNAVAILABLE$/)])
        // The admin document names the code under the status the call answers it with.
        expect(documentedCodes(doc, method, url.split('?')[0]!, res.statusCode), `${method} ${url}`).toContain(body.code)
        expect(body.message).not.toMatch(DRIVER_WORDS)
        if (body.code === 'GW_REDIS_UNAVAILABLE') expect(body.message).toMatch(/Redis is unavailable/)
      }

      // A read preferring a job is answered now, as if it preferred nothing.
      const read = await gw.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${YEAR}`, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
      expect(read.statusCode).toBe(200)
      const kept = gw.logs.records().find((r) => r.msg === 'a report job could not be kept: the read is answered now')
      expect(kept).toMatchObject({ level: 40, code: 'GW_JOBS_UNAVAILABLE', reason: expect.any(String) })
      // The runner's look for jobs failed too, in the background.
      await waitFor('the runner\'s failure logged', () => gw.logs.records().some((r) => r.msg === 'looking for report jobs to run failed'))
      const runner = gw.logs.records().find((r) => r.msg === 'looking for report jobs to run failed')
      expect(runner).toMatchObject({ level: 40, code: 'GW_JOBS_UNAVAILABLE', reason: expect.any(String) })
      const warned = gw.logs.records().filter((r) => (r.level as number) < 50)
      expect(warned.filter((r) => JSON.stringify(r).includes('"stack"')).map((r) => r.msg)).toEqual([])
    } finally {
      await server.restart()
    }
  }, 40_000)

  it('started with no Redis running (a user\'s first npm start): every warn line says why in the gateway\'s words, never the driver\'s options', async () => {
    const token = sandbox.issueToken()
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token, ADMIN_TOKEN, REDIS_URL: `redis://127.0.0.1:${CLOSED_PORT}`, GATEWAY_SECRET: TEST_GATEWAY_SECRET }
    const gw = await gateways.build(testConfig(env, teamsYamlWith({ jobs: { perReplica: 1, poll: '100ms', lease: '1s' } })))
    const lines = () => gw.logs.records().filter((r) => (r.level as number) === 40)
    // A message to the other replicas (a team suspended for a secret) is told undelivered in words too.
    const hit = await gw.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${YEAR}`, headers: { 'x-api-key': KEYS.growth, 'x-request-id': `id-${token}` } })
    expect(hit.statusCode).toBe(400)
    await waitFor('the suspension\'s message logged undelivered', () => lines().some((r) => r.msg === 'a team suspension could not be sent to the other replicas'))
    expect(lines().find((r) => r.msg === 'a team suspension could not be sent to the other replicas')).toMatchObject({ err: { message: 'not connected to Redis (reconnecting)' } })
    for (const msg of ['looking for report jobs to run failed', 'the shared purge record could not be read: report entries stored before now are filled again']) {
      await waitFor(`"${msg}" logged`, () => lines().some((r) => r.msg === msg))
    }
    // A read preferring a job, answered now: its line names what kept the job, in words too.
    const read = await gw.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${YEAR}`, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(read.statusCode).toBe(200)
    expect(lines().filter((r) => DRIVER_OPTIONS.test(JSON.stringify(r))).map((r) => JSON.stringify(r))).toEqual([])
    expect(lines().find((r) => r.msg === 'looking for report jobs to run failed')).toMatchObject({ reason: 'not connected to Redis (reconnecting)' })
  }, 40_000)
})
