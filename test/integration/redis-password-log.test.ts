import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useRedis, useSandbox } from '../helpers/fixtures.js'
import { eachSecretAlone } from '../helpers/suspensions.js'

// Contract, "Logs": every configured secret is redacted from every line; the password of
// REDIS_URL is one, as REDIS_SENTINEL_PASSWORD is. A caller who puts it in a path or a
// user-agent finds it in no line, and a team's request holding it is refused as one holding
// any secret of the gateway's ("A secret of the gateway's in a request is refused").

// A password with a character the URL escapes: Redis gets it decoded.
const PASSWORD = 'redis-p@ssword-0123456789'
const URL_PASSWORD = encodeURIComponent(PASSWORD)
const ADMIN_TOKEN = 'redis-password-admin-token-0123456789'

const sandbox = useSandbox()
const redis = useRedis()
beforeAll(async () => {
  // The server asks the password from now on; the test's own client is signed in already.
  await redis.client.config('SET', 'requirepass', PASSWORD)
})
const gw = useGateway(() =>
  testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, REDIS_URL: redis.server.url.replace('redis://', `redis://:${URL_PASSWORD}@`) }, TEAMS_YAML),
)
eachSecretAlone(() => gw)

describe("REDIS_URL's password", () => {
  it('is reached with: the gateway signs in to Redis', async () => {
    const ready = await gw.admin.inject({ method: 'GET', url: '/readyz' })
    expect(ready.json()).toMatchObject({ redis: 'ok' })
  })

  it('in a path and a user-agent of a caller without a key is written [REDACTED] in its access line', async () => {
    for (const spelled of [PASSWORD, URL_PASSWORD]) {
      const res = await gw.proxy.inject({ method: 'GET', url: `/x/${spelled}`, headers: { 'user-agent': `probe ${PASSWORD}` } })
      expect(res.statusCode).toBe(404)
      expect(res.body).not.toContain(PASSWORD)
    }
    const text = gw.logs.text()
    expect(text).not.toContain(PASSWORD)
    expect(text).not.toContain(URL_PASSWORD)
    const lines = gw.logs.records().filter((r) => r.msg === 'request')
    // Percent-encoded, it is found as the platform would decode it: the whole path is redacted.
    expect(lines.map((r) => [r.path, r.userAgent])).toEqual([
      ['/x/[REDACTED]', 'probe [REDACTED]'],
      ['[REDACTED]', 'probe [REDACTED]'],
    ])
  })

  it("in a team's request target is refused as a secret of the gateway's, and never logged", async () => {
    const res = await gw.proxy.inject({ method: 'GET', url: `/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07&q=${URL_PASSWORD}`, headers: { 'x-api-key': KEYS.all } })
    expect(res.statusCode).toBe(400)
    expect(res.json().message).toMatch(/^request target: holds a secret of the gateway's/)
    expect(gw.logs.text()).not.toContain(PASSWORD)
  })

  it('put as the platform token is refused before any probe: the platform never gets it', async () => {
    sandbox.clearRequests()
    const res = await gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { token: PASSWORD } })
    expect(res.statusCode).toBe(400)
    expect(res.json().message).toBe("token: is a secret of the gateway's, which is never sent to the platform; the token in use stays (the value is not shown)")
    expect(sandbox.countRequests(() => true)).toBe(0)
  })
})
