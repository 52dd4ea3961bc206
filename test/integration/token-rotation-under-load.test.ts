import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { KEYS, sandboxLoginEnv, teamsYamlWith, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { settled, waitFor } from '../helpers/wait.js'

// The token is rotated by file, by admin call and by re-login while
// two replicas serve a steady stream of requests, and none of them fails. Each rotation
// is followed, once every replica switched, by the platform revoking the old token, as
// ops would do it.

const ADMIN_TOKEN = 'load-admin-token-0123456789abcdef'
const GATEWAY_SECRET = 'load-gateway-secret-0123456789ab'
const STREAM_WORKERS = 4
const STREAM_MAX_REQUESTS = 5_000
// Requests the stream must finish before, between and after the rotations: counted, not
// timed, so a loaded machine slows the test down instead of thinning the stream out.
const PHASE_REQUESTS = 30

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)

describe.skipIf(!redisCheck.available)('rotation under a steady stream of requests, two replicas', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const gateways = useGateways()
  // The streams of the test that ran: stopped before its gateways close (after-hooks run in
  // reverse order), so that a test failing mid-stream leaves no worker calling a closed gateway.
  const streams: { halt: () => void }[] = []
  afterEach(() => {
    for (const running of streams.splice(0)) running.halt()
  })
  let dir: string

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rgw-load-'))
  })

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  async function replicas(env: Record<string, string>): Promise<[TestGateway, TestGateway]> {
    // Team all's no-cache reaches the platform whatever the copy's age.
    const make = () => gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, GATEWAY_SECRET, REDIS_URL: redis.url, ...env }, teamsYamlWith({ cache: { refreshMinAge: 0 } })))
    return [await settled('the first replica to start', make()), await settled('the second replica to start', make())]
  }

  /**
   * Requests both replicas in turn until stopped: reports asked with no-cache (so each
   * one reaches the platform) and proxied reads. `served(count)` resolves once `count`
   * more requests finished (both replicas served some); `stop` resolves to every status seen.
   */
  function stream(pair: [TestGateway, TestGateway]): { served: (count: number) => Promise<void>; stop: () => Promise<number[]> } {
    const statuses: number[] = []
    let running = true
    let n = 0
    let inFlight = 0
    streams.push({ halt: () => (running = false) })
    const worker = async () => {
      while (running && n < STREAM_MAX_REQUESTS) {
        const gw = pair[n % 2] as TestGateway
        const report = n % 3 !== 0
        n += 1
        inFlight += 1
        const res = report
          ? await gw.proxy.inject({
              method: 'GET',
              url: '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07',
              headers: { 'x-api-key': KEYS.all, 'cache-control': 'no-cache' },
            })
          : await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all }, payload: { userId: 101 } })
        inFlight -= 1
        statuses.push(res.statusCode)
      }
    }
    const workers = Array.from({ length: STREAM_WORKERS }, worker)
    return {
      served: async (count) => {
        const target = statuses.length + count
        await waitFor(() => `${count} more requests (${statuses.length} of ${target} done)`, () => statuses.length >= target)
      },
      stop: async () => {
        running = false
        await settled(() => `the stream's requests in flight to be answered (${inFlight} left)`, Promise.all(workers))
        return statuses
      },
    }
  }

  /** Waits until both replicas hold `token`, then has the platform revoke `old`. */
  async function switchedThenRevoke(pair: TestGateway[], token: () => string | undefined, old: string): Promise<void> {
    await waitFor('both replicas on the new token', () => {
      const t = token()
      return !!t && t !== old && pair.every((gw) => gw.tokens.get('default').current()?.token === t)
    })
    expect(pair.map((gw) => gw.tokens.get('default').current()?.token)).not.toContain(old)
    sandbox.revokeToken(old)
  }

  function expectAllServed(statuses: number[]): void {
    expect(statuses.length).toBeGreaterThan(50)
    expect(statuses.filter((s) => s !== 200)).toEqual([])
  }

  it('by file (a Kubernetes symlink swap) and then by admin call: no request fails', async () => {
    // The layout of a mounted Secret: token -> ..data/token, ..data -> a timestamped folder.
    const secretDir = join(dir, 'secret')
    const publish = (version: string, token: string) => {
      mkdirSync(join(secretDir, version), { recursive: true })
      writeFileSync(join(secretDir, version, 'token'), token)
      symlinkSync(version, join(secretDir, '..data_tmp'))
      renameSync(join(secretDir, '..data_tmp'), join(secretDir, '..data'))
    }
    const first = sandbox.issueToken()
    publish('..2026_11_22_01', first)
    const file = join(secretDir, 'token')
    symlinkSync('..data/token', file)
    const pair = await replicas({ PLATFORM_TOKEN_FILE: file })
    const load = stream(pair)
    await load.served(PHASE_REQUESTS)

    const second = sandbox.issueToken()
    publish('..2026_11_22_02', second)
    await switchedThenRevoke(pair, () => second, first)
    await load.served(PHASE_REQUESTS)

    const third = sandbox.issueToken()
    const put = await settled('PUT /admin/token', pair[0].admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { token: third } }))
    expect(put.statusCode).toBe(200)
    await switchedThenRevoke(pair, () => third, second)
    await load.served(PHASE_REQUESTS)

    expectAllServed(await load.stop())
    const seen = new Set(sandbox.requests.map((r) => r.headers.authorization))
    expect(seen).toContain(`Bearer ${second}`)
    expect(seen).toContain(`Bearer ${third}`)
  })

  it('by re-login (POST /admin/token/refresh) with a password login: no request fails', async () => {
    const pair = await replicas(sandboxLoginEnv(sandbox))
    const before = pair[1].tokens.get('default').current()?.token as string
    const load = stream(pair)
    await load.served(PHASE_REQUESTS)

    const refreshed = await settled('POST /admin/token/refresh', pair[0].admin.inject({ method: 'POST', url: '/admin/token/refresh', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }))
    expect(refreshed.statusCode).toBe(200)
    const fresh = () => pair[0].tokens.get('default').current()?.token
    await switchedThenRevoke(pair, fresh, before)
    await load.served(PHASE_REQUESTS)

    expectAllServed(await load.stop())
    expect(sandbox.requests.some((r) => r.headers.authorization === `Bearer ${fresh()}`)).toBe(true)
  })
})
