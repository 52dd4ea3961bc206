import type { IncomingHttpHeaders } from 'node:http'
import { hashApiKey } from '../../src/access/api-keys.js'
import { listen, REPORT_PATH as PATH, testConfig, type TestGateway } from './build-gateway.js'
import { onRealTimers, type FakeClock } from './clock.js'
import { useGateways, useSandbox } from './fixtures.js'
import type { Sandbox } from '../../src/sandbox/sandbox.js'

// Conditional requests as clients really send them, over real HTTP on 127.0.0.1: Node's
// fetch and headless Chromium's, in front of the platform sandbox. The Fetch standard
// adds `cache-control: no-cache` and `pragma: no-cache` to a request carrying a validator
// (If-None-Match, If-Modified-Since) in its default mode, and to every request in its
// `reload` and `no-store` modes: a poll is answered from the gateway's fresh copy, and only
// a team given `refresh: true` forces a fresh copy from the platform, at most once per
// `cache.refreshMinAge` of a report. The gateway's time is the test's (a fake clock on real timers).

export const DASHBOARD_KEY = 'rgw_test_dashboard_key_000000000000000000000'
export const OPS_KEY = 'rgw_test_ops_refresh_key_00000000000000000000'
export const QUERY = 'advertiserId=101&byDate=1&dateFrom=2026-02-01&dateTo=2026-02-07'
export const FRESH_S = 60
export const MIN_AGE_S = 10

export const TEAMS = `
teams:
  dashboard:
    keys: ["${hashApiKey(DASHBOARD_KEY)}"]
    advertisers: ["*"]
`
export const CACHE = `
cache:
  ttl: { recent: ${FRESH_S}s, settled: ${FRESH_S}s }
  # The copies here expire only when a test says so.
  refreshAhead: 0
`
export const WITH_REFRESH = `${TEAMS}  ops:
    keys: ["${hashApiKey(OPS_KEY)}"]
    advertisers: ["*"]
    refresh: true
${CACHE}  refreshMinAge: ${MIN_AGE_S}s
`

/** A report's answer as a client read it. */
export interface Answer {
  status: number
  cache: string | null
  cacheStatus: string | null
  etag: string | null
  age: string | null
  body: string
}

/**
 * The sandbox and gateways of a file of conditional requests (their hooks registered): a
 * listening gateway in front of the sandbox on a test's clock, with the request headers it
 * received in order, and the report calls the platform received.
 */
export function useConditionalRequests(): {
  sandbox: Sandbox
  gatewayOn(yaml: string, clock: FakeClock): Promise<{ gw: TestGateway & { url: string }; received: IncomingHttpHeaders[] }>
  reportCalls(): number
} {
  const sandbox = useSandbox()
  const gateways = useGateways()
  return {
    sandbox,
    async gatewayOn(yaml, clock) {
      const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, yaml), { clock: onRealTimers(clock.now) }))
      const received: IncomingHttpHeaders[] = []
      gw.proxy.server.on('request', (req: { url?: string; headers: IncomingHttpHeaders }) => {
        if (req.url?.startsWith(PATH)) received.push({ ...req.headers })
      })
      return { gw, received }
    },
    reportCalls: () => sandbox.countRequests((r) => r.path === PATH),
  }
}
