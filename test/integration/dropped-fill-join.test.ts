import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { listen, REPORT_PATH, testConfig, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { canonicalGetReport } from '../../src/reports/report-query.js'
import type { ReadOptions } from '../../src/reports/report-cache.js'

// A report fill every caller of which has left is dropped; a caller that arrives while it
// ends is still waiting: it is answered with a fill of its own, not as one that left.

describe('a read arriving as the fill it would join is dropped', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()

  it('gets the report from a fill of its own, not the dropped fill\'s 499', async () => {
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, TEAMS_YAML)))
    const report = canonicalGetReport(REPORT_PATH, 'advertiserId=101&dateFrom=2026-05-01&dateTo=2026-05-07', { maxRangeDays: 400 })
    const provider = gw.tokens.get('default')
    const key = gw.reports.keyFor('default', report)
    const options = (requestId: string, hangUp: AbortSignal): ReadOptions => ({ requestId, team: 'growth', hangUp, log: pino({ level: 'silent' }), tally: { team: { name: 'growth' }, platformCalls: 0 }, found: null, refresh: false })
    const first = new AbortController()
    // Both reads reach the fill at once (no lookup): the first caller leaves before the second joins.
    const left = gw.reports.read(report, key, provider, options('first', first.signal)).catch((err: unknown) => err)
    first.abort()
    const second = await gw.reports.read(report, key, provider, options('second', new AbortController().signal))
    expect((await left as { statusCode?: number }).statusCode).toBe(499)
    expect(second.kind).toBe('entry')
  })
})
