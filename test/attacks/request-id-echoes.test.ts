import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, TEAMS_YAML, sandboxLoginEnv, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'

// A keyed caller's x-request-id names its request (it comes back in the answer) unless it
// holds a secret of the gateway's: so the echo answers a guess at the login's password, an
// id of 128 characters a few candidates at once. A call the gateway's checks search refuses
// such an id 400 and suspends the team (secret-suspension.test.ts): one hit a period. The
// answers no check searches (the health calls, OPTIONS, a path the proxy listener does not
// serve) and a suspended team's 403 told the same by the echo alone, with nothing
// suspended: every guess answered, before a suspension and after it.

const ADMIN_TOKEN = 'echo-oracle-admin-token-0123456789abcdef'
const sandbox = useSandbox()
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN }, TEAMS_YAML), { listen: true })

/** A text of the password's length and characters that is none of the gateway's secrets. */
const decoyOf = (secret: string): string => `${secret.slice(0, -1)}${secret.endsWith('x') ? 'y' : 'x'}`

/** What a caller tells of an answer: its status, its code, and whether it carries the caller's x-request-id. */
async function seen(method: string, path: string, id: string): Promise<{ status: number; code: string | undefined; echoed: boolean }> {
  const res = await fetch(`${gw.url}${path}`, { method, headers: { 'x-api-key': KEYS.all, 'x-request-id': id } })
  const text = await res.text()
  const code = text.startsWith('{') ? (JSON.parse(text) as { code?: string }).code : undefined
  return { status: res.status, code, echoed: res.headers.get('x-request-id') === id }
}

/** Whether team `all` is refused as suspended now. */
async function suspended(): Promise<boolean> {
  const res = await fetch(`${gw.url}/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07`, { headers: { 'x-api-key': KEYS.all } })
  return ((await res.json()) as { code?: string }).code === 'GW_TEAM_SUSPENDED'
}

// Answers of calls no check of the gateway's searches for a secret.
const UNSEARCHED: [string, string][] = [
  ['GET', '/readyz'],
  ['GET', '/healthz'],
  ['OPTIONS', '/api/v1/report/campaigns/get'],
  ['GET', '/nowhere'],
]

describe('a keyed caller guessing at the login\'s password through its x-request-id', () => {
  afterEach(async () => {
    await gw.admin.inject({ method: 'DELETE', url: '/admin/suspensions/all', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  })

  it.each(UNSEARCHED)('on %s %s: a miss is echoed and suspends nothing; the hit suspends the team, as its refusal on a searched call does', async (method, path) => {
    const password = sandbox.credentials.password
    const miss = await seen(method, path, decoyOf(password))
    expect(miss.echoed).toBe(true)
    expect(await suspended()).toBe(false)
    const hit = await seen(method, path, password)
    expect(hit.echoed).toBe(false)
    expect(await suspended()).toBe(true)
    expect(gw.logs.text()).not.toContain(password)
  })

  it('once suspended, is answered alike whether its id holds the password or not, on every call', async () => {
    const password = sandbox.credentials.password
    expect((await seen('GET', '/api/v1/campaign/list?userId=101', password)).status).toBe(400)
    expect(await suspended()).toBe(true)
    for (const [method, path] of [...UNSEARCHED, ['GET', '/api/v1/campaign/list?userId=101'], ['GET', '/api/v1/jobs/x']] as [string, string][]) {
      expect(await seen(method, path, password), `${method} ${path}`).toEqual(await seen(method, path, decoyOf(password)))
    }
  })
})
