import { describe, expect, it } from 'vitest'
import { request } from 'undici'
import { hashApiKey } from '../../src/access/api-keys.js'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { KEYS } from '../helpers/sandbox-gateway.js'

// A report answer is `cache-control: private, max-age=N`: a browser keeps it. A browser
// keys its cache by URL and by the request headers the answer's `vary` names, so an answer
// that varied on `accept-encoding` alone would be served from the cache of a browser that
// holds it to a request with another team's key, one the gateway refuses (403): the other
// team would see advertisers not its own without asking the gateway. Every answer of an
// entry varies on both headers that carry a key.

const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07&byDate=1'
const env = useSandboxGateway({
  yaml: `teams:
  growth:
    keys: ["${hashApiKey(KEYS.growth)}"]
    advertisers: [101, 102]
  other:
    keys: ["${hashApiKey(KEYS.writer)}"]
    advertisers: [103]
`,
})

async function get(headers: Record<string, string>) {
  const res = await request(`${env.url}${REPORT}`, { headers })
  await res.body.arrayBuffer()
  return { status: res.statusCode, headers: res.headers }
}

const VARY = 'accept-encoding, authorization, x-api-key'

describe('a report answer in a browser cache', () => {
  it('varies on the headers that carry a key: a copy kept for one key is not one for another', async () => {
    const miss = await get({ 'x-api-key': KEYS.growth, 'accept-encoding': 'gzip' })
    expect(miss).toMatchObject({ status: 200, headers: { 'x-cache': 'MISS', vary: VARY } })
    // A hit before the router, plain and gzip, and its 304.
    const hit = await get({ authorization: `Bearer ${KEYS.growth}` })
    expect(hit).toMatchObject({ status: 200, headers: { 'x-cache': 'HIT', vary: VARY } })
    const gzip = await get({ 'x-api-key': KEYS.growth, 'accept-encoding': 'gzip' })
    expect(gzip).toMatchObject({ status: 200, headers: { 'x-cache': 'HIT', 'content-encoding': 'gzip', vary: VARY } })
    const notModified = await get({ 'x-api-key': KEYS.growth, 'accept-encoding': 'gzip', 'if-none-match': gzip.headers.etag as string })
    expect(notModified).toMatchObject({ status: 304, headers: { vary: VARY } })
    // What a browser that did not reuse the copy gets for the other team's key.
    expect((await get({ 'x-api-key': KEYS.writer })).status).toBe(403)
  })
})
