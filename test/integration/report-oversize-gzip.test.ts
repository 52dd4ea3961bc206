import { gunzipSync, gzipSync } from 'node:zlib'
import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { answerOnce } from '../helpers/raw-answer.js'

// A report larger than cache.maxEntryBytes is sent on uncached (BYPASS): so too one the
// platform sends in gzip whose gzip fits within the bound while its JSON does not (a
// platform behind a compressing front server; JSON rows compress tenfold and more).

const sandbox = useSandbox()
let token: string
beforeAll(() => {
  token = sandbox.issueToken()
})
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token }, `${SANDBOX_TEAMS_YAML}cache:\n  maxEntryBytes: 64KiB\n`))

const ROWS = Buffer.from(JSON.stringify({ data: Array.from({ length: 4000 }, (_, i) => ({ date: '2026-01-01', campaignId: 1000 + i, impressions: i * 7, clicks: i, currency: 'USD' })) }))
const GZIP = gzipSync(ROWS)

describe('a report whose gzip fits within cache.maxEntryBytes and its JSON does not', () => {
  it('is sent on uncached (BYPASS), decoded to a caller that asks for no coding, in gzip to one that accepts it', async () => {
    expect(GZIP.length).toBeLessThan(64 * 1024)
    expect(ROWS.length).toBeGreaterThan(64 * 1024)
    const url = `${REPORT_PATH}?advertiserId=101&byCampaign=1&dateFrom=2026-01-01&dateTo=2026-01-01`
    answerOnce(sandbox, '200 OK', ['content-type: application/json', 'content-encoding: gzip'], GZIP)
    const plain = await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all } })
    expect(plain.statusCode, plain.body.slice(0, 200)).toBe(200)
    expect(plain.headers['x-cache']).toBe('BYPASS')
    expect(plain.rawPayload.equals(ROWS)).toBe(true)
    answerOnce(sandbox, '200 OK', ['content-type: application/json', 'content-encoding: gzip'], GZIP)
    const gzipped = await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all, 'accept-encoding': 'gzip' } })
    expect(gzipped.statusCode).toBe(200)
    expect(gzipped.headers['x-cache']).toBe('BYPASS')
    expect(gunzipSync(gzipped.rawPayload).equals(ROWS)).toBe(true)
  })
})
