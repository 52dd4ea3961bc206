import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, listen, REPORT_PATH, teamsYamlWith, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { fakeClock, onRealTimers, type FakeClock } from '../helpers/clock.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { rawHttp, rawRequest } from '../helpers/sandbox-gateway.js'

// Report jobs in demo mode (no Redis: jobs in the replica's memory), against the sandbox
// over real HTTP: a report read with `Prefer: respond-async` answered 202, its status,
// its result written as any report answer, its cancel, and the team's bounds. The
// gateway's time is a fake clock's (its timers real), moved on to pass expiries.

const ASYNC = { prefer: 'respond-async' }
/** What a call under /api/v1/jobs the job routes do not serve is told, after its method. */
const JOB_CALLS = 'is no job call at this path: a job\'s status is GET (or HEAD) /api/v1/jobs/{id}, its report GET /api/v1/jobs/{id}/result, its cancel while queued DELETE /api/v1/jobs/{id}; a job is asked by a report read with prefer: respond-async; nothing under /api/v1/jobs goes to the platform'
const ADMIN_TOKEN = 'report-jobs-admin-token-0123456789'
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'
// Ten seconds before a midnight of the platform's zone (cache.timeZone: UTC).
const BEFORE_MIDNIGHT = Date.parse('2026-03-10T23:59:50Z')
const finalityOf = (res: Response): [string | null, string | null] => [res.headers.get('report-settled-through'), res.headers.get('report-provisional-days')]

interface Status {
  id: string
  state: string
  placeInQueue: number | null
  endedAt: string | null
  tookSeconds: number | null
  expiresAt: string | null
  error: { code: string; message: string; statusCode?: number } | null
  retry: { tries: number; nextTryAt: string } | null
  result: string | null
  settledThrough: string | null
  provisionalDays: string | null
}

describe('report jobs (demo mode, no Redis)', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()
  // Before the gateways close (after-hooks run last-registered first): a held call would hold their close.
  afterEach(() => sandbox.releaseHeld())
  let clock: FakeClock

  async function start(jobs: Record<string, unknown> = {}, at = Date.now()): Promise<TestGateway & { url: string }> {
    clock = fakeClock(at)
    const yaml = teamsYamlWith({ jobs: { perReplica: 1, ...jobs } })
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }
    const gw = await listen(await gateways.build(testConfig(env, yaml), { clock: onRealTimers(clock.now) }))
    sandbox.clearRequests()
    return gw
  }

  const reportCalls = () => sandbox.countRequests((r) => r.path === REPORT_PATH)

  async function ask(gw: { url: string }, query = YEAR, key = KEYS.all): Promise<Response> {
    return fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': key, ...ASYNC } })
  }

  async function status(gw: { url: string }, id: string, key = KEYS.all, wait?: number): Promise<Status> {
    const res = await fetch(`${gw.url}/api/v1/jobs/${id}${wait === undefined ? '' : `?wait=${wait}`}`, { headers: { 'x-api-key': key } })
    expect(res.status).toBe(200)
    return (await res.json()) as Status
  }

  const done = (gw: { url: string }, id: string) => waitFor(`job ${id} done`, async () => (await status(gw, id)).state === 'done', testTimeLeft(), 20)

  it('answers a miss 202 with its job; the job runs once at the platform, its result is the report with its usual headers, 304 on a match', async () => {
    const gw = await start()
    const res = await ask(gw)
    expect(res.status).toBe(202)
    expect(res.headers.get('preference-applied')).toBe('respond-async')
    // A job's answers change as it runs and are its team's: no cache downstream keeps them, a shared one for another key least of all.
    expect([res.headers.get('cache-control'), res.headers.get('vary')]).toEqual(['private, no-store', 'accept-encoding, authorization, prefer, x-api-key'])
    const accepted = (await res.json()) as Status
    expect(res.headers.get('location')).toBe(`/api/v1/jobs/${accepted.id}`)
    expect(['queued', 'running']).toContain(accepted.state)
    const queued = await fetch(`${gw.url}/api/v1/jobs/${accepted.id}`, { headers: { 'x-api-key': KEYS.all } })
    expect([queued.headers.get('cache-control'), queued.headers.get('vary')]).toEqual(['private, no-store', 'authorization, x-api-key'])
    await done(gw, accepted.id)
    const finished = await status(gw, accepted.id)
    expect(finished).toMatchObject({ state: 'done', error: null, result: `/api/v1/jobs/${accepted.id}/result` })
    expect(finished.tookSeconds).toBeGreaterThanOrEqual(0)

    const result = await fetch(`${gw.url}/api/v1/jobs/${accepted.id}/result`, { headers: { 'x-api-key': KEYS.all } })
    expect(result.status).toBe(200)
    const etag = result.headers.get('etag') as string
    expect(etag).toMatch(/^"/)
    expect(result.headers.get('cache-status')).toContain('report-gateway')
    expect(result.headers.get('x-request-id')).toBeTruthy()
    // What it cost (its fill: the job's own call) and which of its days are settled, as every report answer says.
    expect(result.headers.get('platform-usage')).toMatch(new RegExp(`^fill=${(finished.tookSeconds ?? 0).toFixed(3)}, minute=`))
    expect(result.headers.get('report-settled-through')).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    expect(result.headers.get('report-provisional-days')).toBeTruthy()
    // Its status says the same of its figures.
    expect([finished.settledThrough, finished.provisionalDays]).toEqual([result.headers.get('report-settled-through'), result.headers.get('report-provisional-days')])
    const body = await result.text()
    const direct = await fetch(`${gw.url}${REPORT_PATH}?${YEAR}`, { headers: { 'x-api-key': KEYS.all } })
    expect(direct.headers.get('x-cache')).toBe('HIT')
    expect(await direct.text()).toBe(body)
    const again = await fetch(`${gw.url}/api/v1/jobs/${accepted.id}/result`, { headers: { 'x-api-key': KEYS.all, 'if-none-match': etag } })
    expect(again.status).toBe(304)
    expect(reportCalls()).toBe(1)
    // A job that ended is no more cancelled than a running one, and its refusal says what it is.
    const late = await fetch(`${gw.url}/api/v1/jobs/${accepted.id}`, { method: 'DELETE', headers: { 'x-api-key': KEYS.all } })
    expect(late.status).toBe(409)
    expect(await late.json()).toMatchObject({ code: 'GW_JOB_RUNNING', message: `job ${accepted.id} is done: only a queued job is cancelled` })

    // The cache answers it now: the usual answer, no job.
    const cached = await ask(gw)
    expect(cached.status).toBe(200)
    expect(cached.headers.get('preference-applied')).toBeNull()
    expect(cached.headers.get('x-cache')).toBe('HIT')
  })

  it('a job is its team\'s: another team\'s key reads it as none', async () => {
    const gw = await start()
    const { id } = (await (await ask(gw)).json()) as Status
    const other = await fetch(`${gw.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.growth } })
    expect(other.status).toBe(404)
    expect(((await other.json()) as { code: string }).code).toBe('GW_NOT_FOUND')
    expect((await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.growth } })).status).toBe(404)
    expect((await fetch(`${gw.url}/api/v1/jobs/${id}`, { method: 'DELETE', headers: { 'x-api-key': KEYS.growth } })).status).toBe(404)
    expect((await fetch(`${gw.url}/api/v1/jobs/${id}`)).status).toBe(401)
    // An id the gateway never makes: none, as an unknown one.
    expect((await fetch(`${gw.url}/api/v1/jobs/not.an.id`, { headers: { 'x-api-key': KEYS.all } })).status).toBe(404)
    expect((await fetch(`${gw.url}/api/v1/jobs/${id}?wait=31`, { headers: { 'x-api-key': KEYS.all } })).status).toBe(400)
  })

  it('another team\'s job and an unknown id answer the same 404, its message saying what the id may be', async () => {
    const gw = await start()
    const { id } = (await (await ask(gw)).json()) as Status
    const unknown = `${id.slice(0, -4)}zzzz`
    const said = async (jobId: string, key: string) => ((await (await fetch(`${gw.url}/api/v1/jobs/${jobId}`, { headers: { 'x-api-key': key } })).json()) as { message: string }).message
    const why = "no such job for this key's team: the id is unknown, the job was cancelled, its record ended (an hour after it expired) or was lost with Redis's data (a restart without it, a flush), or the job is another team's"
    expect([await said(id, KEYS.growth), await said(unknown, KEYS.all)]).toEqual([why, why])
  })

  // An id past 100 characters found no job route (the router's bound on a parameter) and
  // was told `GET is no job call at this path`, while OPTIONS there allowed GET.
  it('answers an id it never makes, of any length, as an unknown one on each job call', async () => {
    const gw = await start()
    const why = "no such job for this key's team: the id is unknown, the job was cancelled, its record ended (an hour after it expired) or was lost with Redis's data (a restart without it, a flush), or the job is another team's"
    for (const id of ['a'.repeat(65), 'a'.repeat(101), 'a'.repeat(4000)]) {
      for (const [method, path] of [['GET', `/api/v1/jobs/${id}`], ['DELETE', `/api/v1/jobs/${id}`], ['GET', `/api/v1/jobs/${id}/result`]] as const) {
        const res = await fetch(`${gw.url}${path}`, { method, headers: { 'x-api-key': KEYS.all } })
        expect([id.length, method, path.endsWith('/result'), res.status, ((await res.json()) as { message: string }).message]).toEqual([id.length, method, path.endsWith('/result'), 404, why])
      }
    }
  })

  it('every path under /api/v1/jobs is the gateway\'s: another method or spelling of a job path is 404 and never reaches the platform', async () => {
    const gw = await start()
    const { id } = (await (await ask(gw)).json()) as Status
    await done(gw, id)
    sandbox.clearRequests()
    const tries: Array<[string, string]> = [
      ['PUT', `/api/v1/jobs/${id}`],
      ['POST', `/api/v1/jobs/${id}`],
      ['PATCH', `/api/v1/jobs/${id}`],
      ['POST', `/api/v1/jobs/${id}/result`],
      ['DELETE', `/api/v1/jobs/${id}/result`],
      ['GET', `/api/v1/jobs/${id}/`],
      ['GET', `/api/v1/jobs/${id}/result/`],
      ['GET', `/api/v1/jobs/${id}/other`],
      ['GET', '/api/v1/jobs/'],
    ]
    for (const [method, path] of tries) {
      const res = await fetch(`${gw.url}${path}`, { method, headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, ...(method === 'GET' ? {} : { body: '{}' }) })
      const { code, message } = (await res.json()) as { code?: string; message: string }
      expect({ method, path, status: res.status, code }).toEqual({ method, path, status: 404, code: 'GW_NOT_FOUND' })
      // What the caller meant to do is said, not a bare 'not found': the job calls there are, and how a job is asked.
      expect(message, `${method} ${path}`).toBe(`${method} ${JOB_CALLS}`)
    }
    for (const method of ['GET', 'POST']) {
      const res = await fetch(`${gw.url}/api/v1/jobs`, { method, headers: { 'x-api-key': KEYS.all } })
      expect(((await res.json()) as { message: string }).message).toBe(`${method} ${JOB_CALLS}`)
    }
    // The key comes first, as on every /api/v1 call.
    expect((await fetch(`${gw.url}/api/v1/jobs/${id}`, { method: 'PUT' })).status).toBe(401)
    // OPTIONS names the methods each job path serves.
    const allow = async (path: string) => {
      const res = await fetch(`${gw.url}${path}`, { method: 'OPTIONS' })
      return [res.status, res.headers.get('allow')]
    }
    expect(await allow(`/api/v1/jobs/${id}`)).toEqual([204, 'GET, HEAD, DELETE, OPTIONS'])
    expect(await allow(`/api/v1/jobs/${id}/result`)).toEqual([204, 'GET, HEAD, OPTIONS'])
    // Every other job path is the gateway's 404 in every forwarded method: OPTIONS alone is served there.
    for (const path of ['/api/v1/jobs', '/api/v1/jobs/', '/api/v1/jobs?x=1', `/api/v1/jobs/${id}/`, `/api/v1/jobs/${id}/other`, `/api/v1/jobs/${id}/result/`]) {
      expect([path, ...(await allow(path))]).toEqual([path, 204, 'OPTIONS'])
    }
    // A path that only begins so is the platform's.
    expect(await allow('/api/v1/jobsx')).toEqual([204, 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS'])
    expect(sandbox.countRequests(() => true)).toBe(0)
  })

  it('a method never forwarded (TRACE, QUERY, WebDAV\'s, CONNECT, one Node does not know) is 405 on a job path with the allow its OPTIONS answers', async () => {
    const gw = (await start()) as TestGateway & { url: string; port: number }
    const { id } = (await (await ask(gw)).json()) as Status
    const paths = [`/api/v1/jobs/${id}`, `/api/v1/jobs/${id}?wait=1`, `/api/v1/jobs/${id}/result`, '/api/v1/jobs', '/api/v1/jobs/', `/api/v1/jobs/${id}/other`, '/api/v1/jobsx']
    for (const path of paths) {
      const options = await fetch(`${gw.url}${path}`, { method: 'OPTIONS' })
      expect([path, options.status]).toEqual([path, 204])
      for (const method of ['TRACE', 'QUERY', 'PROPFIND', 'CONNECT', 'FOO']) {
        const res = await rawRequest(gw.port, rawHttp(method, path))
        expect({ method, path, status: res.status, allow: res.headers.allow }).toEqual({ method, path, status: 405, allow: options.headers.get('allow') })
        expect(JSON.parse(res.body)).toMatchObject({ code: 'GW_METHOD_NOT_ALLOWED' })
      }
    }
    expect(sandbox.countRequests((r) => r.path !== REPORT_PATH)).toBe(0)
  })

  // The job paths a decoding router or proxy reads elsewhere (`..%2F..%2Fadmin`): each is
  // sent as it is, byte for byte (fetch would resolve dot segments itself).
  const encodedJobPaths = (id: string): string[] => [
    '/api/v1/jobs/..%2F..%2Fadmin', '/api/v1/jobs/..%2f..%2fadmin', '/api/v1/jobs/%2e%2e%2f%2e%2e%2fadmin', '/api/v1/jobs/%2E%2E/admin',
    '/api/v1/jobs/../admin', '/api/v1/jobs/..', '/api/v1/jobs/.', '/api/v1/jobs/%2e', `/api/v1/jobs/${id}%2Fresult`, `/api/v1/jobs/${id}/..%2Fresult`,
    `/api/v1/jobs/${id}/%2e%2e`, '/api/v1/jobs/..%2F..%2Fadmin/result', '/api/v1/jobs/x%5C..%5Cadmin', '/api/v1/jobs/%252e%252e%252fadmin',
    '/api/v1/jobs//admin', `/api/v1/jobs//${id}`, '/api/v1/jobs/x%00', '/api/v1/jobs/..%2F..%2Fadmin?wait=1', '/api/v1/jobs/',
  ]

  it('a job path with encoded dots or slashes (..%2F..%2Fadmin), dot segments, a backslash or a double slash says what the job calls are, in every method, never at the platform', async () => {
    const gw = (await start()) as TestGateway & { url: string; port: number }
    const { id } = (await (await ask(gw)).json()) as Status
    await done(gw, id)
    sandbox.clearRequests()
    for (const path of encodedJobPaths(id)) {
      for (const method of ['GET', 'HEAD', 'DELETE', 'POST']) {
        const res = await rawRequest(gw.port, rawHttp(method, path, method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {}))
        expect({ method, path, status: res.status }).toEqual({ method, path, status: 404 })
        if (method !== 'HEAD') expect({ method, path, answer: JSON.parse(res.body) as unknown }).toMatchObject({ method, path, answer: { code: 'GW_NOT_FOUND', message: `${method} ${JOB_CALLS}` } })
      }
      // The key first, as on every /api/v1 call.
      expect([path, (await rawRequest(gw.port, rawHttp('GET', path, { key: null }))).status]).toEqual([path, 401])
      // OPTIONS says so too: no job method is served there (a 405's allow with it).
      const options = await rawRequest(gw.port, rawHttp('OPTIONS', path))
      expect([path, options.status, options.headers.allow]).toEqual([path, 204, 'OPTIONS'])
      expect([path, (await rawRequest(gw.port, rawHttp('TRACE', path))).headers.allow]).toEqual([path, 'OPTIONS'])
    }
    expect(sandbox.countRequests(() => true)).toBe(0)
  })

  it('keeps every path under /api/v1/jobs the gateway\'s with the cache off (no jobs then): 404, never forwarded', async () => {
    clock = fakeClock()
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, teamsYamlWith({ cache: { enabled: false } }))))
    sandbox.clearRequests()
    for (const path of ['/api/v1/jobs/abc', ...encodedJobPaths('abc')]) {
      for (const method of ['GET', 'DELETE', 'PUT']) {
        const res = await rawRequest((gw as TestGateway & { port: number }).port, rawHttp(method, path))
        const { code, message } = JSON.parse(res.body) as { code?: string; message: string }
        expect({ method, path, status: res.status, code }).toEqual({ method, path, status: 404, code: 'GW_NOT_FOUND' })
        expect(message, `${method} ${path}`).toBe('no report jobs on this gateway: they are kept beside the report cache, which is off (cache.enabled: false); a report read with prefer: respond-async is proxied as any call, no job made')
      }
      // No job method is served there: OPTIONS says so.
      const options = await rawRequest((gw as TestGateway & { port: number }).port, rawHttp('OPTIONS', path))
      expect([path, options.status, options.headers.allow]).toEqual([path, 204, 'OPTIONS'])
    }
    expect(sandbox.countRequests(() => true)).toBe(0)
  })

  it('identical jobs join one platform call; a queued job is cancelled, a running one is not; ?wait holds the status until it changes', async () => {
    const gw = await start()
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const first = (await (await ask(gw)).json()) as Status
    await waitFor('the first job at the platform', () => reportCalls() === 1)
    // One job runs at a time on this replica (perReplica 1): the next wait in the queue.
    const twin = (await (await ask(gw)).json()) as Status
    const other = (await (await ask(gw, 'advertiserId=102&dateFrom=2025-01-01&dateTo=2025-06-30')).json()) as Status
    expect(await status(gw, first.id)).toMatchObject({ state: 'running', placeInQueue: null })
    expect(await status(gw, twin.id)).toMatchObject({ state: 'queued', placeInQueue: 1 })
    expect(await status(gw, other.id)).toMatchObject({ state: 'queued', placeInQueue: 2 })

    const running = await fetch(`${gw.url}/api/v1/jobs/${first.id}`, { method: 'DELETE', headers: { 'x-api-key': KEYS.all } })
    expect(running.status).toBe(409)
    expect(((await running.json()) as { code: string }).code).toBe('GW_JOB_RUNNING')
    const cancel = await fetch(`${gw.url}/api/v1/jobs/${other.id}`, { method: 'DELETE', headers: { 'x-api-key': KEYS.all } })
    expect(cancel.status).toBe(204)
    expect((await fetch(`${gw.url}/api/v1/jobs/${other.id}`, { headers: { 'x-api-key': KEYS.all } })).status).toBe(404)

    const waiting = status(gw, first.id, KEYS.all, 20)
    sandbox.releaseHeld()
    expect((await waiting).state).toBe('done')
    await done(gw, twin.id)
    // The twin found the first one's copy: one platform call for both, none for the cancelled one.
    expect(reportCalls()).toBe(1)
    expect((await status(gw, twin.id)).tookSeconds).toBe(0)
  })

  it('a ?wait on a job cancelled meanwhile ends with the cancel: 404, as the job is then, not its old status at the wait\'s end', async () => {
    const gw = await start()
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    await ask(gw)
    await waitFor('the first job at the platform', () => reportCalls() === 1)
    const { id } = (await (await ask(gw, 'advertiserId=102&dateFrom=2025-01-01&dateTo=2025-06-30')).json()) as Status
    const waiting = fetch(`${gw.url}/api/v1/jobs/${id}?wait=30`, { headers: { 'x-api-key': KEYS.all } })
    const held = async () => /^gateway_report_job_waits\{team="all"\} 1$/m.test((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body)
    await waitFor('the wait held', held)
    expect((await fetch(`${gw.url}/api/v1/jobs/${id}`, { method: 'DELETE', headers: { 'x-api-key': KEYS.all } })).status).toBe(204)
    const answer = await waiting
    expect([answer.status, ((await answer.json()) as { code: string }).code]).toEqual([404, 'GW_NOT_FOUND'])
  })

  it('a job identical to a caller\'s fill under way joins its platform call', async () => {
    const gw = await start()
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const caller = fetch(`${gw.url}${REPORT_PATH}?${YEAR}`, { headers: { 'x-api-key': KEYS.growth } })
    await waitFor('the caller\'s fill at the platform', () => reportCalls() === 1)
    const { id } = (await (await ask(gw)).json()) as Status
    expect((await status(gw, id)).state).toBe('running')
    sandbox.releaseHeld()
    expect((await caller).status).toBe(200)
    await done(gw, id)
    expect(reportCalls()).toBe(1)
  })

  it('a job that ends after midnight with a copy fetched before it says that copy\'s finality, in its status as in its result', async () => {
    const gw = await start({}, BEFORE_MIDNIGHT)
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    await ask(gw, 'advertiserId=102&dateFrom=2025-01-01&dateTo=2025-06-30')
    await waitFor('the first job at the platform', () => reportCalls() === 1)
    // One job runs at a time on this replica (perReplica 1): this one waits behind the held one.
    const { id } = (await (await ask(gw)).json()) as Status
    // A caller's read fills the copy the waiting job answers with, fetched before midnight.
    const read = await fetch(`${gw.url}${REPORT_PATH}?${YEAR}`, { headers: { 'x-api-key': KEYS.growth } })
    expect([read.status, read.headers.get('x-cache')]).toEqual([200, 'MISS'])
    const copy = finalityOf(read)
    clock.advance(20_000)
    sandbox.releaseHeld()
    await done(gw, id)
    const ended = await status(gw, id)
    // The copy answered it: no call of its own, ended on the next day.
    expect([ended.tookSeconds, ended.endedAt?.slice(0, 10)]).toEqual([0, '2026-03-11'])
    const result = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })
    expect(result.status).toBe(200)
    expect(finalityOf(result)).toEqual(copy)
    expect([ended.settledThrough, ended.provisionalDays]).toEqual(copy)
  })

  it('a platform answer a job kept says the finality of its fetch, in its status as in its result read after midnight', async () => {
    const gw = await start({}, BEFORE_MIDNIGHT)
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 200, body: { rows: [] }, headers: { 'cache-control': 'no-store' }, times: 1 })
    const { id } = (await (await ask(gw)).json()) as Status
    await waitFor(`job ${id} ended`, async () => !['queued', 'running'].includes((await status(gw, id)).state), testTimeLeft(), 20)
    const ended = await status(gw, id)
    expect([ended.state, ended.endedAt?.slice(0, 10)]).toEqual(['done', '2026-03-10'])
    clock.advance(20_000)
    const result = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })
    expect([result.status, result.headers.get('x-cache')]).toEqual([200, 'BYPASS'])
    const read = await status(gw, id)
    expect(finalityOf(result)).toEqual([read.settledThrough, read.provisionalDays])
    expect([read.settledThrough, read.provisionalDays]).toEqual([ended.settledThrough, ended.provisionalDays])
  })

  it('a job\'s result expires at its expiresAt: status expired, result 410', async () => {
    const gw = await start({ keep: '10m' })
    const { id } = (await (await ask(gw)).json()) as Status
    await done(gw, id)
    const { expiresAt } = await status(gw, id)
    expect(Date.parse(expiresAt as string)).toBeGreaterThan(clock.now())
    clock.advance(Date.parse(expiresAt as string) - clock.now() - 1)
    expect((await status(gw, id)).state).toBe('done')
    expect((await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })).status).toBe(200)
    clock.advance(1)
    expect((await status(gw, id)).state).toBe('expired')
    const gone = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })
    expect(gone.status).toBe(410)
    expect(((await gone.json()) as { code: string }).code).toBe('GW_JOB_EXPIRED')
    // Its record stays an hour after expiresAt, then its id is unknown on every call at once, whenever the replicas drop it.
    clock.advance(60 * 60_000 - 1)
    expect((await status(gw, id)).state).toBe('expired')
    clock.advance(1)
    for (const path of [`/api/v1/jobs/${id}`, `/api/v1/jobs/${id}/result`]) expect((await fetch(`${gw.url}${path}`, { headers: { 'x-api-key': KEYS.all } })).status, path).toBe(404)
  })

  it('a job\'s result is kept downstream no longer than to its expiresAt: its max-age passes not the seconds left to it', async () => {
    const gw = await start({ keep: '1m' })
    const { id } = (await (await ask(gw)).json()) as Status
    await done(gw, id)
    const { expiresAt } = await status(gw, id)
    // Its 200 and its 304 to a matching if-none-match say the same max-age.
    const maxAge = async (): Promise<number> => {
      const res = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })
      const match = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all, 'if-none-match': res.headers.get('etag') as string } })
      expect([res.status, match.status, match.headers.get('cache-control')]).toEqual([200, 304, res.headers.get('cache-control')])
      return Number(/^private, max-age=(\d+)$/.exec(res.headers.get('cache-control') ?? '')?.[1])
    }
    const secondsLeft = () => Math.floor((Date.parse(expiresAt as string) - clock.now()) / 1000)
    // The report's copy is fresh far longer than the minute its result is kept.
    const direct = await fetch(`${gw.url}${REPORT_PATH}?${YEAR}`, { headers: { 'x-api-key': KEYS.all } })
    expect(Number(/max-age=(\d+)/.exec(direct.headers.get('cache-control') ?? '')?.[1])).toBeGreaterThan(60)
    expect(await maxAge()).toBe(secondsLeft())
    clock.advance(Date.parse(expiresAt as string) - clock.now() - 1500)
    expect(await maxAge()).toBe(1)
    clock.advance(1000)
    expect(await maxAge()).toBe(0)
  })

  it('a purge is final for a job\'s result too: the advertiser\'s, the report\'s or everything\'s purge after its fill makes it 410, kept answers too', async () => {
    const gw = await start({ keep: '1h' })
    const purge = (query: string) => gw.admin.inject({ method: 'DELETE', url: `/admin/cache${query}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    const result = (id: string) => fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })
    const ended = async (query: string): Promise<string> => {
      const { id } = (await (await ask(gw, query)).json()) as Status
      await waitFor(`job ${id} ended`, async () => !['queued', 'running'].includes((await status(gw, id)).state), testTimeLeft(), 20)
      expect((await result(id)).status).toBe(200)
      return id
    }
    // The code an expired result has; its message says the purge, not an expiry still an hour away.
    const purged = async (id: string) => {
      const gone = await result(id)
      const body = (await gone.json()) as { code: string; message: string }
      expect([gone.status, body.code]).toEqual([410, 'GW_JOB_EXPIRED'])
      expect(body.message).toBe(`the result of job ${id} was purged from the report cache after its report was filled (a purge is final): ask the report again`)
      // Its status says so too: expired, no result to read.
      expect(await status(gw, id)).toMatchObject({ state: 'expired', result: null })
    }
    // Each purge after the job's fill: the fake clock moves on, as time does.
    const step = () => clock.advance(1000)

    const byAdvertiser = await ended(YEAR)
    const other = await ended(YEAR.replace('advertiserId=101', 'advertiserId=102'))
    step()
    expect((await purge('?advertiserId=101')).statusCode).toBe(200)
    await purged(byAdvertiser)
    expect((await result(other)).status).toBe(200)

    const byReport = await ended(YEAR.replace('2025-12-31', '2025-12-30'))
    step()
    const url = `${REPORT_PATH}?${YEAR.replace('2025-12-31', '2025-12-30')}`
    expect((await purge(`/entry?url=${encodeURIComponent(url)}`)).statusCode).toBe(200)
    await purged(byReport)
    expect((await result(other)).status).toBe(200)

    // A job that kept the platform's answer (a no-store 200), not a cache entry: the same.
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 200, body: { rows: [] }, headers: { 'cache-control': 'no-store' }, times: 1 })
    const kept = await ended(YEAR.replace('advertiserId=101', 'advertiserId=103'))
    step()
    expect((await purge('')).statusCode).toBe(200)
    await purged(kept)
    await purged(other)
    // A job ended after the purge is served.
    expect((await result(await ended(YEAR))).status).toBe(200)
  })

  it('a purge made while the job\'s fill is at the platform reaches its result: the platform may have read its figures before the purge', async () => {
    const gw = await start({ keep: '1h' })
    const result = (id: string) => fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const { id } = (await (await ask(gw)).json()) as Status
    await waitFor('the job\'s fill at the platform', () => sandbox.concurrency().held >= 1, testTimeLeft(), 20)
    clock.advance(1000)
    expect((await gw.admin.inject({ method: 'DELETE', url: '/admin/cache?advertiserId=101', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).statusCode).toBe(200)
    // The platform answers after the purge, as time goes on.
    clock.advance(1000)
    sandbox.releaseHeld()
    // It ends with its result already purged: its status goes from running to expired.
    await waitFor(`job ${id} ended`, async () => !['queued', 'running'].includes((await status(gw, id)).state), testTimeLeft(), 20)
    const gone = await result(id)
    expect([gone.status, ((await gone.json()) as { code: string }).code]).toEqual([410, 'GW_JOB_EXPIRED'])
    expect(await status(gw, id)).toMatchObject({ state: 'expired', result: null })
  })

  it('a POST report form with respond-async is a job too', async () => {
    const gw = await start()
    const res = await fetch(`${gw.url}/api/v1/report/campaigns/get`, {
      method: 'POST',
      headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json', prefer: 'wait=5, respond-async' },
      body: JSON.stringify({ campaignIds: [1001], dateFrom: '2025-01-01', dateTo: '2025-03-31' }),
    })
    expect(res.status).toBe(202)
    const { id } = (await res.json()) as Status
    await waitFor(`job ${id} ended`, async () => ['done', 'failed'].includes((await status(gw, id)).state), testTimeLeft(), 20)
  })

  it('a report the platform refuses (its 422, its 404) ends the job failed with the platform\'s answer: its result is that status and body, as a synchronous read answers, never 502', async () => {
    const admin = 'jobs-admin-token-000000000000000'
    clock = fakeClock()
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN: admin }, teamsYamlWith({ jobs: { perReplica: 1 } })), { clock: onRealTimers(clock.now) }))
    const refused = [
      { path: REPORT_PATH, query: 'advertiserId=101&spentBased=EUR&dateFrom=2025-02-01&dateTo=2025-12-31', status: 422 },
      { path: '/api/v1/report/nosuchsplit/get', query: YEAR, status: 404 },
    ]
    for (const { path, query, status: code } of refused) {
      // The same read without prefer: the platform's own answer, passed through.
      const sync = await fetch(`${gw.url}${path}?${query}`, { headers: { 'x-api-key': KEYS.all } })
      expect([sync.status, sync.headers.get('x-cache')]).toEqual([code, 'BYPASS'])
      // A refusal holds no figures: what its call cost, and no finality.
      expect(sync.headers.get('platform-usage')).toMatch(/^fill=\d+(\.\d+)?, minute=/)
      expect([sync.headers.get('report-settled-through'), sync.headers.get('report-provisional-days')]).toEqual([null, null])
      const platformBody = (await sync.json()) as Record<string, unknown>
      expect(platformBody).not.toHaveProperty('code')

      const asked = await fetch(`${gw.url}${path}?${query}`, { headers: { 'x-api-key': KEYS.all, ...ASYNC } })
      expect(asked.status).toBe(202)
      const { id } = (await asked.json()) as Status
      await waitFor(`job ${id} ended`, async () => (await status(gw, id)).state !== 'queued' && (await status(gw, id)).state !== 'running', testTimeLeft(), 20)
      const ended = await status(gw, id)
      expect(ended.state).toBe('failed')
      expect(ended.error).toEqual({ code: 'GW_PLATFORM_ANSWER', statusCode: code, message: `the platform refused the report with ${code}: the job's result is its answer, as a read of the report answers it` })
      expect(ended.result).toBe(`/api/v1/jobs/${id}/result`)
      // Its result holds no figures: its status says no finality either.
      expect([ended.settledThrough, ended.provisionalDays]).toEqual([null, null])

      const result = await fetch(`${gw.url}${ended.result ?? ''}`, { headers: { 'x-api-key': KEYS.all } })
      expect(result.status).toBe(code)
      expect(await result.json()).toEqual(platformBody)
      expect(result.headers.get('content-type')).toBe(sync.headers.get('content-type'))
      expect(result.headers.get('x-cache')).toBe('BYPASS')
      expect(result.headers.get('cache-status')).toMatch(new RegExp(`^report-gateway; fwd=uri-miss.*; fwd-status=${code}$`))
      expect(result.headers.get('x-request-id')).toBeTruthy()
      // What its call cost, as every report answer says it; no finality: it holds no figures.
      expect(result.headers.get('platform-usage')).toMatch(/^fill=\d+(\.\d+)?, minute=/)
      expect([result.headers.get('report-settled-through'), result.headers.get('report-provisional-days')]).toEqual([null, null])
    }
    // No answer was a 5xx: the team's usage counts no error, as for the synchronous reads.
    const usage = await gw.admin.inject({ method: 'GET', url: '/admin/usage?team=all', headers: { authorization: `Bearer ${admin}` } })
    expect((usage.json() as { usage: { errors: number }[] }).usage).toEqual([expect.objectContaining({ errors: 0 })])
  })

  it('a report the platform answers 200 with no-store ends the job done: its result is that answer, kept in the job (counted in its team\'s bound), never in the report cache', async () => {
    const gw = await start()
    const report = { rows: [{ date: '2025-01-01', spend: 1 }] }
    const noStore = () => sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 200, body: report, headers: { 'cache-control': 'no-store' }, times: 1 })
    noStore()
    // The same read without prefer: the platform's answer, passed on and not cached.
    const sync = await fetch(`${gw.url}${REPORT_PATH}?${YEAR}`, { headers: { 'x-api-key': KEYS.all } })
    expect([sync.status, sync.headers.get('x-cache')]).toEqual([200, 'BYPASS'])
    expect(await sync.json()).toEqual(report)

    noStore()
    const asked = await ask(gw)
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as Status
    await waitFor(`job ${id} ended`, async () => !['queued', 'running'].includes((await status(gw, id)).state), testTimeLeft(), 20)
    const ended = await status(gw, id)
    expect([ended.state, ended.error, ended.result]).toEqual(['done', null, `/api/v1/jobs/${id}/result`])

    const result = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })
    expect(result.status).toBe(200)
    expect(await result.json()).toEqual(report)
    expect(result.headers.get('content-type')).toBe(sync.headers.get('content-type'))
    expect(result.headers.get('x-cache')).toBe('BYPASS')
    expect(result.headers.get('cache-status')).toMatch(/^report-gateway; fwd=uri-miss.*; fwd-status=200$/)
    expect(result.headers.get('platform-usage')).toMatch(/^fill=\d+(\.\d+)?, minute=/)
    expect(result.headers.get('report-settled-through')).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    expect(result.headers.get('report-provisional-days')).toBeTruthy()
    // Read again, the same answer: it is the job's until the job expires.
    expect((await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })).status).toBe(200)

    // Not in the report cache: the next read goes to the platform.
    const calls = reportCalls()
    const after = await fetch(`${gw.url}${REPORT_PATH}?${YEAR}`, { headers: { 'x-api-key': KEYS.all } })
    expect([after.status, after.headers.get('x-cache')]).toEqual([200, 'MISS'])
    expect(reportCalls()).toBe(calls + 1)
  })

  it('a platform 2xx other than 200, or a 3xx, that a synchronous read passes on ends the job done: its result is that answer, status and headers as the read gives them', async () => {
    const gw = await start()
    const answers = [
      { status: 201, body: { rows: [], queued: true } },
      { status: 203, body: { rows: [{ date: '2025-01-01', spend: 2 }] } },
      { status: 204, body: undefined },
      { status: 302, body: { moved: true }, headers: { location: 'https://elsewhere.example/report' } },
    ]
    for (const [i, a] of answers.entries()) {
      const query = `advertiserId=101&dateFrom=2025-0${i + 1}-01&dateTo=2025-12-31`
      const answer = () => sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: a.status, ...(a.body ? { body: a.body } : {}), ...(a.headers ? { headers: a.headers } : {}), times: 1 })
      answer()
      const sync = await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.all }, redirect: 'manual' })
      const syncBody = await sync.text()
      answer()
      const asked = await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.all, ...ASYNC } })
      expect(asked.status).toBe(202)
      const { id } = (await asked.json()) as Status
      await waitFor(`job ${id} ended`, async () => !['queued', 'running'].includes((await status(gw, id)).state), testTimeLeft(), 20)
      const ended = await status(gw, id)
      expect({ status: a.status, state: ended.state, error: ended.error }).toEqual({ status: a.status, state: 'done', error: null })
      const result = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all }, redirect: 'manual' })
      const seen = (res: Response, body: string) => ({
        status: res.status,
        body,
        ...Object.fromEntries(['content-type', 'location', 'x-cache'].map((h) => [h, res.headers.get(h)])),
        fwd: /fwd-status=\d+/.exec(res.headers.get('cache-status') ?? '')?.[0] ?? null,
      })
      expect(seen(result, await result.text())).toEqual(seen(sync, syncBody))
      // A redirect's content (the platform's page, here JSON) is none, kept or not.
      if (a.status === 302) expect([syncBody, sync.headers.get('content-type'), sync.headers.get('content-length')]).toEqual(['', null, '0'])
      expect([result.status, result.headers.get('x-cache')]).toEqual([a.status, 'BYPASS'])
      expect(result.headers.get('platform-usage')).toMatch(/^fill=\d+(\.\d+)?, minute=/)
      // A redirect holds no figures: no finality, kept or not; a 2xx says its figures' as a report does.
      const finality = (res: Response) => [res.headers.get('report-settled-through'), res.headers.get('report-provisional-days')]
      if (a.status === 302) expect([finality(sync), finality(result)]).toEqual([[null, null], [null, null]])
      else expect(finality(result)).toEqual([expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/), expect.any(String)])
      // Its status says what its result says.
      expect([ended.settledThrough, ended.provisionalDays]).toEqual(finality(result))
    }
  })

  it('HEAD of a passed-on 2xx, read now or kept by a job, is its GET without the body: the same content-type and content-length, none on a 204', async () => {
    const gw = await start()
    const answers = [
      { status: 201, body: { rows: [], queued: true } },
      { status: 204, body: undefined },
    ]
    const framing = (res: Response) => ({ status: res.status, type: res.headers.get('content-type'), length: res.headers.get('content-length'), chunked: res.headers.get('transfer-encoding') })
    for (const [i, a] of answers.entries()) {
      const query = `advertiserId=101&dateFrom=2025-0${i + 1}-01&dateTo=2025-12-31`
      const answer = () => sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: a.status, ...(a.body ? { body: a.body } : {}), times: 1 })
      answer()
      const get = await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.all, 'accept-encoding': 'identity' } })
      await get.arrayBuffer()
      answer()
      const head = await fetch(`${gw.url}${REPORT_PATH}?${query}`, { method: 'HEAD', headers: { 'x-api-key': KEYS.all, 'accept-encoding': 'identity' } })
      answer()
      const { id } = (await (await ask(gw, query)).json()) as Status
      await waitFor(`job ${id} ended`, async () => !['queued', 'running'].includes((await status(gw, id)).state), testTimeLeft(), 20)
      const result = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all, 'accept-encoding': 'identity' } })
      await result.arrayBuffer()
      const resultHead = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { method: 'HEAD', headers: { 'x-api-key': KEYS.all, 'accept-encoding': 'identity' } })
      const expected = a.status === 204 ? { status: 204, type: null, length: null, chunked: null } : framing(get)
      expect([framing(get), framing(head), framing(result), framing(resultHead)]).toEqual([expected, expected, expected, expected])
    }
  })

  it('a platform answer a job keeps follows cache.maxEntryBytes, as a report result does: a no-store report or a refusal past 64 KiB is kept whole, one past the bound fails 413 as a report does', async () => {
    clock = fakeClock()
    const yaml = teamsYamlWith({ jobs: { perReplica: 1 }, cache: { maxEntryBytes: '256KiB' } })
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, yaml), { clock: onRealTimers(clock.now) }))
    const rows = (n: number) => ({ rows: Array.from({ length: n }, (_, i) => ({ date: '2025-01-01', spend: i, note: 'n'.repeat(60) })) })
    const cases = [
      { status: 200, body: rows(1500), headers: { 'cache-control': 'no-store' }, state: 'done', code: null },
      { status: 422, body: { message: 'invalid', errors: rows(1500).rows }, state: 'failed', code: 'GW_PLATFORM_ANSWER' },
      { status: 200, body: rows(4000), headers: { 'cache-control': 'no-store' }, state: 'failed', code: 'GW_JOB_RESULT_TOO_LARGE' },
    ]
    for (const [i, c] of cases.entries()) {
      const query = `advertiserId=101&dateFrom=2025-0${i + 1}-01&dateTo=2025-12-31`
      const answer = () => sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: c.status, body: c.body, ...(c.headers ? { headers: c.headers } : {}), times: 1 })
      answer()
      const sync = await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.all } })
      const syncBody = await sync.text()
      expect([sync.status, syncBody.length]).toEqual([c.status, JSON.stringify(c.body).length])
      answer()
      const { id } = (await (await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.all, ...ASYNC } })).json()) as Status
      await waitFor(`job ${id} ended`, async () => !['queued', 'running'].includes((await status(gw, id)).state), testTimeLeft(), 20)
      const ended = await status(gw, id)
      expect({ i, state: ended.state, code: ended.error?.code ?? null }).toEqual({ i, state: c.state, code: c.code })
      const result = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })
      const body = await result.text()
      // Its call was made: what it held is said, as on a 5xx.
      if (c.code === 'GW_JOB_RESULT_TOO_LARGE') expect([result.status, result.headers.get('platform-usage')]).toEqual([413, expect.stringMatching(/(^|, )fill=\d/)])
      else expect({ i, status: result.status, same: body === syncBody }).toEqual({ i, status: c.status, same: true })
    }
  })

  it('a no-store answer counts in the team\'s kept results: past jobs.resultBytesPerTeam the job fails 413 GW_JOB_RESULT_TOO_LARGE', async () => {
    const gw = await start({ resultBytesPerTeam: 10 })
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 200, body: { rows: [{ date: '2025-01-01', spend: 1 }] }, headers: { 'cache-control': 'no-store' }, times: 1 })
    const { id } = (await (await ask(gw)).json()) as Status
    await waitFor(`job ${id} failed`, async () => (await status(gw, id)).state === 'failed', testTimeLeft(), 20)
    expect((await status(gw, id)).error).toMatchObject({ code: 'GW_JOB_RESULT_TOO_LARGE', statusCode: 413 })
  })

  it('a platform refusal a synchronous read would not pass on is not kept either: the token carried back is 502 GW_UPSTREAM', async () => {
    clock = fakeClock()
    const token = sandbox.issueToken()
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token }, teamsYamlWith({ jobs: { perReplica: 1 } })), { clock: onRealTimers(clock.now) }))
    const cases = [
      { body: { message: `invalid: ${token}` }, code: 'GW_UPSTREAM', status: 502 },
    ]
    for (const [i, c] of cases.entries()) {
      const query = `advertiserId=101&dateFrom=2025-0${i + 1}-01&dateTo=2025-12-31`
      sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 422, body: c.body, times: 1 })
      const sync = await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.all } })
      const syncText = await sync.text()
      expect(syncText).not.toContain(token)
      sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 422, body: c.body, times: 1 })
      const asked = await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.all, ...ASYNC } })
      expect(asked.status).toBe(202)
      const { id } = (await asked.json()) as Status
      await waitFor(`job ${id} failed`, async () => (await status(gw, id)).state === 'failed', testTimeLeft(), 20)
      expect((await status(gw, id)).error).toMatchObject({ code: c.code, statusCode: c.status })
      const result = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })
      expect(result.status).toBe(c.status)
      const text = await result.text()
      expect(text).not.toContain(token)
      expect((JSON.parse(text) as { code: string }).code).toBe(c.code)
      if (c.code === 'GW_UPSTREAM') expect(sync.status).toBe(502)
    }
  })

  it('a job that met the platform\'s 429 waits in the queue while the pause it drew holds, then ends done: the pause never fails it', async () => {
    const gw = await start({ retry: '1s', poll: '100ms', lease: '1s' })
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 429, headers: { 'retry-after': '30' }, times: 1 })
    const { id } = (await (await ask(gw)).json()) as Status
    const runs = async (outcome: string) => Number(new RegExp(`^gateway_report_jobs_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body)?.[1] ?? 0)
    await waitFor('the job back in the queue after the platform\'s 429', async () => (await runs('requeued')) === 1)
    expect(reportCalls()).toBe(1)
    // Past jobs.retry, inside the platform's retry-after: the pause covers the job's next run.
    clock.advance(1_000)
    await waitFor('the job\'s next run over', async () => (await runs('started')) === 2 && (await runs('requeued')) + (await runs('failed')) === 2)
    expect(await status(gw, id)).toMatchObject({ state: 'queued', error: null })
    expect(reportCalls()).toBe(1)
    // The pause over, the job runs at the platform and ends with the report.
    clock.advance(30_000)
    await done(gw, id)
    expect(reportCalls()).toBe(2)
    expect(await runs('failed')).toBe(0)
  })

  it('a job its own platform calls failed says the platform-seconds every try held (tookSeconds), as the team\'s day counts them', async () => {
    // Its try again is due on the test's clock and taken at the next poll: every 100 ms.
    const gw = await start({ retries: 1, poll: '100ms' })
    sandbox.setLatency(20)
    const dayOf = (res: Response) => Number(/day=(\d+\.\d{3})/.exec(res.headers.get('platform-usage') ?? '')?.[1])
    const read = () => fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-02-01&dateTo=2025-02-07`, { headers: { 'x-api-key': KEYS.all } })
    const before = dayOf(await read())
    // A 500 is no answer a read retries: one call a try, held for the sandbox's latency at
    // least. The job tries again once (jobs.retries: 1) 1 s later, and fails with the second.
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 500, times: 2 })
    const { id } = (await (await ask(gw)).json()) as Status
    await waitFor(`job ${id} given back`, async () => (await status(gw, id)).retry?.tries === 1, testTimeLeft(), 20)
    clock.advance(1_000)
    await waitFor(`job ${id} failed`, async () => (await status(gw, id)).state === 'failed', testTimeLeft(), 20)
    expect(sandbox.countRequests((q) => q.path === REPORT_PATH)).toBe(3)
    const failed = await status(gw, id)
    expect(failed.error).toMatchObject({ code: 'GW_UPSTREAM', statusCode: 502 })
    // A failure holds no figures: its status says no finality, as its result's headers say none.
    expect([failed.settledThrough, failed.provisionalDays]).toEqual([null, null])
    // The team's figures are said anew each second.
    clock.advance(1_000)
    const after = await read()
    expect(after.headers.get('x-cache')).toBe('HIT')
    const charged = dayOf(after) - before
    expect(charged).toBeGreaterThan(0)
    expect(failed.tookSeconds).toBeCloseTo(charged, 2)
    // Its result is its failure as the read would have answered it: the 502, with what the call cost.
    const result = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })
    expect(result.status).toBe(502)
    expect(result.headers.get('platform-usage')).toMatch(new RegExp(`^fill=${(failed.tookSeconds ?? 0).toFixed(3)}, minute=`))
    expect(result.headers.get('report-settled-through')).toBeNull()
  })

  it('bounds a team\'s open jobs (429 GW_JOBS_FULL) and its kept results (the job fails 413 GW_JOB_RESULT_TOO_LARGE)', async () => {
    const gw = await start({ maxOpenPerTeam: 2, resultBytesPerTeam: 10 })
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const a = (await (await ask(gw)).json()) as Status
    await ask(gw, 'advertiserId=102&dateFrom=2025-01-01&dateTo=2025-06-30')
    const full = await ask(gw, 'advertiserId=103&dateFrom=2025-01-01&dateTo=2025-06-30')
    expect(full.status).toBe(429)
    expect(((await full.json()) as { code: string }).code).toBe('GW_JOBS_FULL')
    expect(full.headers.get('retry-after')).toBe('1')
    sandbox.releaseHeld()
    await waitFor(`job ${a.id} ended`, async () => (await status(gw, a.id)).state === 'failed', testTimeLeft(), 20)
    expect((await status(gw, a.id)).error?.code).toBe('GW_JOB_RESULT_TOO_LARGE')
    const result = await fetch(`${gw.url}/api/v1/jobs/${a.id}/result`, { headers: { 'x-api-key': KEYS.all } })
    expect(result.status).toBe(413)
    // Room again once they ended.
    expect((await ask(gw, 'advertiserId=103&dateFrom=2025-01-01&dateTo=2025-06-30')).status).toBe(202)
    // The platform's refusal a job would keep counts in the same bound.
    const refused = (await (await ask(gw, 'advertiserId=101&spentBased=EUR&dateFrom=2025-02-01&dateTo=2025-12-31')).json()) as Status
    await waitFor(`job ${refused.id} ended`, async () => (await status(gw, refused.id)).state === 'failed', testTimeLeft(), 20)
    expect((await status(gw, refused.id)).error).toMatchObject({ code: 'GW_JOB_RESULT_TOO_LARGE', statusCode: 413 })
  })
})
