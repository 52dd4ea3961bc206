import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { GATEWAY_TEAM } from '../../src/platform/gateway-team.js'
import { TEAMS_YAML } from '../helpers/build-gateway.js'
import { OWNERSHIP_REQUEST_PREFIX } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, call, itLoggedNoSecret, newCampaign, useAttackGateway } from './attack-gateway.js'

// A scoped team's call naming a campaign (or a creative set) its accounts' lists lack makes
// the gateway load those lists again from the platform: every page of each of the team's
// accounts, a campaign list and a creative-set list each. A reload is held to one per
// advertiser per `ownership.refreshMinInterval`, except right after a write of the team
// (so that it may name the campaign it has just made). A writer that alternates a write
// and an id no one owns has every list of its accounts loaded again each round: here 2
// accounts of 3 to 6 campaigns at 1 a page, some 20 platform calls a round for one write of
// its own. Those calls are the team's: they count in its usage and take its share of the
// platform, not that of `(gateway)`, whose seats every team shares.

const MAKER_KEY = 'rgw_test_ownership_maker_key_0000000000000'
const YAML = `ownership:
  perPage: 1
  creativeSets: { check: lookup, listPath: /api/v1/creative-set/get }
${TEAMS_YAML.trimEnd()}
  maker:
    keys: ["${hashApiKey(MAKER_KEY)}"]
    advertisers: [101, 102]
    write: true
`
const CREATE = '/api/v1/campaign/banner/create'
const UNKNOWN = '/api/v1/campaign/banner/delete/101999?userId=101'

const sg = useAttackGateway({ yaml: YAML })

interface UsageRow { team: string; platformCalls: number }

async function platformCalls(team: string): Promise<number> {
  const res = await sg.gw.admin.inject({ method: 'GET', url: `/admin/usage?team=${encodeURIComponent(team)}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  expect(res.statusCode).toBe(200)
  return (res.json() as { usage: UsageRow[] }).usage.reduce((sum, row) => sum + row.platformCalls, 0)
}

const lookups = () => sg.sandbox.countRequests((r) => String(r.headers['x-request-id'] ?? '').startsWith(OWNERSHIP_REQUEST_PREFIX))

describe('a scoped writer alternating a write and a campaign no list holds', () => {
  it('has its accounts\' lists loaded again each round, as calls of its own', async () => {
    // The first round loads the lists (every team's, the gateway's own calls).
    expect((await call(sg, 'POST', CREATE, { key: MAKER_KEY, json: newCampaign(101) })).status).toBe(201)
    expect((await call(sg, 'DELETE', UNKNOWN, { key: MAKER_KEY })).status).toBe(403)
    const gatewayBefore = await platformCalls(GATEWAY_TEAM)
    const makerBefore = await platformCalls('maker')
    const lookupsBefore = lookups()
    const rounds = 5
    for (let i = 0; i < rounds; i++) {
      expect((await call(sg, 'POST', CREATE, { key: MAKER_KEY, json: newCampaign(101) })).status).toBe(201)
      const refused = await call(sg, 'DELETE', UNKNOWN, { key: MAKER_KEY })
      expect([refused.status, refused.json.code]).toEqual([403, 'GW_FORBIDDEN'])
    }
    const reloads = lookups() - lookupsBefore
    // Each round reloads both accounts' campaign and creative-set lists, page by page.
    expect(reloads).toBeGreaterThanOrEqual(rounds * 2 * 3)
    // None of them is the gateway's own: each is the team's, beside its write.
    expect(await platformCalls(GATEWAY_TEAM)).toBe(gatewayBefore)
    expect(await platformCalls('maker')).toBe(makerBefore + rounds + reloads)
  })
})

itLoggedNoSecret(sg, [MAKER_KEY])
