// Dashboards: one team's 30 users load dashboards of 3 reports (Zipf popularity over 120
// reports) on a 4 s TTL from a platform answering in 400 ms, against the gateway with its
// default settings and nginx proxy_cache in the same run (bench/lib/dashboard-workload.mjs).
// Targets: popular answers past their freshness, their p99, the p99 of all answers, and
// platform calls against nginx's.

import { PLATFORM_LATENCY_MS, dashboardTargets, runDashboards } from '../lib/dashboard-workload.mjs'

export const id = 'dashboard'
export const title = 'Dashboards: one team, Zipf-popular reports on a 4 s TTL, a platform answering in 400 ms, side by side with nginx'

const MAX_POPULAR_STALE = 0.01
const MAX_POPULAR_P99_MS = 20
const MAX_P99_MS = PLATFORM_LATENCY_MS + 50
const MAX_CALLS_X_NGINX = 1.2

/** The targets, judged on the gateway's figures (and nginx's platform calls). */
export function targets(gateway, nginx) {
  return dashboardTargets({ maxStale: MAX_POPULAR_STALE, maxPopularP99Ms: MAX_POPULAR_P99_MS, maxP99Ms: MAX_P99_MS, p99Words: "the platform's latency + 50 ms", maxCallsXNginx: MAX_CALLS_X_NGINX }, gateway, nginx)
}

export const run = ({ fixture, quick, baseline }) => runDashboards({ fixture, quick, baseline, noisy: false, targets })
