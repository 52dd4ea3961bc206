import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'

// Contract, "Report requests": a report's dates and switches in another spelling than the
// platform reads (`bydate=1`, `ByDate=1`, `date_from`, a POST body's `bydate`) are 400
// GW_BAD_QUERY naming the spelling to send, for every team. The platform's names are
// case-sensitive: such a read was sent on and answered 200 with another report than the
// one asked (totals, not rows by date), cached under a key of its own, with no word.

const sandbox = useSandbox()
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, SANDBOX_TEAMS_YAML), { listen: true })
beforeAll(() => sandbox.clearRequests())

const REPORT = '/api/v1/report/campaigns/get'
const QUERY = 'advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07'

async function read(target: string, init: { headers?: Record<string, string>; body?: unknown } = {}): Promise<{ status: number; json: Record<string, unknown> }> {
  const body = init.body === undefined ? undefined : JSON.stringify(init.body)
  const headers = { 'x-api-key': KEYS.all, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers }
  const res = await fetch(`${gw.url}${target}`, { method: body === undefined ? 'GET' : 'POST', headers, ...(body === undefined ? {} : { body }) })
  return { status: res.status, json: (await res.json()) as Record<string, unknown> }
}

describe('a report field spelled otherwise than the platform reads it', () => {
  it.each([
    ['bydate=1', 'bydate', 'byDate'],
    ['ByDate=1', 'ByDate', 'byDate'],
    ['bycampaign=true', 'bycampaign', 'byCampaign'],
    ['date_to=2026-01-31', 'date_to', 'dateTo'],
  ])('?%s is 400 GW_BAD_QUERY naming %s and the spelling to send; nothing reaches the platform', async (extra, field, reads) => {
    for (const headers of [{}, { prefer: 'respond-async' }] as Record<string, string>[]) {
      const res = await read(`${REPORT}?${QUERY}&${extra}`, { headers })
      expect([res.status, res.json.code, res.json.message]).toEqual([400, 'GW_BAD_QUERY', `${field}: the platform reads ${reads}; send it so`])
    }
    expect(sandbox.requests).toEqual([])
  })

  it('a POST report\'s body key is refused the same way', async () => {
    const res = await read(REPORT, { body: { campaignIds: [101001], dateFrom: '2026-01-01', dateTo: '2026-01-07', bydate: true } })
    expect([res.status, res.json.code, res.json.message]).toEqual([400, 'GW_BAD_QUERY', 'bydate: the platform reads byDate; send it so'])
    expect(sandbox.requests).toEqual([])
  })

  it('the platform\'s spelling reads the report by date', async () => {
    const res = await read(`${REPORT}?${QUERY}&byDate=1`)
    expect(res.status).toBe(200)
    expect((res.json.data as { date?: string }[])[0]?.date).toBe('2026-01-01')
  })
})
