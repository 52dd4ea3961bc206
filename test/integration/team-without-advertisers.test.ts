import { beforeAll, describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KEYS, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'

// `npm run keys -- new --team fresh` without --advertisers writes `advertisers: []` (the team
// reads nothing yet); a team given such a key is told why each of its calls is refused: its
// settings name no advertiser, not that this one advertiser is not its.
const FRESH_KEY = 'rgw_test_fresh_key_6666666666666666666666666'
const YAML = `${TEAMS_YAML.trimEnd()}
  fresh:
    keys: ["${hashApiKey(FRESH_KEY)}"]
    advertisers: [] # the advertiser ids this team may read, or ["*"] for all
`
const sandbox = useSandbox()
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, YAML))
// The start's token probe is the gateway's own call.
beforeAll(() => sandbox.clearRequests())

describe('a team whose advertisers are none', () => {
  const noAdvertiser = 'team fresh may not use advertiser 101: its settings name no advertiser (advertisers: []); an operator lists the ids it may use in its advertisers'
  it('is refused 403 saying its settings name no advertiser, on a report and on a proxied call, and calls nothing', async () => {
    const report = await gw.proxy.inject({ method: 'GET', url: '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-05-01&dateTo=2026-05-02', headers: { 'x-api-key': FRESH_KEY } })
    expect(report.statusCode).toBe(403)
    expect(report.json()).toMatchObject({ code: 'GW_FORBIDDEN', message: noAdvertiser })
    const listed = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': FRESH_KEY, 'content-type': 'application/json' }, payload: { userId: 101 } })
    expect(listed.statusCode).toBe(403)
    expect(listed.json()).toMatchObject({ code: 'GW_FORBIDDEN', message: noAdvertiser })
    expect(sandbox.requests).toHaveLength(0)
  })

  it("leaves a team with advertisers told the one it may not use, as before", async () => {
    const res = await gw.proxy.inject({ method: 'GET', url: '/api/v1/report/campaigns/get?advertiserId=103&dateFrom=2026-05-01&dateTo=2026-05-02', headers: { 'x-api-key': KEYS.growth } })
    expect(res.json().message).toBe("team growth may not use advertiser 103: a team's keys use only the advertisers its settings list; ask the gateway's operators to add it to team growth's advertisers")
  })
})
