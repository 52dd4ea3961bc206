import { gunzipSync, gzipSync } from 'node:zlib'
import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { answerOnce } from '../helpers/raw-answer.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

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

  // A job keeps its result beside its record, within cache.maxEntryBytes as a cached copy:
  // the bound is the decoded report's, whatever coding the platform sent it in.
  it('asked as a job (prefer: respond-async), fails 413 GW_JOB_RESULT_TOO_LARGE as a larger plain one does, cached or no-store', async () => {
    for (const [i, head] of [[], ['cache-control: no-store']].entries()) {
      const url = `${REPORT_PATH}?advertiserId=101&byCampaign=1&dateFrom=2026-01-0${i + 2}&dateTo=2026-01-0${i + 2}`
      answerOnce(sandbox, '200 OK', ['content-type: application/json', 'content-encoding: gzip', ...head], GZIP)
      const asked = await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
      expect(asked.statusCode).toBe(202)
      const { id } = asked.json<{ id: string }>()
      const status = async () => (await gw.proxy.inject({ method: 'GET', url: `/api/v1/jobs/${id}`, headers: { 'x-api-key': KEYS.all } })).json<{ state: string; error: { code: string; statusCode: number; message: string } | null }>()
      await waitFor(`job ${id} ended`, async () => !['queued', 'running'].includes((await status()).state), testTimeLeft(), 20)
      const ended = await status()
      expect({ i, state: ended.state, error: ended.error }).toEqual({ i, state: 'failed', error: expect.objectContaining({ code: 'GW_JOB_RESULT_TOO_LARGE', statusCode: 413 }) })
      expect(ended.error?.message).toContain('cache.maxEntryBytes')
      const result = await gw.proxy.inject({ method: 'GET', url: `/api/v1/jobs/${id}/result`, headers: { 'x-api-key': KEYS.all } })
      expect([result.statusCode, result.json<{ code: string }>().code]).toEqual([413, 'GW_JOB_RESULT_TOO_LARGE'])
    }
  })
})
