import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createGatewayClient, GatewayError } from '../../packages/client/dist/index.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KEYS, listen, REPORT_PATH, TEAMS_YAML, teamsYamlWith, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'

// The typed client's report jobs (packages/client/src/jobs.ts) against a gateway in front
// of the sandbox: a job asked, waited for with the server's `wait` and fetched as a report;
// a report a copy answers at once; a queued job cancelled; a failed job's GW_* code thrown.

const YEAR = { advertiserId: 101, dateFrom: '2025-01-01', dateTo: '2025-12-31', byDate: true }

// This worktree's package, built (`npm test` builds it first; a lone run of this file may not have).
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
beforeAll(() => {
  if (!existsSync(`${ROOT}packages/client/dist/jobs.js`)) execFileSync('npm', ['run', 'build', '-w', '@report-gateway/client'], { cwd: ROOT, stdio: 'ignore', timeout: 120_000 })
}, 130_000)

describe('the client\'s report jobs', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()
  afterEach(() => sandbox.releaseHeld())

  // A platform's 500 fails a job at once (jobs.retries: 0): the client's failed job is what these tests read.
  async function start(yaml = teamsYamlWith({ jobs: { perReplica: 1, retries: 0 } })): Promise<TestGateway & { url: string }> {
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, yaml)))
    sandbox.clearRequests()
    return gw
  }

  it('asks a report as a job and waits for its report; the same report again is answered at once', async () => {
    const gw = await start()
    const client = createGatewayClient({ baseUrl: gw.url, apiKey: KEYS.all })
    const job = await client.reportJob('campaigns', YEAR)
    expect(job.id).toMatch(/^[\w-]+$/)
    expect(['queued', 'running']).toContain(job.last?.state)
    // What the team had spent when it asked: the 202's platform-usage, its job's call still to come.
    expect(job.usage).toMatchObject({ fill: 0, day: 0 })
    const answer = await job.result()
    expect(answer.rows.length).toBeGreaterThan(0)
    expect(answer.etag).toMatch(/^"/)
    expect((await job.status()).state).toBe('done')
    const again = await client.reportJob('campaigns', YEAR)
    expect(again.id).toBeNull()
    const copy = await again.result()
    expect(copy.cache).toBe('HIT')
    // Answered at once: the answer's own usage, the day now holding the job's call.
    expect(again.usage).toEqual(copy.usage)
    expect(again.usage?.day).toBeGreaterThan(0)
    // No job to ask the status of: refused without a call, as its README's table says.
    const none = await again.status({ wait: 30 }).catch((err: unknown) => err)
    expect(none).toBeInstanceOf(GatewayError)
    expect((none as GatewayError).code).toBe('CLIENT_REFUSED')
    expect(sandbox.countRequests((r) => r.path === REPORT_PATH)).toBe(1)
  })

  it('cancels a queued job; a failed job\'s result throws its GW_* code', async () => {
    const gw = await start()
    const client = createGatewayClient({ baseUrl: gw.url, apiKey: KEYS.all })
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const running = await client.reportJob('campaigns', YEAR)
    await waitFor('the first job at the platform', () => sandbox.countRequests((r) => r.path === REPORT_PATH) === 1)
    const queued = await client.reportJob('campaigns', { ...YEAR, advertiserId: 102 })
    expect((await queued.status()).state).toBe('queued')
    await queued.cancel()
    const gone = await queued.status().catch((err: unknown) => err)
    expect(gone).toBeInstanceOf(GatewayError)
    expect((gone as GatewayError).code).toBe('GW_NOT_FOUND')
    const refused = await running.cancel().catch((err: unknown) => err)
    expect((refused as GatewayError).code).toBe('GW_JOB_RUNNING')

    sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 500, times: 10 })
    sandbox.releaseHeld()
    await running.result()
    const failing = await client.reportJob('campaigns', { ...YEAR, advertiserId: 103 })
    const failed = await failing.result().catch((err: unknown) => err)
    expect(failed).toBeInstanceOf(GatewayError)
    expect((failed as GatewayError).code).toBe('GW_UPSTREAM')
    expect((await failing.status()).state).toBe('failed')
  })

  it('throws a failed job as the gateway answers its result: its status, request id and retry-after, as a synchronous read\'s failure', async () => {
    // A team whose day of platform time is spent by its first job: the next, queued behind it, fails 429 GW_PLATFORM_TIME_SPENT.
    const BOUNDED = 'rgw_test_client_jobs_bounded_0000000000000000'
    const gw = await start(`${TEAMS_YAML.trimEnd()}\n  bounded:\n    keys: ["${hashApiKey(BOUNDED)}"]\n    advertisers: ["*"]\n    platformSecondsPerDay: 0.001\njobs:\n  perReplica: 1\n  retries: 0\n`)
    const client = createGatewayClient({ baseUrl: gw.url, apiKey: BOUNDED })
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const first = await client.reportJob('campaigns', YEAR)
    await waitFor('the first job at the platform', () => sandbox.countRequests((r) => r.path === REPORT_PATH) === 1)
    const spent = await client.reportJob('campaigns', { ...YEAR, advertiserId: 102 })
    sandbox.releaseHeld()
    await first.result()
    const failed = (await spent.result().catch((err: unknown) => err)) as GatewayError
    expect(failed).toBeInstanceOf(GatewayError)
    expect([failed.code, failed.status]).toEqual(['GW_PLATFORM_TIME_SPENT', 429])
    expect(failed.retryAfterSeconds).toBeGreaterThan(0)
    expect(failed.requestId).toMatch(/\S/)

    sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 500, times: 10 })
    const upstream = (await (await createGatewayClient({ baseUrl: gw.url, apiKey: KEYS.all }).reportJob('campaigns', { ...YEAR, advertiserId: 103 })).result().catch((err: unknown) => err)) as GatewayError
    expect([upstream.code, upstream.status]).toEqual(['GW_UPSTREAM', 502])
  })

  it('throws a job the platform refused as a synchronous read of it throws: PLATFORM_ANSWER with the platform\'s status and body', async () => {
    const gw = await start()
    const client = createGatewayClient({ baseUrl: gw.url, apiKey: KEYS.all })
    const query = { ...YEAR, spentBased: 'EUR' } as typeof YEAR
    const sync = (await client.report('campaigns', query).catch((err: unknown) => err)) as GatewayError
    expect([sync.code, sync.status]).toEqual(['PLATFORM_ANSWER', 422])
    const job = await client.reportJob('campaigns', query)
    expect(job.id).not.toBeNull()
    const failed = (await job.result().catch((err: unknown) => err)) as GatewayError
    expect(failed).toBeInstanceOf(GatewayError)
    expect([failed.code, failed.status, failed.body]).toEqual(['PLATFORM_ANSWER', 422, sync.body])
    expect((await job.status()).error).toMatchObject({ code: 'GW_PLATFORM_ANSWER', statusCode: 422 })
  })

  it('says a report() given prefer: respond-async by its caller met a job asked, and where it is read, not "a 200"', async () => {
    const gw = await start()
    const client = createGatewayClient({ baseUrl: gw.url, apiKey: KEYS.all })
    const refused = (await client.report('campaigns', YEAR, { headers: { prefer: 'respond-async' } }).catch((err: unknown) => err)) as GatewayError
    expect([refused.code, refused.status]).toEqual(['CLIENT_NOT_A_REPORT', 202])
    const { id } = refused.body as { id: string }
    expect(refused.message).toBe(`GET /api/v1/report/campaigns/get: a 202: a report job was asked (prefer: respond-async), read at /api/v1/jobs/${id}; reportJob() asks one and reads it`)
  })

  it('waits for a job while the team\'s waits on the replica are held (GW_WAITS_FULL): its result() comes once the job ends, not the 429', async () => {
    const gw = await start(teamsYamlWith({ jobs: { perReplica: 1, maxWaitsPerTeam: 1 } }))
    const client = createGatewayClient({ baseUrl: gw.url, apiKey: KEYS.all, retries: 0 })
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const first = await client.reportJob('campaigns', YEAR)
    const second = await client.reportJob('campaigns', { ...YEAR, advertiserId: 102 })
    await waitFor('the first job at the platform', () => sandbox.countRequests((r) => r.path === REPORT_PATH) === 1)
    // The first result() holds the team's one wait; the second's waits are refused 429 meanwhile.
    const results = Promise.allSettled([first.result(), second.result()])
    await waitFor('a wait of the second refused', () => gw.logs.text().includes('"status":429'))
    sandbox.releaseHeld()
    const [one, two] = await results
    expect(one).toMatchObject({ status: 'fulfilled' })
    expect(two).toMatchObject({ status: 'fulfilled', value: { cache: 'HIT' } })
  })
})
