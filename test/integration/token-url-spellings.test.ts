import { describe, expect, it } from 'vitest'
import { KEYS, TEAMS_YAML, sandboxLoginEnv, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { tokenOf } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'

// One token endpoint written two ways (the path `/oauth/token` resolved on
// PLATFORM_BASE_URL, and the whole URL it resolves to) is one login: a replica started
// with the other spelling takes the token an operator put in place, as a replica of the
// same spelling does, and reads the report copies the first one filled. Before, the
// login's account was digested from PLATFORM_TOKEN_URL as written: the second replica
// logged in at its start, and its token replaced the operator's on every replica.

const { available } = redisAvailability()

const ADMIN_TOKEN = 'token-url-admin-token-0123456789abcdef'
const GATEWAY_SECRET = 'token-url-gateway-secret-0123456789'
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&byCampaign=1&dateFrom=2026-01-01&dateTo=2026-01-07'

describe.skipIf(!available)('one token endpoint in two spellings (Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const gateways = useGateways({
    check: (open) => {
      for (const gw of open) expect(gw.logs.text()).not.toMatch(/redis unavailable|could not be shared/)
    },
  })

  function replica(tokenUrl: string): Promise<TestGateway> {
    const env = { PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), PLATFORM_TOKEN_URL: tokenUrl, ADMIN_TOKEN, REDIS_URL: redis.url, GATEWAY_SECRET }
    return gateways.build(testConfig(env, TEAMS_YAML))
  }

  const logins = () => sandbox.countRequests((r) => r.path === '/oauth/token')

  /** A replica of `first`, the token an operator put there, then a replica of `second`: it takes that token and makes no login. */
  async function takesTheOperatorsToken(first: string, second: string): Promise<void> {
    const a = await replica(first)
    expect(logins()).toBe(1)
    const put = sandbox.issueToken()
    const answer = await a.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { token: put } })
    expect(answer.statusCode).toBe(200)

    const b = await replica(second)
    expect({ b: tokenOf(b) === put, logins: logins() }).toEqual({ b: true, logins: 1 })
    expect(b.tokens.get('default').current()?.source).toBe('shared')
    // A keeps the operator's token: B stored nothing of its own.
    expect(tokenOf(a)).toBe(put)
  }

  it('a replica started with the whole URL takes the token an operator put on a replica of the path, and makes no login', async () => {
    await takesTheOperatorsToken('/oauth/token', `${sandbox.url}/oauth/token`)
  })

  // RFC 3986, 6.2.2.1: `%2f` and `%2F` are one octet.
  it('a replica whose token URL writes a percent-escape in capitals takes the token an operator put on a replica of the same URL in small letters, and makes no login', async () => {
    await takesTheOperatorsToken('/oauth/token?realm=ops%2fwest', `${sandbox.url}/oauth/token?realm=ops%2Fwest`)
  })

  it('a replica started with the whole URL reads the report copies a replica of the path filled', async () => {
    const a = await replica('/oauth/token')
    const filled = await a.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })
    expect(filled.headers['x-cache']).toBe('MISS')
    const b = await replica(`${sandbox.url}/oauth/token`)
    const read = await b.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })
    expect({ status: read.statusCode, cache: read.headers['x-cache'] }).toEqual({ status: 200, cache: 'HIT' })
  })
})
