import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import type { JobStatus } from '../../src/jobs/job.js'
import type { FailureMode } from '../../src/sandbox/sandbox.js'
import { KEYS, listen, REPORT_PATH, sandboxLoginEnv, TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { fakeClock, wokenBy, type FakeClock } from '../helpers/clock.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { useReceivers } from '../helpers/webhook-receiver.js'

// What a report job does when the platform is down in the ways a caller cannot tell from a
// 5xx (a page answered 200, a login that gets no answer), and when its team is suspended,
// as the team sees it: the sandbox over real HTTP, the gateway's clock a fake one moved to
// each try's time (its waits stay real; a timer set for a time the test moves the clock
// past, a job's next try, runs then: `wokenBy`).

const ADMIN_TOKEN = 'job-outages-admin-token-0123456789abcd'
const SECRET = `whsec_${randomBytes(24).toString('base64')}`
const YAML = `${TEAMS_YAML}jobs:\n  retries: 3\n  webhookHosts: [localhost]\nplatform:\n  maintenanceInterval: 50ms\n`

type Gateway = TestGateway & { url: string }

const statusOf = async (gw: Gateway, id: string): Promise<JobStatus> => (await (await fetch(`${gw.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.all } })).json()) as JobStatus

async function ask(gw: Gateway, month: string): Promise<string> {
  const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-${month}-01&dateTo=2025-${month}-28`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
  expect(asked.status).toBe(202)
  return ((await asked.json()) as { id: string }).id
}

/** The job's status once it was given back for a retry or ended, whichever comes first. */
async function firstTurn(gw: Gateway, id: string): Promise<JobStatus> {
  await waitFor(`job ${id} given back or ended`, async () => {
    const s = await statusOf(gw, id)
    return s.retry !== null || s.state === 'done' || s.state === 'failed'
  })
  return statusOf(gw, id)
}

/** The job's status once it ended. */
async function endOf(gw: Gateway, id: string): Promise<JobStatus> {
  await waitFor(`job ${id} ended`, async () => ['done', 'failed'].includes((await statusOf(gw, id)).state))
  return statusOf(gw, id)
}

describe('report jobs through a platform that is down and a team suspended (the sandbox over real HTTP)', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()
  const receivers = useReceivers()
  const reportCalls = () => sandbox.countRequests((q) => q.path === REPORT_PATH)

  async function gateway(clock: FakeClock, env: Record<string, string> = { PLATFORM_TOKEN: sandbox.issueToken() }, yaml = YAML): Promise<Gateway> {
    return listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, ...env }, yaml), { clock: wokenBy(clock) }))
  }

  // What stands in front of the platform's app answers for it while the app is down: a
  // maintenance page, a CDN's HTML error page, an empty or cut-off body, each with a 200.
  for (const body of ['html', 'html-as-json', 'empty', 'truncated-json'] as const) {
    it(`a 200 with ${body} rather than a JSON report gives the job back, tried again 1 s later: done`, async () => {
      const clock = fakeClock()
      const gw = await gateway(clock)
      sandbox.setRouteFailure(REPORT_PATH, { kind: 'garbled', body })
      const id = await ask(gw, '04')
      expect(await firstTurn(gw, id)).toMatchObject({ state: 'queued', error: null, retry: { tries: 1, nextTryAt: new Date(clock.now() + 1000).toISOString(), lastError: { code: 'GW_UPSTREAM', statusCode: 502 } } })
      sandbox.clearRouteFailures()
      clock.advance(1000)
      expect(await endOf(gw, id)).toMatchObject({ state: 'done', error: null, retry: null })
    })
  }

  // Laravel's error body under a status some middleware set to 200: the app failed while
  // answering, as with a 500; a later try may not meet it.
  it('a 200 of Laravel\'s error body ({"message":"Server Error"}) gives the job back, tried again 1 s later: done, its result the report', async () => {
    const clock = fakeClock()
    const gw = await gateway(clock)
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 200, body: { message: 'Server Error' } })
    const id = await ask(gw, '08')
    expect(await firstTurn(gw, id)).toMatchObject({ state: 'queued', error: null, retry: { tries: 1, lastError: { code: 'GW_UPSTREAM', statusCode: 502 } } })
    sandbox.clearRouteFailures()
    clock.advance(1000)
    expect(await endOf(gw, id)).toMatchObject({ state: 'done', error: null, retry: null })
    const result = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })
    expect(result.status).toBe(200)
    expect(await result.json()).toHaveProperty('data')
  })

  it('a ?wait on a job waiting for its retry ends with its next try: a try that came and went is a change, not the same queued job', async () => {
    const clock = fakeClock()
    const gw = await gateway(clock)
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 500, times: 2 })
    const id = await ask(gw, '09')
    expect(await firstTurn(gw, id)).toMatchObject({ state: 'queued', retry: { tries: 1 } })
    const waiting = fetch(`${gw.url}/api/v1/jobs/${id}?wait=30`, { headers: { 'x-api-key': KEYS.all } })
    await waitFor('the wait held', async () => /^gateway_report_job_waits\{team="all"\} 1$/m.test((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body))
    // Its second try is due: it fails as the first did (500), and the job waits 2 s for its third.
    clock.advance(1000)
    const seen = (await (await waiting).json()) as JobStatus
    expect(seen.state === 'running' || seen.retry?.tries === 2, JSON.stringify(seen)).toBe(true)
  })

  it('a 200 that is JSON under another content type is the app\'s own answer: the job fails at once, one call', async () => {
    const clock = fakeClock()
    const gw = await gateway(clock)
    const json = '{"rows":[]}'
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'raw', answer: `HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: ${json.length}\r\n\r\n${json}` })
    const id = await ask(gw, '05')
    expect(await firstTurn(gw, id)).toMatchObject({ state: 'failed', error: { code: 'GW_UPSTREAM', statusCode: 502 }, retry: null })
    expect(reportCalls()).toBe(1)
  })

  // A replica that starts while the platform is down has no token: its login got no
  // answer or a 5xx. Its jobs wait for the platform as they do for a 5xx of a report.
  for (const [what, failure] of [
    ['answers 503', { kind: 'status', status: 503 }],
    ['resets the connection (no answer)', { kind: 'reset' }],
  ] as const satisfies readonly (readonly [string, FailureMode])[]) {
    it(`a password login that ${what} gives the job back (GW_PLATFORM_AUTH, why said); once a login gets a token, its next try is done`, async () => {
      sandbox.setRouteFailure('/oauth/token', failure)
      const clock = fakeClock()
      const gw = await gateway(clock, sandboxLoginEnv(sandbox))
      const id = await ask(gw, '06')
      const given = await firstTurn(gw, id)
      expect(given).toMatchObject({ state: 'queued', error: null, retry: { tries: 1, lastError: { code: 'GW_PLATFORM_AUTH', statusCode: 502 } } })
      expect(given.retry?.lastError.message).toContain('its password login got no answer or a 5xx from the platform')
      expect(reportCalls()).toBe(0)
      sandbox.clearRouteFailures()
      // The maintenance tick (50 ms) logs in again.
      await waitFor('a token from the login', () => gw.tokens.get('default').usable())
      clock.advance(1000)
      expect(await endOf(gw, id)).toMatchObject({ state: 'done', error: null, retry: null })
      expect(reportCalls()).toBe(1)
    })
  }

  // The login's throttle: the platform up and busy. The job waits out its retry-after (held
  // to platform.maxPause) as a try of its jobs.retries, and the next login waits for it too.
  // The job's next try and the next login are both due at the retry-after's end: the try
  // meets the login then made (the case after this one).
  it('a password login answered 429 with a retry-after gives the job back until then (GW_PLATFORM_AUTH, why said); then a login gets a token and its next try is done', async () => {
    sandbox.setRouteFailure('/oauth/token', { kind: 'status', status: 429, headers: { 'retry-after': '2' } })
    const clock = fakeClock()
    const gw = await gateway(clock, sandboxLoginEnv(sandbox))
    const id = await ask(gw, '09')
    const given = await firstTurn(gw, id)
    expect(given).toMatchObject({ state: 'queued', error: null, retry: { tries: 1, nextTryAt: new Date(clock.now() + 2000).toISOString(), lastError: { code: 'GW_PLATFORM_AUTH', statusCode: 502 } } })
    expect(given.retry?.lastError.message).toContain('its password login was answered 429 (the platform busy)')
    expect(reportCalls()).toBe(0)
    // A read meanwhile is told the same, and when to come back.
    const read = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-10-01&dateTo=2025-10-28`, { headers: { 'x-api-key': KEYS.all } })
    expect([read.status, read.headers.get('retry-after'), ((await read.json()) as { code: string }).code]).toEqual([502, '2', 'GW_PLATFORM_AUTH'])
    // The start's login alone: the maintenance tick sends none while the retry-after lasts.
    expect(sandbox.countRequests((q) => q.path === '/oauth/token')).toBe(1)
    sandbox.clearRouteFailures()
    clock.advance(2000)
    expect(await endOf(gw, id)).toMatchObject({ state: 'done', error: null, retry: null })
    expect(reportCalls()).toBe(1)
  })

  // The job's next try and the next login both come due at the login's retry-after end; the
  // maintenance tick is the default's, 60 s, and the job has one retry only: the try sends
  // the login then due (or waits for the one under way) rather than failing for want of
  // its token, and so spends no second try of jobs.retries on a retry-after it waited out.
  it('a job\'s try due at the end of a password login\'s 429 retry-after meets the login then made: done with jobs.retries 1', async () => {
    sandbox.setRouteFailure('/oauth/token', { kind: 'status', status: 429, headers: { 'retry-after': '2' } })
    const clock = fakeClock()
    const gw = await gateway(clock, sandboxLoginEnv(sandbox), `${TEAMS_YAML}jobs:\n  retries: 1\n  webhookHosts: [localhost]\n`)
    const id = await ask(gw, '11')
    expect(await firstTurn(gw, id)).toMatchObject({ state: 'queued', retry: { tries: 1, nextTryAt: new Date(clock.now() + 2000).toISOString() } })
    sandbox.clearRouteFailures()
    clock.advance(2000)
    expect(await endOf(gw, id)).toMatchObject({ state: 'done', error: null, retry: null })
    expect([sandbox.countRequests((q) => q.path === '/oauth/token'), reportCalls()]).toEqual([2, 1])
  })

  // The replica's memory for answers on their way to callers (platform.bufferTotalBytes)
  // full for a moment: held here by another answer of the team's (not cut off for its own
  // team's), as a caller reading slowly holds it. The job's try waits out the refusal's
  // retry-after as a try of its jobs.retries, and is done once the room is freed.
  it('a try whose answer finds platform.bufferTotalBytes full gives the job back until the refusal\'s retry-after (GW_ANSWER_BUDGET); once room is freed, its next try is done', async () => {
    const clock = fakeClock()
    const gw = await gateway(clock, { PLATFORM_TOKEN: sandbox.issueToken() }, `${YAML}  bufferTotalBytes: 64KiB\n  maxPause: 2s\n`)
    const { budget } = gw.answers
    const held = await gw.answers.receive(Readable.from([Buffer.alloc(budget.limit)]), String(budget.limit), { credential: 'default', team: 'all', path: REPORT_PATH, log: gw.log })
    const id = await ask(gw, '03')
    const given = await firstTurn(gw, id)
    // No reader freed any room yet: the refusal's retry-after is its longest, 60 s, held to platform.maxPause as every wait of a try given back.
    expect(given).toMatchObject({ state: 'queued', error: null, retry: { tries: 1, nextTryAt: new Date(clock.now() + 2000).toISOString(), lastError: { code: 'GW_ANSWER_BUDGET', statusCode: 503 } } })
    expect(given.retry?.lastError.message).toContain('retry in 60 s')
    expect(reportCalls()).toBe(1)
    held.release()
    expect(budget.used).toBe(0)
    clock.advance(2000)
    expect(await endOf(gw, id)).toMatchObject({ state: 'done', error: null, retry: null })
    expect(reportCalls()).toBe(2)
    expect(gw.logs.records().filter((r) => r.msg === "report job's answer found no room in platform.bufferTotalBytes: tried again later")).toMatchObject([{ job: id, code: 'GW_ANSWER_BUDGET', tries: 1 }])
  })

  it('a password login the platform refuses (a wrong password, 400 invalid_grant) fails the job at once: a later login is refused the same way', async () => {
    const clock = fakeClock()
    const gw = await gateway(clock, { ...sandboxLoginEnv(sandbox), PLATFORM_PASSWORD: 'not-the-password' })
    const id = await ask(gw, '07')
    const ended = await firstTurn(gw, id)
    expect(ended).toMatchObject({ state: 'failed', error: { code: 'GW_PLATFORM_AUTH', statusCode: 502 }, retry: null })
    expect(ended.error?.message).not.toContain('no answer or a 5xx')
    expect(reportCalls()).toBe(0)
  })

  // A team whose request held a secret of the gateway's is suspended: its requests are
  // refused, and its jobs asked before make no platform call nor push meanwhile.
  it('a suspended team\'s job given back for a retry fails GW_TEAM_SUSPENDED at its next try, no call; no push is made, a retry of an earlier one\'s neither', async () => {
    const r = await receivers(0)
    const team = TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${r.url}", secret: "${SECRET}" }\n`)
    const clock = fakeClock()
    const gw = await gateway(clock, { PLATFORM_TOKEN: sandbox.issueToken() }, `${team}jobs:\n  retries: 3\n  webhookHosts: [localhost]\n`)
    const admin = (method: string, url: string) => gw.admin.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }) as Promise<{ statusCode: number; json(): unknown }>
    const deliveries = async () => ((await admin('GET', '/admin/jobs')).json() as { deliveries: { job: string; state: string; lastError: string | null }[] }).deliveries
    // An earlier job, done: its push answered 503, due again 1 s later.
    const done = await ask(gw, '08')
    expect(await endOf(gw, done)).toMatchObject({ state: 'done' })
    await waitFor('the first push answered', () => r.hits.length === 1)
    // A job the platform's 503 gave back.
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 503 })
    const waiting = await ask(gw, '09')
    expect(await firstTurn(gw, waiting)).toMatchObject({ state: 'queued', retry: { tries: 1 } })
    const callsBefore = reportCalls()
    // The team sends the admin token in its request id: its 400, and the team suspended.
    const hit = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-10-01&dateTo=2025-10-02`, { headers: { 'x-api-key': KEYS.all, 'x-request-id': `id-${ADMIN_TOKEN}` } })
    expect(hit.status).toBe(400)
    expect((await fetch(`${gw.url}/api/v1/jobs/${waiting}`, { headers: { 'x-api-key': KEYS.all } })).status).toBe(403)
    sandbox.clearRouteFailures()
    r.answer(204)
    clock.advance(2000)
    await waitFor('both deliveries settled', async () => (await deliveries()).filter((d) => d.state !== 'pending').length === 2)
    const settled = await deliveries()
    expect(settled.map((d) => [d.job, d.state]).sort()).toEqual([[done, 'failed'], [waiting, 'failed']].sort())
    for (const d of settled) expect(d.lastError).toMatch(/^refused: the team is suspended \(GW_TEAM_SUSPENDED\) for \d+ s more/)
    expect(r.hits).toHaveLength(1)
    expect(reportCalls()).toBe(callsBefore)
    // Lifted: the team reads why its job failed.
    expect((await admin('DELETE', '/admin/suspensions/all')).statusCode).toBe(200)
    const failed = await statusOf(gw, waiting)
    expect(failed).toMatchObject({ state: 'failed', error: { code: 'GW_TEAM_SUSPENDED', statusCode: 403 }, retry: null })
    expect(failed.error?.message).toMatch(/^team all is suspended: .* \(try again at \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000Z\)$/)
    expect(gw.logs.text()).not.toContain(ADMIN_TOKEN)
  })
})
