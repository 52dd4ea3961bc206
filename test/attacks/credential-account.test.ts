import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KEYS, sandboxLoginEnv, teamsYamlWith, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A credential is a name in the configuration; the account its token acts for is the
// platform's. A rollout that points the credential at another account (another
// customer's token, under the same name, the same Redis) must leave the first account's
// report copies to nobody: the new account's teams read what the platform lets that
// account read. Before, a copy's key held the credential's name alone, so that a team of
// the new account read the old account's advertisers from Redis (a HIT, for 24 hours of a
// settled report), where the platform answers it 403.

const { available } = redisAvailability()

const SECRET = 'credential-account-test-secret-000000000'
const ADMIN_TOKEN = 'credential-account-admin-token-0123456789'
const NORTHWIND_KEY = 'rgw_test_northwind_key_99999999999999999999'
// Northwind's (account 200's) team, every advertiser its token reads.
const NORTHWIND_TEAMS = `
teams:
  northwind:
    keys: ["${hashApiKey(NORTHWIND_KEY)}"]
    advertisers: ["*"]
`
// A settled week of Acme's advertiser 101 (account 100's child).
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&byCampaign=1&dateFrom=2026-01-01&dateTo=2026-01-07'
const ACME_SCOPED_KEY = 'rgw_test_acme_scoped_key_111111111111111111'
const NORTHWIND_SCOPED_KEY = 'rgw_test_northwind_scoped_key_2222222222222'
// Teams limited to one advertiser each: Acme's 101 and Northwind's 201, whose campaign ids
// the gateway checks against each advertiser's campaign list.
const SCOPED_TEAMS = `
teams:
  acme101:
    keys: ["${hashApiKey(ACME_SCOPED_KEY)}"]
    advertisers: [101]
  northwind201:
    keys: ["${hashApiKey(NORTHWIND_SCOPED_KEY)}"]
    advertisers: [201]
`
const campaignReport = (advertiser: number) => `/api/v1/report/campaigns/get?advertiserId=${advertiser}&campaignIds[]=${advertiser}001&byCampaign=1&dateFrom=2026-01-01&dateTo=2026-01-07`
/** The status of the job at `job` once it ended (done or failed). */
async function ended(gw: { proxy: { inject: (o: object) => Promise<{ json: () => unknown }> } }, job: string): Promise<{ state?: string; error?: { code?: string } }> {
  let status: { state?: string; error?: { code?: string } } = {}
  await waitFor(`job ${job} ended`, async () => {
    status = (await gw.proxy.inject({ method: 'GET', url: job, headers: { 'x-api-key': KEYS.all } })).json() as typeof status
    return status.state === 'failed' || status.state === 'done'
  })
  return status
}
const putToken = (gw: { admin: { inject: (o: object) => Promise<{ statusCode: number }> } }, token: string) =>
  gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, payload: { token } })

describe.skipIf(!available)('a credential moved to another account by a rollout', () => {
  const sandbox = useSandbox()
  const { server } = useRedis()
  const gateways = useGateways()

  const start = (token: string, yaml?: string) => gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token, REDIS_URL: server.url, GATEWAY_SECRET: SECRET, ADMIN_TOKEN }, yaml))

  it('serves none of the first account\'s report copies to the new account\'s team', async () => {
    const acme = await start(sandbox.issueToken())
    const filled = await acme.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })
    expect(filled.statusCode).toBe(200)
    expect(filled.headers['x-cache']).toBe('MISS')
    expect(JSON.stringify(filled.json())).toContain('101001')
    await acme.close()

    // The same credential name (default), now Northwind's token, and Northwind's team.
    const northwind = await start(sandbox.issueToken({ accountId: 200 }), NORTHWIND_TEAMS)
    sandbox.clearRequests()
    const read = await northwind.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': NORTHWIND_KEY } })
    // The platform's answer to account 200 (403), not Acme's copy (on main: 200, HIT, Acme's rows).
    expect({ status: read.statusCode, cache: read.headers['x-cache'] }).toEqual({ status: 403, cache: 'BYPASS' })
    expect(read.body).not.toContain('101001')
    expect(sandbox.countRequests((r) => r.path === '/api/v1/report/campaigns/get')).toBe(1)
  })

  it('serves none of them once an operator puts another account\'s token in place of the credential\'s', async () => {
    const gw = await start(sandbox.issueToken())
    const read = () => gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })
    // Twice: the second read is decided from the URL's kept form (its key with it).
    expect((await read()).headers['x-cache']).toBe('MISS')
    expect((await read()).headers['x-cache']).toBe('HIT')
    const put = await gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, payload: { token: sandbox.issueToken({ accountId: 200 }) } })
    expect(put.statusCode).toBe(200)
    const after = await read()
    // The platform's answer to account 200 (403), not account 100's copy.
    expect({ status: after.statusCode, cache: after.headers['x-cache'] }).toEqual({ status: 403, cache: 'BYPASS' })
    expect(after.body).not.toContain('101001')
  })

  it('keeps the copies through a rotation to another token of the same account', async () => {
    const first = await start(sandbox.issueToken())
    expect((await first.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })).headers['x-cache']).toBe('MISS')
    await first.close()
    const rotated = await start(sandbox.issueToken())
    expect((await rotated.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })).headers['x-cache']).toBe('HIT')
  })

  it('serves none of a password login\'s copies once an operator puts another account\'s token on that credential', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), REDIS_URL: server.url, GATEWAY_SECRET: SECRET, ADMIN_TOKEN }))
    const read = () => gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })
    // The login acts for account 100 (the sandbox's demo user).
    expect((await read()).headers['x-cache']).toBe('MISS')
    expect((await read()).headers['x-cache']).toBe('HIT')
    expect((await putToken(gw, sandbox.issueToken({ accountId: 200 }))).statusCode).toBe(200)
    const after = await read()
    // The platform's answer to account 200 (403), not the login's copy (on main: 200, HIT, account 100's rows).
    expect({ status: after.statusCode, cache: after.headers['x-cache'] }).toEqual({ status: 403, cache: 'BYPASS' })
    expect(after.body).not.toContain('101001')
  })

  it('stores a fill under the account its call was sent for, not the one it was asked for', async () => {
    const acme = sandbox.issueToken()
    const gw = await start(acme)
    const read = () => gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })
    const reportCalls = () => sandbox.countRequests((r) => r.path === '/api/v1/report/campaigns/get')
    // A token that names no user is an account of its own to the gateway (its digest); the
    // sandbox lets it read advertiser 101, so that its answer is a 200 to keep.
    const other = 'credential-account-opaque-token-0123456789'
    sandbox.acceptToken(other, 100)
    // The fill asked for Acme's JWT (sub 100) is held at the platform's front; meanwhile an
    // operator puts the other token in place and Acme's is revoked: the call is answered 401
    // and sent again with the token in use, the other account's.
    sandbox.setRouteFailure('/api/v1/report/campaigns/get', { kind: 'held', times: 1 })
    const filling = read()
    await waitFor('the fill held at the platform', () => sandbox.concurrency().held === 1)
    expect((await putToken(gw, other)).statusCode).toBe(200)
    sandbox.revokeToken(acme)
    sandbox.releaseHeld()
    const filled = await filling
    expect({ status: filled.statusCode, cache: filled.headers['x-cache'] }).toEqual({ status: 200, cache: 'MISS' })
    // Back to a token of sub 100 while that copy is fresh: none is kept for it (on main: a
    // HIT of the copy the other account's call filled).
    expect((await putToken(gw, sandbox.issueToken())).statusCode).toBe(200)
    sandbox.clearRequests()
    expect((await read()).headers['x-cache']).toBe('MISS')
    expect(reportCalls()).toBe(1)
    // The other account's copy is its own: read with its token again, a HIT.
    expect((await putToken(gw, other)).statusCode).toBe(200)
    expect((await read()).headers['x-cache']).toBe('HIT')
    expect(reportCalls()).toBe(1)
  })

  it('checks a scoped team\'s campaign ids against the lists of the account the credential acts for now, not the one before', async () => {
    const gw = await start(sandbox.issueToken(), SCOPED_TEAMS)
    const read = () => gw.proxy.inject({ method: 'GET', url: campaignReport(201), headers: { 'x-api-key': NORTHWIND_SCOPED_KEY } })
    // Acme's token reads no campaign of Northwind's 201: its list, as Acme's token sees it, is empty.
    const before = await read()
    expect({ status: before.statusCode, code: before.json().code }).toEqual({ status: 403, code: 'GW_FORBIDDEN' })
    expect((await putToken(gw, sandbox.issueToken({ accountId: 200 }))).statusCode).toBe(200)
    // Northwind's token reads 201's campaigns: its list says 201001 is 201's (on main: the
    // list Acme's token loaded, a wrong 403 until it reloads, refreshMinInterval later).
    const after = await read()
    expect(after.statusCode).toBe(200)
    expect(after.body).toContain('201001')
  })

  it('lets a list kept for the account before through nothing the account now could not read (never wider)', async () => {
    const gw = await start(sandbox.issueToken(), SCOPED_TEAMS)
    const read = () => gw.proxy.inject({ method: 'GET', url: campaignReport(101), headers: { 'x-api-key': ACME_SCOPED_KEY } })
    expect((await read()).statusCode).toBe(200)
    expect((await putToken(gw, sandbox.issueToken({ accountId: 200 }))).statusCode).toBe(200)
    // Acme's list of 101 says 101001 is 101's; Northwind's token may read none of it.
    const after = await read()
    expect(after.statusCode).toBe(403)
    expect(after.json().data).toBeUndefined()
  })

  it('reads a report job\'s result only while its credential acts for the account the job was asked for', async () => {
    const gw = await start(sandbox.issueToken())
    const asked = await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.statusCode).toBe(202)
    const job = asked.headers.location as string
    await waitFor('the job done', async () => (await gw.proxy.inject({ method: 'GET', url: job, headers: { 'x-api-key': KEYS.all } })).json().state === 'done')
    const result = () => gw.proxy.inject({ method: 'GET', url: `${job}/result`, headers: { 'x-api-key': KEYS.all } })
    expect((await result()).statusCode).toBe(200)
    // The same team name, its credential now Northwind's token: Acme's figures are not its
    // to read (on main: 200, Acme's rows, for the job's whole jobs.keep).
    expect((await putToken(gw, sandbox.issueToken({ accountId: 200 }))).statusCode).toBe(200)
    const after = await result()
    expect({ status: after.statusCode, code: after.json().code }).toEqual({ status: 403, code: 'GW_FORBIDDEN' })
    expect(after.body).not.toContain('101001')
    // Back to a token of Acme's: its result again.
    expect((await putToken(gw, sandbox.issueToken())).statusCode).toBe(200)
    expect((await result()).statusCode).toBe(200)
  })

  it('runs no job asked for the account before: one that starts after the change ends 403 with no platform call', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, GATEWAY_SECRET: SECRET, ADMIN_TOKEN }, teamsYamlWith({ jobs: { perReplica: 1 } })))
    const ask = (url: string) => gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    // The one run slot is taken by a job held at the platform; the second waits in the queue.
    sandbox.setRouteFailure('/api/v1/report/campaigns/get', { kind: 'held', times: 1 })
    const first = await ask(REPORT.replace('2026-01-07', '2026-01-06'))
    expect(first.statusCode).toBe(202)
    await waitFor('the first job held at the platform', () => sandbox.concurrency().held === 1)
    const second = await ask(REPORT)
    expect(second.statusCode).toBe(202)
    expect((await putToken(gw, sandbox.issueToken({ accountId: 200 }))).statusCode).toBe(200)
    sandbox.clearRequests()
    sandbox.releaseHeld()
    const job = second.headers.location as string
    const status = await ended(gw, job)
    expect({ state: status.state, code: status.error?.code }).toEqual({ state: 'failed', code: 'GW_FORBIDDEN' })
    expect(sandbox.countRequests((r) => r.path === '/api/v1/report/campaigns/get' && r.query.includes('2026-01-07'))).toBe(0)
  })

  it('keeps no job result answered to a token of another account than the job was asked for', async () => {
    const acme = sandbox.issueToken()
    const gw = await start(acme)
    // As in the fill's case above: an opaque token the sandbox lets read advertiser 101.
    const other = 'credential-account-opaque-token-job-0123456789'
    sandbox.acceptToken(other, 100)
    sandbox.setRouteFailure('/api/v1/report/campaigns/get', { kind: 'held', times: 1 })
    const asked = await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.statusCode).toBe(202)
    // The job has started (its account checked) and its call is held; the token changes and
    // Acme's is revoked: the call is answered 401 and sent again with the other account's.
    await waitFor('the job\'s call held at the platform', () => sandbox.concurrency().held === 1)
    expect((await putToken(gw, other)).statusCode).toBe(200)
    sandbox.revokeToken(acme)
    sandbox.releaseHeld()
    const job = asked.headers.location as string
    const status = await ended(gw, job)
    // On main: done, its result the other account's answer, read by Acme's team once a token of Acme's is back.
    expect({ state: status.state, code: status.error?.code }).toEqual({ state: 'failed', code: 'GW_FORBIDDEN' })
    expect((await putToken(gw, sandbox.issueToken())).statusCode).toBe(200)
    expect((await gw.proxy.inject({ method: 'GET', url: `${job}/result`, headers: { 'x-api-key': KEYS.all } })).statusCode).toBe(403)
  })
})
