import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { KEYS, listen, REPORT_PATH, testConfig, TEAMS_YAML } from '../helpers/build-gateway.js'
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

  it('gets the report when the fill its decision found is dropped before it joins it: the entrance before the router fills anew, no 499', async () => {
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, TEAMS_YAML)))
    const query = 'advertiserId=101&dateFrom=2026-06-01&dateTo=2026-06-07'
    const url = `${gw.url}${REPORT_PATH}?${query}`
    const get = () => fetch(url, { headers: { 'x-api-key': KEYS.growth } })
    // growth's first read of the URL goes through the router; its next reads are decided before it.
    expect((await get()).status).toBe(200)
    await gw.reports.purgeAll()
    const report = canonicalGetReport(REPORT_PATH, query, { maxRangeDays: 400 })
    const key = gw.reports.keyFor('default', report)
    // As the next read's decision looks for a cold fill to join, a read of the same report
    // starts one and leaves it at once, in the same turn: the fill the decision found is
    // being dropped before the read joins it.
    const reports = gw.reports as { coldFlight: typeof gw.reports.coldFlight }
    const coldFlight = gw.reports.coldFlight.bind(gw.reports)
    let left: Promise<unknown> | undefined
    reports.coldFlight = (k) => {
      if (k !== key || left !== undefined) return coldFlight(k)
      const first = new AbortController()
      const options: ReadOptions = { requestId: 'first', team: 'growth', hangUp: first.signal, log: pino({ level: 'silent' }), tally: { team: { name: 'growth' }, platformCalls: 0 }, found: null, refresh: false }
      left = gw.reports.read(report, key, gw.tokens.get('default'), options).catch((err: unknown) => err)
      const flight = coldFlight(k)
      first.abort()
      return flight
    }
    const res = await get()
    expect(left).toBeDefined()
    expect(((await left) as { statusCode?: number }).statusCode).toBe(499)
    expect([res.status, res.headers.get('x-cache')]).toEqual([200, 'MISS'])
  })
})
