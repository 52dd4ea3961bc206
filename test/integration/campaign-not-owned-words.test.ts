import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/build-gateway.js'
import { useSandboxGateway } from '../helpers/fixtures.js'

// A campaign none of a team's advertisers' lists holds is refused, whether there is no such
// campaign (deleted, mistyped) or it is another advertiser's: the gateway cannot tell which
// without saying that another's exists. The refusal says both, where it read as if the
// campaign surely were another team's.
const env = useSandboxGateway()

describe("a campaign that none of the team's advertisers lists", () => {
  it("is refused 403 saying it is none of its advertisers' campaigns: none such, or another's", async () => {
    for (const id of [109999, 201001]) {
      const res = await fetch(`${env.url}/api/v1/report/campaigns/get`, {
        method: 'POST',
        headers: { 'x-api-key': KEYS.writer, 'content-type': 'application/json' },
        body: JSON.stringify({ campaignIds: [id], dateFrom: '2026-05-01', dateTo: '2026-05-03' }),
      })
      expect(res.status).toBe(403)
      expect(await res.json()).toMatchObject({
        code: 'GW_FORBIDDEN',
        message: `team writer may not use campaign ${id}: it is none of its advertisers' campaigns as the platform lists them (no such campaign, or another advertiser's)`,
      })
    }
  })
})
