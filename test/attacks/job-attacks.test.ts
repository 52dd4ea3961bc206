import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { CREDENTIAL_KEYS, credentialTeams, KEYS, listen, REPORT_PATH, TEAMS_YAML, teamsYamlWith, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { startRedis, type RedisServer } from '../helpers/start-redis.js'
import { rawHttp, rawRequest, startSandboxGateway, type SandboxGateway } from '../helpers/sandbox-gateway.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { ADMIN_TOKEN } from './attack-gateway.js'

// Report jobs attacked by a team with a scoped key (`growth`: advertisers 101 and 102) and
// by another team (`all`), against the sandbox over real HTTP and a real Redis: another
// team's job reads as none in every call and spelling, `?wait` takes whole seconds only,
// a job's bounds tell the asking team of its own jobs only.

const ASYNC = { prefer: 'respond-async' }
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'

describe('report jobs attacked', () => {
  const redis = useRedis()
  let sg: SandboxGateway
  beforeAll(async () => {
    sg = await startSandboxGateway({ yaml: teamsYamlWith({ jobs: { perReplica: 1, maxOpenPerTeam: 3 } }), env: { REDIS_URL: redis.server.url, ADMIN_TOKEN } })
  })
  afterEach(() => sg.sandbox.releaseHeld())
  afterAll(async () => {
    await sg.closeAfterTests()
  })

  const reportCalls = () => sg.callerRequests().filter((r) => r.path === REPORT_PATH).length
  const get = (path: string, key: string, init: RequestInit = {}) => fetch(`${sg.url}${path}`, { ...init, headers: { 'x-api-key': key, ...(init.headers as Record<string, string>) } })
  async function ask(query: string, key = KEYS.all): Promise<string> {
    const res = await get(`${REPORT_PATH}?${query}`, key, { headers: ASYNC })
    expect(res.status).toBe(202)
    return ((await res.json()) as { id: string }).id
  }
  /** An answer as a caller compares two: its status, body and headers, less what differs on every answer. */
  async function seen(res: Response): Promise<{ status: number; body: string; headers: Record<string, string> }> {
    const headers = Object.fromEntries([...res.headers].filter(([name]) => !['date', 'x-request-id', 'ratelimit', 'ratelimit-remaining', 'x-ratelimit-remaining'].includes(name)))
    return { status: res.status, body: await res.text(), headers }
  }

  it('another team\'s job is answered as a missing one in every call: same status, body and headers, no wait', async () => {
    sg.sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const theirs = await ask(YEAR)
    await waitFor('the job at the platform', () => reportCalls() === 1)
    const missing = `${theirs.slice(0, -4)}${theirs.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`
    for (const [method, suffix] of [['GET', ''], ['GET', '/result'], ['DELETE', ''], ['GET', '?wait=30']] as const) {
      const foreign = await seen(await get(`/api/v1/jobs/${theirs}${suffix}`, KEYS.growth, { method }))
      const none = await seen(await get(`/api/v1/jobs/${missing}${suffix}`, KEYS.growth, { method }))
      expect(foreign, `${method} ${suffix}`).toEqual(none)
      expect(foreign.status).toBe(404)
      expect(foreign.body).not.toContain(theirs)
    }
    // The ?wait calls came back while the job still runs: neither waited on it.
    expect((await (await get(`/api/v1/jobs/${theirs}`, KEYS.all)).json()) as { state: string }).toMatchObject({ state: 'running' })
    // Still the owner's after all that: the DELETE removed nothing.
    sg.sandbox.releaseHeld()
    await waitFor('the job done', async () => ((await (await get(`/api/v1/jobs/${theirs}`, KEYS.all)).json()) as { state: string }).state === 'done', testTimeLeft(), 20)
    expect((await get(`/api/v1/jobs/${theirs}/result`, KEYS.growth)).status).toBe(404)
    expect((await get(`/api/v1/jobs/${theirs}/result`, KEYS.all)).status).toBe(200)
  })

  it('a job id in odd spellings: another case is another id, escapes and traversal reach no job of another team and nothing at the platform', async () => {
    sg.sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const calls = reportCalls()
    const theirs = await ask('advertiserId=102&dateFrom=2025-02-01&dateTo=2025-02-28')
    await waitFor('the job at the platform', () => reportCalls() === calls + 1)
    const before = sg.callerRequests().length
    const escaped = [...theirs].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('')
    const spellings = [
      theirs.toUpperCase(), theirs.toLowerCase(), escaped, `${theirs}/`, `${theirs}%2f`, `${theirs}/..%2f..%2freport%2fcampaigns%2fget`,
      `..%2f..%2freport%2fcampaigns%2fget%3f${encodeURIComponent(YEAR)}`, `%2e%2e/${theirs}`, `${theirs}%00`, `${theirs};x=1`,
    ]
    for (const spelling of spellings) {
      for (const method of ['GET', 'DELETE']) {
        // As sent, byte for byte: fetch would resolve `%2e%2e` itself.
        const res = await rawRequest(sg.port, rawHttp(method, `/api/v1/jobs/${spelling}`, { key: KEYS.growth }))
        expect([400, 404], `${method} ${spelling}`).toContain(res.status)
        expect(res.body).not.toContain(theirs)
      }
    }
    expect(sg.callerRequests().slice(before).map((r) => `${r.method} ${r.path}`)).toEqual([])
    // The owner's job is still there, not cancelled by any spelling.
    expect((await get(`/api/v1/jobs/${theirs}`, KEYS.all)).status).toBe(200)
  })

  it('/api/v1/jobs itself, in any method and with any query, is the gateway\'s 404 GW_NOT_FOUND and never reaches the platform', async () => {
    const before = sg.callerRequests().length
    for (const key of [KEYS.all, KEYS.growth]) {
      for (const [method, target] of [['GET', '/api/v1/jobs'], ['POST', '/api/v1/jobs'], ['DELETE', '/api/v1/jobs'], ['PUT', '/api/v1/jobs?userId=101'], ['GET', '/api/v1/jobs?advertiserId=101&page=2']] as const) {
        const res = await get(target, key, { method, ...(method === 'GET' || method === 'DELETE' ? {} : { body: '{"userId":101}', headers: { 'content-type': 'application/json' } }) })
        expect(res.status, `${method} ${target}`).toBe(404)
        expect(await res.json(), `${method} ${target}`).toMatchObject({ code: 'GW_NOT_FOUND' })
      }
    }
    // Without a key, as every path under /api/v1/jobs/: 401.
    expect((await fetch(`${sg.url}/api/v1/jobs`)).status).toBe(401)
    expect(sg.callerRequests().slice(before).map((r) => `${r.method} ${r.path}`)).toEqual([])
  })

  it('a scoped team asking a job of an advertiser outside its scope is 403, and no job is kept', async () => {
    const res = await get(`${REPORT_PATH}?advertiserId=103&dateFrom=2025-01-01&dateTo=2025-01-31`, KEYS.growth, { headers: ASYNC })
    expect(res.status).toBe(403)
    expect(res.headers.get('location')).toBeNull()
    const post = await get(REPORT_PATH, KEYS.growth, { method: 'POST', headers: { ...ASYNC, 'content-type': 'application/json' }, body: JSON.stringify({ campaignIds: [103001], dateFrom: '2025-01-01', dateTo: '2025-01-31' }) })
    expect(post.status).toBe(403)
    expect(post.headers.get('location')).toBeNull()
  })

  it('?wait takes whole seconds from 0 to 30, once: anything else is 400 GW_BAD_REQUEST', async () => {
    const id = await ask('advertiserId=101&dateFrom=2025-03-01&dateTo=2025-03-31')
    for (const wait of ['-1', '31', '1.5', '1e1', '0x5', '%205', '5%20', '', 'abc', '1&wait=2', '99999999999999999999', '%35%35']) {
      const res = await get(`/api/v1/jobs/${id}?wait=${wait}`, KEYS.all)
      expect(res.status, `wait=${wait}`).toBe(400)
      expect(((await res.json()) as { code: string }).code).toBe('GW_BAD_REQUEST')
    }
    expect((await get(`/api/v1/jobs/${id}?wait=0`, KEYS.all)).status).toBe(200)
    // Twice, each value right: the message says so, as a report read's query does.
    expect(await (await get(`/api/v1/jobs/${id}?wait=1&wait=2`, KEYS.all)).json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: 'wait: given more than once' })
    expect(await (await get(`/api/v1/jobs/${id}?wait=31`, KEYS.all)).json()).toMatchObject({ message: 'wait: whole seconds from 0 to 30' })
  })

  it('a job call takes no parameter it does not read: 400 GW_BAD_REQUEST naming it, and nothing done', async () => {
    sg.sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const id = await ask('advertiserId=101&dateFrom=2025-04-01&dateTo=2025-04-30')
    await waitFor('the job at the platform', () => reportCalls() > 0)
    const queued = await ask('advertiserId=101&dateFrom=2025-05-01&dateTo=2025-05-31')
    const refused = async (method: string, path: string, message: string) => {
      const res = await get(path, KEYS.all, { method })
      expect({ status: res.status, body: await res.json() }, `${method} ${path}`).toMatchObject({ status: 400, body: { code: 'GW_BAD_REQUEST', message } })
    }
    // A list or another spelling of `wait` is no `wait`: the status would have been answered at once.
    await refused('GET', `/api/v1/jobs/${id}?wait[]=1`, 'wait[]: not a parameter of this call (it takes wait)')
    await refused('GET', `/api/v1/jobs/${id}?wait[x]=1`, 'wait[x]: not a parameter of this call (it takes wait)')
    await refused('GET', `/api/v1/jobs/${id}?Wait=1`, 'Wait: not a parameter of this call (it takes wait)')
    await refused('GET', `/api/v1/jobs/${id}?wait=0&timeout=5`, 'timeout: not a parameter of this call (it takes wait)')
    await refused('GET', `/api/v1/jobs/${id}/result?format=csv`, 'format: not a parameter of this call (it takes none)')
    await refused('DELETE', `/api/v1/jobs/${queued}?force=1`, 'force: not a parameter of this call (it takes none)')
    // Refused before the job is read: the queued job is still there to cancel, and another team's reads as none.
    expect((await get(`/api/v1/jobs/${queued}`, KEYS.all)).status).toBe(200)
    expect((await get(`/api/v1/jobs/${queued}`, KEYS.growth)).status).toBe(404)
    expect((await get(`/api/v1/jobs/${queued}`, KEYS.all, { method: 'DELETE' })).status).toBe(204)
    expect((await get(`/api/v1/jobs/${id}?wait=0`, KEYS.all)).status).toBe(200)
  })

  it('two POST forms of one report, their keys in another order, are one job\'s platform call', async () => {
    sg.sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const before = reportCalls()
    const post = (body: string) => get(REPORT_PATH, KEYS.all, { method: 'POST', headers: { ...ASYNC, 'content-type': 'application/json' }, body })
    const a = await post('{"campaignIds":[101001],"dateFrom":"2024-05-01","dateTo":"2024-05-31","byDate":true}')
    const b = await post('{"byDate":true,"dateTo":"2024-05-31","dateFrom":"2024-05-01","campaignIds":[101001]}')
    expect([a.status, b.status]).toEqual([202, 202])
    const ids = [((await a.json()) as { id: string }).id, ((await b.json()) as { id: string }).id]
    await waitFor('the first at the platform', () => reportCalls() === before + 1)
    sg.sandbox.releaseHeld()
    for (const id of ids) await waitFor(`job ${id} done`, async () => ((await (await get(`/api/v1/jobs/${id}`, KEYS.all)).json()) as { state: string }).state === 'done', testTimeLeft(), 20)
    expect(reportCalls()).toBe(before + 1)
  })

  // A job's record holds its report (its parameters, the body as sent, what its cache key
  // is made of) and is kept, without expiry, jobs.keep and an hour after it ends, up to
  // jobs.maxKeptPerTeam records of a team: a report body at its 64 KiB bound made a record
  // of 190 KB, 1.9 GB of one team's records in the Redis every team keeps its jobs in.
  it('a report too large to keep as a job (past 16 KiB in its record) is read as it asks, not as a job: no 202, no record', async () => {
    const post = (ids: number) => get(REPORT_PATH, KEYS.all, { method: 'POST', headers: { ...ASYNC, 'content-type': 'application/json' }, body: JSON.stringify({ campaignIds: Array.from({ length: ids }, (_, i) => 101001 + i), dateFrom: '2024-06-01', dateTo: '2024-06-30', byDate: true }) })
    const big = await post(9000)
    expect(big.status).not.toBe(202)
    expect(big.headers.get('preference-applied')).toBeNull()
    expect(await redis.client.keys('*{jobs}:job:*')).toEqual([])
    const small = await post(20)
    expect(small.status).toBe(202)
    const records = await redis.client.keys('*{jobs}:job:*')
    expect(records).toHaveLength(1)
    expect(await redis.client.strlen(records[0] as string)).toBeLessThan(16 * 1024)
  })

  it('a team\'s queued jobs hold no other team\'s back: a slot that frees goes to the team with the fewest running, not to the earliest asked', async () => {
    // One slot (jobs.perReplica 1): `all` fills it and queues two more; `growth` asks one after them.
    sg.sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 2 })
    const before = reportCalls()
    const first = await ask('advertiserId=101&dateFrom=2023-01-01&dateTo=2023-01-31')
    await waitFor('the first job at the platform', () => reportCalls() === before + 1)
    const queued = [await ask('advertiserId=101&dateFrom=2023-02-01&dateTo=2023-02-28'), await ask('advertiserId=101&dateFrom=2023-03-01&dateTo=2023-03-31')]
    const other = await ask('advertiserId=102&dateFrom=2023-01-01&dateTo=2023-01-31', KEYS.growth)
    const state = async (id: string, key = KEYS.all) => ((await (await get(`/api/v1/jobs/${id}`, key)).json()) as { state: string }).state
    sg.sandbox.releaseHeld()
    await waitFor('a second job at the platform', () => reportCalls() === before + 2)
    expect(await state(other, KEYS.growth)).toBe('running')
    expect([await state(queued[0] as string), await state(queued[1] as string)]).toEqual(['queued', 'queued'])
    for (const id of queued) expect((await get(`/api/v1/jobs/${id}`, KEYS.all, { method: 'DELETE' })).status).toBe(204)
    sg.sandbox.releaseHeld()
    await waitFor('both run jobs done', async () => (await state(first)) === 'done' && (await state(other, KEYS.growth)) === 'done', testTimeLeft(), 20)
  })

  it('a team\'s job bound tells of its own jobs only: another team\'s full queue neither refuses nor shows in it', async () => {
    sg.sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    for (const month of ['06', '07', '08']) await ask(`advertiserId=101&dateFrom=2024-${month}-01&dateTo=2024-${month}-28`)
    const full = await get(`${REPORT_PATH}?advertiserId=101&dateFrom=2024-09-01&dateTo=2024-09-28`, KEYS.all, { headers: ASYNC })
    expect(full.status).toBe(429)
    const body = (await full.json()) as { code: string; message: string }
    expect(body.code).toBe('GW_JOBS_FULL')
    expect(body.message).not.toMatch(/growth/)
    const mine = await get(`${REPORT_PATH}?advertiserId=101&dateFrom=2024-09-01&dateTo=2024-09-28`, KEYS.growth, { headers: ASYNC })
    expect(mine.status).toBe(202)
  })

  it('a job\'s id tells a team nothing of another team\'s asks: its order part counts the team\'s own asks only', async () => {
    // An id is 9 characters of time, 4 of order, then 96 random bits (jobs.ts, newId).
    const order = (id: string): number => Number.parseInt(id.slice(9, 13), 36)
    const first = await ask('advertiserId=101&dateFrom=2023-01-01&dateTo=2023-01-28', KEYS.growth)
    for (const month of ['02', '03']) await ask(`advertiserId=101&dateFrom=2023-${month}-01&dateTo=2023-${month}-28`, KEYS.all)
    const second = await ask('advertiserId=101&dateFrom=2023-04-01&dateTo=2023-04-28', KEYS.growth)
    // The order part counts the team's own asks of the id's millisecond: the other team's
    // two asks between would make it 3.
    expect(order(first)).toBe(1)
    expect(order(second)).toBeLessThanOrEqual(2)
  })

  it('a job\'s expectedSeconds tells a team nothing of another team\'s calls: null until a call of its kind of the team\'s own has ended', async () => {
    // Ten days by campaign: a kind no other test of this file asks.
    const shape = (month: string, advertiser: number) => `advertiserId=${advertiser}&byCampaign=1&dateFrom=2022-${month}-01&dateTo=2022-${month}-10`
    const expected = async (id: string, key: string) => ((await (await get(`/api/v1/jobs/${id}?wait=30`, key)).json()) as { state: string; expectedSeconds: number | null })
    // Another team's call of that kind, on another advertiser, ends.
    expect(await expected(await ask(shape('06', 102), KEYS.all), KEYS.all)).toMatchObject({ state: 'done' })
    // The writer (advertiser 101 alone) asks the same kind: the gateway knows nothing of the writer's own calls of it.
    const first = await ask(shape('07', 101), KEYS.writer)
    expect(await expected(first, KEYS.writer)).toMatchObject({ state: 'done', expectedSeconds: null })
    // Once its own call of that kind ended, the writer's next job of it has an estimate.
    const second = await ask(shape('08', 101), KEYS.writer)
    expect((await expected(second, KEYS.writer)).expectedSeconds).toEqual(expect.any(Number))
  })
})

describe('report jobs while Redis is down', () => {
  let sg: SandboxGateway
  let redis: RedisServer
  beforeAll(async () => {
    redis = await startRedis()
    sg = await startSandboxGateway({ env: { REDIS_URL: redis.url, ADMIN_TOKEN } })
  })
  afterAll(async () => {
    await sg.closeAfterTests()
    await redis.close()
  })

  it('a job call says 503 GW_JOBS_UNAVAILABLE without Redis\'s address or its driver\'s words', async () => {
    const res = await fetch(`${sg.url}${REPORT_PATH}?${YEAR}`, { headers: { 'x-api-key': KEYS.all, ...ASYNC } })
    const { id } = (await res.json()) as { id: string }
    await redis.stop(true)
    const port = new URL(redis.url).port
    for (const path of [`/api/v1/jobs/${id}`, `/api/v1/jobs/${id}/result`]) {
      let body = { code: '', message: '' }
      await waitFor(`${path} 503`, async () => {
        const answer = await fetch(`${sg.url}${path}`, { headers: { 'x-api-key': KEYS.all } })
        body = (await answer.json()) as typeof body
        return answer.status === 503
      }, testTimeLeft(), 50)
      expect(body.code).toBe('GW_JOBS_UNAVAILABLE')
      expect(body.message).not.toContain(port)
      expect(body.message).not.toMatch(/127\.0\.0\.1|ECONN|ioredis|stream|retries|connection/i)
    }
  })
})

describe('a job\'s result after its team lost the advertiser', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()

  it('is 403 once a reload took the advertiser out of the team\'s scope, as a read of the report is', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'job-scope-'))
    const file = join(dir, 'config.yaml')
    writeFileSync(file, TEAMS_YAML)
    const env = { CONFIG_FILE: file, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }
    const gw = await listen(await gateways.build(loadConfig({ env }), { configSource: { env } }))
    const query = 'advertiserId=102&dateFrom=2025-09-01&dateTo=2025-09-28'
    const asked = await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.growth, ...ASYNC } })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    const state = async () => ((await (await fetch(`${gw.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.growth } })).json()) as { state: string }).state
    await waitFor('the job done', async () => (await state()) === 'done', testTimeLeft(), 20)

    writeFileSync(file, TEAMS_YAML.replace('advertisers: [101, 102]', 'advertisers: [101]'))
    const reload = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(reload.statusCode).toBe(200)
    expect((await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.growth } })).status).toBe(403)
    const result = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.growth } })
    expect(result.status).toBe(403)
    const body = await result.text()
    expect(JSON.parse(body)).toMatchObject({ code: 'GW_FORBIDDEN' })
    expect(body).not.toContain('"data"')
  })

  it('a job still queued when a reload took its advertiser out of the team\'s scope makes no platform call: it ends failed, 403 GW_FORBIDDEN', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'job-scope-'))
    const file = join(dir, 'config.yaml')
    const yaml = teamsYamlWith({ jobs: { perReplica: 1 } })
    writeFileSync(file, yaml)
    const env = { CONFIG_FILE: file, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }
    const gw = await listen(await gateways.build(loadConfig({ env }), { configSource: { env } }))
    const ask = async (query: string): Promise<string> => {
      const asked = await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.growth, ...ASYNC } })
      expect(asked.status).toBe(202)
      return ((await asked.json()) as { id: string }).id
    }
    const status = async (id: string) => (await (await fetch(`${gw.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.growth } })).json()) as { state: string; error: { code: string; statusCode: number } | null }
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    // The one slot holds the first job at the platform; the second waits in the queue.
    const running = await ask('advertiserId=101&dateFrom=2025-10-01&dateTo=2025-10-28')
    await waitFor('the first job at the platform', () => sandbox.requests.some((r) => r.path === REPORT_PATH), testTimeLeft(), 20)
    const queued = await ask('advertiserId=102&dateFrom=2025-10-01&dateTo=2025-10-28')
    expect((await status(queued)).state).toBe('queued')

    writeFileSync(file, yaml.replace('advertisers: [101, 102]', 'advertisers: [101]'))
    const reload = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(reload.statusCode).toBe(200)
    sandbox.releaseHeld()
    await waitFor('both jobs ended', async () => (await status(running)).state === 'done' && ['done', 'failed'].includes((await status(queued)).state), testTimeLeft(), 20)
    expect(await status(queued)).toMatchObject({ state: 'failed', error: { code: 'GW_FORBIDDEN', statusCode: 403 } })
    expect(sandbox.requests.filter((r) => r.path === REPORT_PATH && r.query.includes('advertiserId=102'))).toEqual([])
  })
})

describe('a job of a team a reload moved to another credential', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()
  const partnerYaml = credentialTeams('partner')
  // The same team, moved from credential partner to the default one.
  const movedYaml = partnerYaml.replace('    credential: partner', '')

  async function partnerGateway(yaml: string): Promise<{ gw: TestGateway; file: string }> {
    const file = join(mkdtempSync(join(tmpdir(), 'job-credential-')), 'config.yaml')
    writeFileSync(file, yaml)
    const env = { CONFIG_FILE: file, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), CREDENTIAL_PARTNER_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }
    return { gw: await listen(await gateways.build(loadConfig({ env }), { configSource: { env } })), file }
  }
  async function moveTeam(gw: TestGateway, file: string, yaml: string): Promise<void> {
    writeFileSync(file, yaml)
    const reload = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(reload.statusCode).toBe(200)
  }
  const key = { 'x-api-key': CREDENTIAL_KEYS.partner }
  const status = async (gw: TestGateway, id: string) => (await (await fetch(`${gw.url}/api/v1/jobs/${id}`, { headers: key })).json()) as { state: string; error: { code: string; statusCode: number } | null }

  it('its result, read through the credential it no longer has, is 403 GW_FORBIDDEN', async () => {
    const { gw, file } = await partnerGateway(partnerYaml)
    const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=103&dateFrom=2025-08-01&dateTo=2025-08-28`, { headers: { ...key, ...ASYNC } })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    await waitFor('the job done', async () => (await status(gw, id)).state === 'done', testTimeLeft(), 20)

    await moveTeam(gw, file, movedYaml)
    const result = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: key })
    const body = await result.text()
    expect(result.status).toBe(403)
    expect(JSON.parse(body)).toMatchObject({ code: 'GW_FORBIDDEN' })
    expect(body).not.toContain('"data"')
  })

  it('still queued when the reload came, it makes no platform call through the old credential: it ends failed, 403 GW_FORBIDDEN', async () => {
    const { gw, file } = await partnerGateway(partnerYaml.replace('credentials:', 'jobs: { perReplica: 1 }\ncredentials:'))
    const ask = async (query: string): Promise<string> => {
      const asked = await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { ...key, ...ASYNC } })
      expect(asked.status).toBe(202)
      return ((await asked.json()) as { id: string }).id
    }
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    // The one slot holds the first job at the platform; the second waits in the queue.
    const running = await ask('advertiserId=101&dateFrom=2025-07-01&dateTo=2025-07-28')
    await waitFor('the first job at the platform', () => sandbox.requests.some((r) => r.path === REPORT_PATH), testTimeLeft(), 20)
    const queued = await ask('advertiserId=103&dateFrom=2025-07-01&dateTo=2025-07-28')
    expect((await status(gw, queued)).state).toBe('queued')

    await moveTeam(gw, file, movedYaml.replace('credentials:', 'jobs: { perReplica: 1 }\ncredentials:'))
    sandbox.releaseHeld()
    await waitFor('both jobs ended', async () => ['done', 'failed'].includes((await status(gw, running)).state) && ['done', 'failed'].includes((await status(gw, queued)).state), testTimeLeft(), 20)
    expect(await status(gw, queued)).toMatchObject({ state: 'failed', error: { code: 'GW_FORBIDDEN', statusCode: 403 } })
    expect(sandbox.requests.filter((r) => r.path === REPORT_PATH && r.query.includes('advertiserId=103'))).toEqual([])
  })
})

describe('jobs that end at once, asked without end', () => {
  // Each ask leaves a record in Redis (about 2 KB with its result) for jobs.keep and an hour
  // after, whatever its result's size: a report the platform refuses at once (422) ends
  // its job at once, and jobs.maxOpenPerTeam never fills. One team asking such jobs in a
  // loop (300 in 3 s at the sandbox, 2.3 KB of Redis each, 130 bytes of them counted in
  // its results' bound) fills the Redis every team keeps its copies and jobs in.
  const redis = useRedis()
  let sg: SandboxGateway
  beforeAll(async () => {
    sg = await startSandboxGateway({ yaml: teamsYamlWith({ jobs: { maxKeptPerTeam: 3 } }), env: { REDIS_URL: redis.server.url, ADMIN_TOKEN } })
  })
  afterAll(async () => {
    await sg.closeAfterTests()
  })
  const refused = (i: number) => `${REPORT_PATH}?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-0${i + 1}&spentBased=none`
  const asked = (path: string, key: string) => fetch(`${sg.url}${path}`, { headers: { 'x-api-key': key, ...ASYNC } })

  it('are kept jobs.maxKeptPerTeam at most for a team: one more ask is 429 GW_JOBS_FULL with retry-after, and another team asks as ever', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await asked(refused(i), KEYS.growth)
      expect(res.status).toBe(202)
      const { id } = (await res.json()) as { id: string }
      const ended = await fetch(`${sg.url}/api/v1/jobs/${id}?wait=10`, { headers: { 'x-api-key': KEYS.growth } })
      expect(((await ended.json()) as { state: string }).state).toBe('failed')
    }
    const full = await asked(refused(3), KEYS.growth)
    expect(full.status).toBe(429)
    expect(full.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(((await full.json()) as { code: string; message: string })).toMatchObject({ code: 'GW_JOBS_FULL', message: expect.stringContaining('jobs.maxKeptPerTeam') as unknown })
    expect((await asked(refused(3), KEYS.all)).status).toBe(202)
  })
})
