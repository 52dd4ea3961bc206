import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'

// Contract, "Errors", 403 GW_FORBIDDEN: a team refused an advertiser, or a write, is told what
// to do about it: ask the operators to add the advertiser to the team's advertisers, or send
// writes with a key of a team that may write. Both were a bare `team X may not …`, which left
// a user guessing whether the id, the key or the gateway was wrong. The advertiser's words
// are the same whether another team's account or none of the platform's: they tell nothing of
// other teams (team `writer` may use 101 alone; the sandbox holds 102, not 999).

const sandbox = useSandbox()
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, SANDBOX_TEAMS_YAML))
beforeAll(() => sandbox.clearRequests())

const advertiserWords = (id: string) => `team writer may not use advertiser ${id}: a team's keys use only the advertisers its settings list; ask the gateway's operators to add it to team writer's advertisers`

describe('a 403 of the team scope', () => {
  it.each(['102', '999'])('of advertiser %s says to ask the operators to add it, in the same words for an account of another team and for none', async (id) => {
    const report = await gw.proxy.inject({ method: 'GET', url: `/api/v1/report/campaigns/get?advertiserId=${id}&dateFrom=2026-05-01&dateTo=2026-05-02`, headers: { 'x-api-key': KEYS.writer } })
    const proxied = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.writer, 'content-type': 'application/json' }, payload: { userId: Number(id) } })
    for (const res of [report, proxied]) {
      expect(res.statusCode).toBe(403)
      expect(res.json()).toEqual({ statusCode: 403, code: 'GW_FORBIDDEN', error: 'Forbidden', message: advertiserWords(id) })
    }
    expect(sandbox.requests).toHaveLength(0)
  })

  it('of a write from a team that may not write says to send it with a key of a team that may', async () => {
    const res = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/banner/create', headers: { 'x-api-key': KEYS.growth, 'content-type': 'application/json' }, payload: { userId: 101 } })
    expect(res.statusCode).toBe(403)
    expect(res.json().message).toBe("team growth may not send writes (POST /api/v1/campaign/banner/create): its settings let it read only; send writes with a key of a team that may write (write: true), which the gateway's operators give")
    expect(sandbox.requests).toHaveLength(0)
  })
})
