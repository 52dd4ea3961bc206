import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, REPORT_DATES, call, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// Attack: a timing oracle on other teams' reads through the memo of URLs (access/known-urls.ts).
// The memo serves a URL only to the teams whose own calls of it passed: to any other team the
// URL is to cost what a URL never seen costs, so that the time of its answer (a 403 included)
// tells nothing of another team's reads. The target and the form were worked out anew for such
// a team, but the search of the target for a secret of the gateway's was left out for every
// URL the memo kept, whoever's call kept it: a scoped team timing its own 403s on another
// advertiser's dashboard URL (7 KB long) read about 150 to 300 µs less where another team had
// read that URL (medians of 600 calls each, against none between two URLs never seen).
// Observed without a clock: a URL another team read before the text it holds became a secret
// of the gateway's (a token put in by PUT /admin/token) is searched as a URL never seen is,
// and refused (400); it was passed on (200). So is a URL of the caller's own team kept
// before: the memo keeps no URL past a change of the secrets it was searched for (it was
// passed on, the platform's own token in the query of its call).

const sg = useAttackGateway()
const REPORT = '/api/v1/report/campaigns/get'
const JSON_TYPE = { 'content-type': 'application/json' }

async function putToken(token: string): Promise<void> {
  const res = await sg.gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...JSON_TYPE }, payload: { token } })
  expect(res.statusCode).toBe(200)
}

describe("a URL another team's call kept in the memo is searched for the gateway's secrets as a URL never seen", () => {
  it('a report read (the entrance before the router, then the route) and a proxied call', async () => {
    const token = sg.sandbox.issueToken()
    const read = `${REPORT}?advertiserId=101&${REPORT_DATES}&note=${token}`
    const list = `/api/v1/campaign/get?note=${token}`
    // Team `all` reads both while the text is no secret: they pass, and the memo keeps them for `all`.
    expect((await call(sg, 'GET', read, { key: KEYS.all })).status).toBe(200)
    expect((await call(sg, 'POST', list, { key: KEYS.all, json: { userId: 101 } })).status).toBe(200)
    await putToken(token)
    sg.sandbox.clearRequests()
    // Control: a URL never seen holding the token now is refused (writer).
    const never = await call(sg, 'GET', `${REPORT}?note=${token}&advertiserId=101&${REPORT_DATES}`, { key: KEYS.writer })
    expect([never.status, never.json.code]).toEqual([400, 'GW_BAD_REQUEST'])
    // growth and limited send the URLs `all` read: each is a URL growth and limited never sent.
    const report = await call(sg, 'GET', read, { key: KEYS.growth })
    expect([report.status, report.json.code, report.json.message]).toEqual([400, 'GW_BAD_REQUEST', expect.stringContaining('request target: holds a secret')])
    const proxied = await call(sg, 'POST', list, { key: KEYS.limited, json: { userId: 101 } })
    expect([proxied.status, proxied.json.code, proxied.json.message]).toEqual([400, 'GW_BAD_REQUEST', expect.stringContaining('request target: holds a secret')])
    // None of them reached the platform with its token in the query.
    expect(sg.callerRequests()).toEqual([])
  })

  it("and so is one the caller's own team called before the text in it became a secret", async () => {
    const token = sg.sandbox.issueToken()
    const list = `/api/v1/campaign/get?note=${token}`
    expect((await call(sg, 'POST', list, { key: KEYS.all, json: { userId: 101 } })).status).toBe(200)
    await putToken(token)
    sg.sandbox.clearRequests()
    const again = await call(sg, 'POST', list, { key: KEYS.all, json: { userId: 101 } })
    expect([again.status, again.json.code, again.json.message]).toEqual([400, 'GW_BAD_REQUEST', expect.stringContaining('request target: holds a secret')])
    // The platform was not sent its own token in a query (where its access log keeps it).
    expect(sg.callerRequests()).toEqual([])
  })
})

itLoggedNoSecret(sg)
