import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { KEYS, TEAMS_YAML, UPLOADER_KEY, withUploader } from '../helpers/build-gateway.js'
import { startSandboxGateway, type SandboxGateway } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'

// The platform's Laravel throttle counts every call of the token in one window, whichever
// team made it: the gateway shares that count out by weight once the platform has refused
// past it (docs/governor.md, "The platform's count, shared out"). Teams `all` and `uploader`
// (weight 1 each) share one credential; the sandbox counts 10 calls a window and refuses
// past them, as Laravel's throttle:api does.

const PATH = '/api/v1/report/campaigns/get'
const LIMIT = 10
const ADMIN_TOKEN = 'count-shares-admin-token-0123456789'

describe("the platform's count of the credential's calls, shared out by weight", () => {
  let s: SandboxGateway
  let day = 0
  /** The sandbox's throttle time while it stands still (null: the wall clock's). */
  let still: number | null = null
  beforeAll(async () => {
    // The platform's count is LIMIT from the gateway's start: its start probe reads it too.
    s = await startSandboxGateway({ yaml: withUploader(TEAMS_YAML), env: { ADMIN_TOKEN }, sandbox: { throttle: { limit: LIMIT }, throttleClock: () => still ?? Date.now() } })
  })
  afterAll(async () => {
    await s.close()
  })

  /** A report of its own for each read: every read reaches the platform. */
  const miss = async (key: string) => {
    const d = ++day
    const res = await request(`${s.url}${PATH}?advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-${String(1 + Math.floor(d / 28)).padStart(2, '0')}-${String(1 + (d % 28)).padStart(2, '0')}`, { headers: { 'x-api-key': key } })
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
  }

  it("keeps for a team that asked its share of the count: the other team's misses are refused by the gateway, not the platform, and the first team's calls go through", async () => {
    // The platform shows that it refuses past its count: a window of one second, spent by team all. Its time stands
    // still until the refusal, so every call falls in that window however long a loaded machine takes over them.
    still = Date.now()
    s.sandbox.setThrottle({ limit: LIMIT, windowMs: 1000, refuse: true })
    for (let i = 0; i <= LIMIT; i++) if ((await miss(KEYS.all)).status !== 200) break
    still = null
    await waitFor('the platform to have refused past its count', () => s.gw.governors.countOf('default')?.enforced === true)
    await waitFor("team all's pause to end", () => s.gw.governors.pausesOf('default').length === 0)
    // The count's own hold ends with the refusal's retry-after as the count read it, a moment after the pause's.
    await waitFor("the count's hold to end", () => (s.gw.governors.countOf('default')?.heldUntil ?? 0) <= Date.now())
    // A window longer than the test: every call below is counted in it.
    s.sandbox.setThrottle({ limit: LIMIT, windowMs: 600_000, refuse: true })
    s.sandbox.clearRequests()
    expect((await miss(UPLOADER_KEY)).status).toBe(200)

    const refusal = await (async () => {
      for (let i = 0; i < LIMIT; i++) {
        const answer = await miss(KEYS.all)
        if (answer.status !== 200) return answer
      }
      return null
    })()
    expect(refusal?.status).toBe(503)
    expect(JSON.parse(refusal?.body ?? '{}')).toMatchObject({ code: 'GW_OVERLOADED', message: expect.stringContaining("team all has used its share of the platform's call count") })
    expect(Number(refusal?.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    // An answer without a count (a route's 404: Laravel routes before its throttle) tells nothing of it: team all is still past its share.
    expect((await request(`${s.url}/api/v1/no-such-route/x`, { headers: { 'x-api-key': UPLOADER_KEY } })).statusCode).toBe(404)
    expect((await miss(KEYS.all)).status).toBe(503)
    // As the admin listener shows it.
    const status = (await s.gw.admin.inject({ method: 'GET', url: '/admin/status', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()
    const governor = status.governors[0]
    expect(governor.count).toMatchObject({ limit: LIMIT, enforced: true })
    expect(governor.refusals).toMatchObject({ count: 2 })
    const owed = governor.teams.find((t: { team: string }) => t.team === 'uploader') as { counted: number; countShare: number }
    expect(owed.countShare).toBe(LIMIT / 2)
    const rest = Math.ceil(owed.countShare - owed.counted)
    expect(rest).toBeGreaterThanOrEqual(1)
    for (let i = 0; i < rest; i++) expect((await miss(UPLOADER_KEY)).status).toBe(200)
    // Every call the gateway sent in this window was within the platform's count.
    expect(s.sandbox.requests.filter((r) => r.path === PATH).length).toBeLessThanOrEqual(LIMIT)
  })
})
