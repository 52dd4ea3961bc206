import { describe, expect, it } from 'vitest'
import { REPORT_PATH, teamsYamlWith, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { distinctReport, proxyGet } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// Contract, "Errors", 502 GW_PLATFORM_AUTH: a read that waited for another replica's fill of
// its report, which the platform refused for the credential's token (a static token, no
// login: no later try passes), says so once and what to do, as the filler's read does. It
// said `the platform refused the gateway token: the platform refused the gateway token`.

const GATEWAY_SECRET = 'token-refused-replicas-secret-0123456'
const OPERATORS_ACT = "the gateway's operators must give it a token the platform accepts (its /readyz names the credential under degraded): retry once they have"

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)

describe.skipIf(!redisCheck.available)('a token the platform refuses, met by a fill another replica waits for (Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const gateways = useGateways()

  it('the waiting read says where the refusal was met and what to do, once', async () => {
    const token = sandbox.issueToken()
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token, REDIS_URL: redis.url, GATEWAY_SECRET }, teamsYamlWith({ cache: { refreshAhead: false } }))
    const [a, b] = [await gateways.build(config()), await gateways.build(config())]
    sandbox.revokeToken(token)
    sandbox.clearRequests()
    sandbox.setLatency(300)
    const report = distinctReport(1)
    const filler = proxyGet(a, report)
    await waitFor('the fill at the platform', () => sandbox.concurrency().inFlight > 0)
    const waiter = await proxyGet(b, report)
    const filled = await filler
    expect(sandbox.countRequests((r) => r.path === REPORT_PATH)).toBe(1)
    expect([filled.statusCode, filled.json().message]).toEqual([502, `the platform refused the gateway token: no new token could be had; ${OPERATORS_ACT}`])
    expect([waiter.statusCode, waiter.json().code, waiter.json().message]).toEqual([502, 'GW_PLATFORM_AUTH', `the platform refused the gateway token: on the replica that made the report's call; ${OPERATORS_ACT}`])
  })
})
