import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { sandboxLoginEnv, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'

// The operations guide as the software answers: its example of GET /admin/status (on the
// console's page) has the shape of a real answer, and it names every refusal reason the
// governor counts in gateway_platform_refused_total wherever it lists them (the metrics,
// the alert, the dashboard's page and panel).

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')
const consolePage = read('docs/operations/console.md')
const monitoring = read('docs/operations/monitoring.md')
const alerts = read('docs/operations/alerts.md')

/** The JSON block after `<!-- example: NAME -->`. */
function example(name: string): unknown {
  const found = new RegExp(`<!-- example: ${name} -->\\n\`\`\`json\\n([\\s\\S]*?)\`\`\``).exec(consolePage)
  expect(found, name).not.toBeNull()
  return JSON.parse(found![1]!)
}

/** The text of `page` from `start` up to `end`; each must be there. */
function between(page: string, start: string, end: string): string {
  const from = page.indexOf(start)
  const to = page.indexOf(end, from)
  expect(from, start).toBeGreaterThanOrEqual(0)
  expect(to, end).toBeGreaterThan(from)
  return page.slice(from, to)
}

// Objects whose keys are values (results, reasons), not fields.
const MAPS = new Set(['lookups', 'refusals'])

/** Every field's path in `value`, arrays read through their elements. */
function paths(value: unknown, at = ''): string[] {
  if (Array.isArray(value)) return [...new Set(value.flatMap((v) => paths(v, `${at}[]`)))]
  if (typeof value !== 'object' || value === null) return []
  return Object.entries(value).flatMap(([k, v]) => [`${at}.${k}`, ...(MAPS.has(k) ? [] : paths(v, `${at}.${k}`))])
}

const sandbox = useSandbox()
const redis = useRedis()
const gateways = useGateways()

describe('docs/operations/', () => {
  it('shows GET /admin/status as a real answer is: every field, and none it lacks', async () => {
    const key = 'rgw_operations_example_key_000000000000000'
    const yaml = `teams:\n  growth:\n    keys:\n      - { hash: "${hashApiKey(key)}", id: growth-2026, expiresAt: 2099-01-10 }\n    advertisers: [101, 102]\n    rateLimit: { max: 100, window: 1m }\n    maxConcurrent: 4\n    queue: 100\n`
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN: 'operations-example-admin-token-00', REDIS_URL: redis.server.url }, yaml))
    await gw.proxy.inject({ method: 'GET', url: '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-11-01&dateTo=2026-11-07', headers: { 'x-api-key': key } })
    const real = (await gw.admin.inject({ method: 'GET', url: '/admin/status', headers: { authorization: 'Bearer operations-example-admin-token-00' } })).json()
    expect(paths(example('admin-status')).sort()).toEqual(paths(real).sort())
  })

  it('names every refusal reason of gateway_platform_refused_total wherever it lists them, as the dashboard does', () => {
    const union = /export type RefusalReason = ([^\n]+)/.exec(read('src/platform/governor/seat.ts'))![1]!
    const reasons = [...union.matchAll(/'(\w+)'/g)].map((m) => m[1]!)
    expect(reasons).toEqual(['queue_full', 'team_queue_full', 'displaced', 'queue_timeout', 'paused', 'count', 'deadline'])
    const places = {
      metrics: between(monitoring, '`gateway_platform_refused_total{credential,reason}`', '`gateway_platform_seats_held{credential}`'),
      alert: between(alerts, '## Alert: GatewayPlatformCallsRefused', '## Alert: GatewayPlatformQueueHigh'),
      dashboard: between(monitoring, '*Calls refused before the platform by reason*', '*Queued and in-flight platform calls*'),
      'dashboard panel': read('helm/report-gateway/dashboards/report-gateway.json').split('\n').find((l) => l.includes('Calls the governor did not send')) ?? '',
    }
    for (const [where, text] of Object.entries(places)) for (const reason of reasons) expect(text, `${where}: ${reason}`).toContain(reason)
  })
})
