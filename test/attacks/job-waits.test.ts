import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, teamsYamlWith } from '../helpers/build-gateway.js'
import { useRedis } from '../helpers/fixtures.js'
import { startSandboxGateway, type SandboxGateway } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { ADMIN_TOKEN } from './attack-gateway.js'

// Status calls held open by `?wait` (each up to 30 s, reading its job every 250 ms),
// opened by a team whose rate limit allows them all: bounded per team
// (jobs.maxWaitsPerTeam) and per replica (jobs.maxWaits). One more is answered at once,
// 429 GW_WAITS_FULL with retry-after; the waits held still end when their job changes.
// Against the sandbox over real HTTP and a real Redis.

const ASYNC = { prefer: 'respond-async' }

describe('waits on report jobs past their bounds', () => {
  const redis = useRedis()
  let sg: SandboxGateway
  beforeAll(async () => {
    sg = await startSandboxGateway({ yaml: teamsYamlWith({ jobs: { perReplica: 1, maxWaitsPerTeam: 2, maxWaits: 3 } }), env: { REDIS_URL: redis.server.url, ADMIN_TOKEN } })
  })
  afterEach(() => sg.sandbox.releaseHeld())
  afterAll(async () => {
    await sg.closeAfterTests()
  })

  const get = (path: string, key: string, headers: Record<string, string> = {}) => fetch(`${sg.url}${path}`, { headers: { 'x-api-key': key, ...headers } })
  async function ask(query: string, key: string): Promise<string> {
    const res = await get(`${REPORT_PATH}?${query}`, key, ASYNC)
    expect(res.status).toBe(202)
    return ((await res.json()) as { id: string }).id
  }
  const stateOf = async (id: string, key: string) => ((await (await get(`/api/v1/jobs/${id}`, key)).json()) as { state: string }).state
  /** The replica's gauge of waits held now, by team. */
  async function waiting(team: string): Promise<number> {
    const text = (await sg.gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    return Number(new RegExp(`^gateway_report_job_waits\\{team="${team}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0)
  }
  async function refused(res: Response): Promise<string> {
    expect(res.status).toBe(429)
    expect(res.headers.get('retry-after')).toBe('1')
    const body = (await res.json()) as { code: string; message: string }
    expect(body.code).toBe('GW_WAITS_FULL')
    return body.message
  }

  it('past the team\'s bound, then the replica\'s, one more wait is 429 GW_WAITS_FULL at once; those held end when their job does', async () => {
    // The team `all`'s job is held at the platform: running, it does not change.
    sg.sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const running = await ask('advertiserId=101&dateFrom=2025-01-01&dateTo=2025-12-31', KEYS.all)
    await waitFor('the job at the platform', () => sg.callerRequests().some((r) => r.path === REPORT_PATH))
    const held = [get(`/api/v1/jobs/${running}?wait=30`, KEYS.all), get(`/api/v1/jobs/${running}?wait=30`, KEYS.all)]
    await waitFor('two waits of the team held', async () => (await waiting('all')) === 2)

    const teamFull = await refused(await get(`/api/v1/jobs/${running}?wait=30`, KEYS.all))
    expect(teamFull).toBe('team all has 2 status calls waiting (?wait) on this replica, the most it may (jobs.maxWaitsPerTeam); ask again after retry-after, or without ?wait')
    // Without ?wait the status is answered as ever.
    expect(await stateOf(running, KEYS.all)).toBe('running')

    // Another team's wait on its own job (queued behind the one runner) takes the replica's last place.
    const queued = await ask('advertiserId=102&dateFrom=2025-01-01&dateTo=2025-12-31', KEYS.growth)
    const theirs = get(`/api/v1/jobs/${queued}?wait=30`, KEYS.growth)
    await waitFor('the other team\'s wait held', async () => (await waiting('growth')) === 1)
    const replicaFull = await refused(await get(`/api/v1/jobs/${queued}?wait=30`, KEYS.growth))
    // The replica's bound says nothing of which team holds it.
    expect(replicaFull).toBe('this replica holds 3 status calls waiting (?wait), the most it may (jobs.maxWaits); ask again after retry-after, or without ?wait')
    expect(await stateOf(running, KEYS.all)).toBe('running')

    // The job's platform call answers: the waits held end with its change, and give their places back.
    await waitFor('the job done', async () => {
      sg.sandbox.releaseHeld()
      return (await stateOf(running, KEYS.all)) === 'done'
    })
    const answers = await Promise.all(held.map(async (p) => ((await (await p).json()) as { state: string }).state))
    expect(answers).toEqual(['done', 'done'])
    expect((await theirs).status).toBe(200)
    await waitFor('every wait given back', async () => (await waiting('all')) === 0 && (await waiting('growth')) === 0)
    // A wait is taken again once places are free.
    await waitFor('the other team\'s job done', async () => (await stateOf(queued, KEYS.growth)) === 'done')
    expect((await get(`/api/v1/jobs/${queued}?wait=30`, KEYS.growth)).status).toBe(200)
  })

  it('a wait whose caller hung up gives its place back at once, not when its job changes', async () => {
    sg.sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const running = await ask('advertiserId=101&dateFrom=2025-05-01&dateTo=2025-05-31', KEYS.all)
    await waitFor('the job at the platform', () => sg.callerRequests().some((r) => r.path === REPORT_PATH && r.query.includes('2025-05-01')))
    // A dashboard's poll given up (its timeout, a page left): both places of the team taken, then left.
    const left = [new AbortController(), new AbortController()]
    const polls = left.map((c) => fetch(`${sg.url}/api/v1/jobs/${running}?wait=30`, { headers: { 'x-api-key': KEYS.all }, signal: c.signal }).catch(() => 'left'))
    await waitFor('two waits of the team held', async () => (await waiting('all')) === 2)
    for (const c of left) c.abort()
    expect(await Promise.all(polls)).toEqual(['left', 'left'])
    await waitFor('the places of the waits left given back', async () => (await waiting('all')) === 0)
    // The job has not changed: a new wait is held, not refused.
    const held = get(`/api/v1/jobs/${running}?wait=30`, KEYS.all)
    await waitFor('the new wait held', async () => (await waiting('all')) === 1)
    await waitFor('the job done', async () => {
      sg.sandbox.releaseHeld()
      return (await stateOf(running, KEYS.all)) === 'done'
    })
    expect((await held).status).toBe(200)
  })

  it('a wait on an ended job takes no place: answered at once, whatever the bounds', async () => {
    const id = await ask('advertiserId=101&dateFrom=2025-03-01&dateTo=2025-03-31', KEYS.all)
    await waitFor('the job done', async () => (await stateOf(id, KEYS.all)) === 'done')
    const answers = await Promise.all(Array.from({ length: 5 }, () => get(`/api/v1/jobs/${id}?wait=30`, KEYS.all)))
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200])
    expect(await waiting('all')).toBe(0)
  })
})
