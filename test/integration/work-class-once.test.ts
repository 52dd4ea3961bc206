import { afterEach, describe, expect, it, vi } from 'vitest'
import { KEYS, REPORT_PATH, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useGateways } from '../helpers/fixtures.js'
import { heldPlatform } from '../helpers/held-platform.js'

// A fill's work class (reports/work-class.ts: its route, range, splits and page, the page
// read from a POST report's JSON body) is built once, where the call is made: the governor's
// seat, the latency the refresh ahead learns and the copy's watch read that one class. Each
// built it anew, the body parsed each time, three times a fill. The platform here is a plain
// HTTP server, which parses nothing: every parse of the canonical body is the gateway's.

describe("a fill's work class", () => {
  const gateways = useGateways()
  const closing: (() => Promise<void>)[] = []
  afterEach(async () => {
    vi.restoreAllMocks()
    for (const close of closing.splice(0)) await close()
  })

  it('parses a POST report body once for its class, in a fill with refresh ahead on', async () => {
    const platform = await heldPlatform()
    closing.push(platform.close)
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: platform.url, PLATFORM_TOKEN: 'work-class-platform-token' }, TEAMS_YAML))
    // The caller's spelling (indented) is not the canonical one sent to the platform (compact).
    const sent = JSON.stringify({ dateTo: '2025-05-07', byDate: 1, dateFrom: '2025-05-01', perPage: 50 }, null, 1)
    const parse = vi.spyOn(JSON, 'parse')
    const res = await gw.proxy.inject({ method: 'POST', url: `${REPORT_PATH}?advertiserId=101`, headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, payload: sent })
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-cache']).toBe('MISS')
    const canonical = parse.mock.calls.filter(([text]) => typeof text === 'string' && text.includes('"dateFrom":"2025-05-01"') && !text.includes('\n'))
    expect(canonical).toHaveLength(1)
  })
})
