import { execFileSync, execSync } from 'node:child_process'
import { mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, teamsYamlWith } from '../helpers/build-gateway.js'
import { useRedis, useSandbox } from '../helpers/fixtures.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'

// A rolling upgrade from the release at OLD (docs/operations/upgrade.md): replicas of
// the two versions run on one Redis and read each other's report jobs. A job whose result
// is the platform's answer passed on (a 200 it said not to store, a refusal) is the one
// whose record changed: its body is kept beside the record, no longer in it. Each version
// reads the other's record of such a job and answers a caller the result, or an error a
// caller acts on (a refusal's GW_PLATFORM_ANSWER), never a 500.
//
// The old replica is a build of commit OLD made in this file's set-up: its tree by `git
// archive` into a temporary directory, this checkout's node_modules linked in, built by
// tsc; the file is skipped (with a notice) where the repository's history lacks OLD.

const OLD = 'acbf44e'
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const { available } = redisAvailability()
const hasOld = (() => {
  try {
    execFileSync('git', ['cat-file', '-e', `${OLD}^{commit}`], { cwd: ROOT, stdio: 'ignore' })
    return true
  } catch {
    console.warn(`jobs-rolling-upgrade: commit ${OLD} is not in this checkout's history (a shallow clone?): the rolling upgrade test is skipped`)
    return false
  }
})()

const ASYNC = { prefer: 'respond-async' }
const HEADERS = { 'x-api-key': KEYS.all }
const YAML = teamsYamlWith({ jobs: { perReplica: 1 }, redis: { commandTimeout: '2s' } })
const ROWS = { rows: [{ date: '2025-01-01', spend: 1 }] }

/** The platform's answers a job keeps as its result, and what each version answers for them. */
const CASES = [
  { name: 'a no-store 200', status: 200, body: ROWS, headers: { 'cache-control': 'no-store' }, state: 'done' },
  { name: 'a refusal', status: 422, body: { message: 'invalid', errors: ['dateFrom'] }, headers: {}, state: 'failed' },
] as const

/** An answer's status, body, and what it says of caching. */
interface Answer {
  status: number
  body: string
  xCache: string | null
  cacheControl: string | null
}

interface Ended {
  id: string
  state: string
  /** The synchronous read's answer to the same report, as the job's result answers it. */
  sync: Answer
}

const answerOf = async (res: Response): Promise<Answer> => ({ status: res.status, body: await res.text(), xCache: res.headers.get('x-cache'), cacheControl: res.headers.get('cache-control') })

describe.skipIf(!available || !hasOld)(`report jobs across a rolling upgrade from ${OLD}`, () => {
  const sandbox = useSandbox()
  const redis = useRedis()
  const children: GatewayProcess[] = []
  let oldDir = ''

  beforeAll(() => {
    oldDir = mkdtempSync(join(tmpdir(), 'rgw-old-'))
    execSync(`git archive ${OLD} | tar -x -C ${oldDir}`, { cwd: ROOT, stdio: 'ignore' })
    symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(oldDir, 'node_modules'))
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: oldDir, stdio: 'ignore', timeout: 240_000 })
  }, 300_000)
  afterEach(async () => {
    for (const child of children.splice(0)) await child.close()
  })
  afterAll(() => {
    if (oldDir) rmSync(oldDir, { recursive: true, force: true })
  })

  const replica = async (version: 'old' | 'new'): Promise<GatewayProcess> => {
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.server.url }
    const gw = await spawnGateway({ env, yaml: YAML, ...(version === 'old' ? { main: join(oldDir, 'dist/main.js') } : {}) })
    children.push(gw)
    return gw
  }

  const state = async (gw: GatewayProcess, id: string): Promise<string> => ((await (await fetch(`${gw.url}/api/v1/jobs/${id}`, { headers: HEADERS })).json()) as { state: string }).state

  const queryOf = (i: number) => `advertiserId=101&dateFrom=2025-0${i + 1}-01&dateTo=2025-12-31`
  const answer = (c: (typeof CASES)[number]) => sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: c.status, body: c.body, headers: c.headers, times: 1 })
  /** The synchronous read of case `i`'s report on `gw`, the platform answering it as the case says. */
  const syncOf = async (gw: GatewayProcess, i: number): Promise<Response> => {
    answer(CASES[i] as (typeof CASES)[number])
    return fetch(`${gw.url}${REPORT_PATH}?${queryOf(i)}`, { headers: HEADERS })
  }

  /** Each case's job, asked of `gw` and run to its end there, beside the synchronous read of its report. */
  const endJobs = async (gw: GatewayProcess): Promise<Ended[]> => {
    const ended: Ended[] = []
    for (const [i, c] of CASES.entries()) {
      const sync = await syncOf(gw, i)
      answer(c)
      const asked = await fetch(`${gw.url}${REPORT_PATH}?${queryOf(i)}`, { headers: { ...HEADERS, ...ASYNC } })
      expect(asked.status).toBe(202)
      const { id } = (await asked.json()) as { id: string }
      await waitFor(`job ${id} ended`, async () => !['queued', 'running'].includes(await state(gw, id)), testTimeLeft(), 50)
      ended.push({ id, state: await state(gw, id), sync: await answerOf(sync) })
    }
    expect(ended.map((e) => e.state)).toEqual(CASES.map((c) => c.state))
    return ended
  }

  const result = async (gw: GatewayProcess, id: string): Promise<Answer> => answerOf(await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: HEADERS }))

  it('an old replica reads the jobs a new one ended: the no-store result as a report result (its body, not to be kept), the refusal as its GW_PLATFORM_ANSWER error; never a 500', async () => {
    const ended = await endJobs(await replica('new'))
    const old = await replica('old')
    const [noStore, refusal] = ended as [Ended, Ended]
    // The body as a report result, not to be kept by a cache (max-age=0).
    expect(await result(old, noStore.id)).toEqual({ ...noStore.sync, xCache: 'STALE', cacheControl: 'private, max-age=0' })
    const refused = await result(old, refusal.id)
    expect(refused.status).toBe(refusal.sync.status)
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'GW_PLATFORM_ANSWER', statusCode: refusal.sync.status })
    for (const e of ended) expect(await state(old, e.id)).toBe(e.state)
  }, startsTimeout(2))

  it('a new replica reads the jobs an old one ended: each result the platform\'s answer, as the synchronous read answers it', async () => {
    const ended = await endJobs(await replica('old'))
    const fresh = await replica('new')
    // As the new replica's own synchronous read answers it (its headers are the new version's).
    for (const [i, e] of ended.entries()) {
      expect({ state: await state(fresh, e.id), result: await result(fresh, e.id) }).toEqual({ state: e.state, result: await answerOf(await syncOf(fresh, i)) })
    }
  }, startsTimeout(2))
})
