import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'

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
})
