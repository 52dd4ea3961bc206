// Dashboards: one team's 30 users load dashboards of 3 reports (Zipf popularity over 120
// reports) on a 4 s TTL from a platform answering in 400 ms, against the gateway with its
// default settings and nginx proxy_cache in the same run (bench/lib/dashboard-workload.mjs).
// Targets: popular answers past their freshness, their p99, the p99 of all answers, and
// platform calls against nginx's.

import { PLATFORM_LATENCY_MS, runDashboards } from '../lib/dashboard-workload.mjs'
import { fmtMs, fmtPct } from '../lib/stats.mjs'

export const id = 'dashboard'
export const title = 'Dashboards: one team, Zipf-popular reports on a 4 s TTL, a platform answering in 400 ms, side by side with nginx'

const MAX_POPULAR_STALE = 0.01
const MAX_POPULAR_P99_MS = 20
const MAX_P99_MS = PLATFORM_LATENCY_MS + 50
const MAX_CALLS_X_NGINX = 1.2

/** The targets, judged on the gateway's figures (and nginx's platform calls). */
export function targets(gateway, nginx) {
  return [
    { name: 'popular answers past their freshness', got: fmtPct(gateway.popularStale), target: `≤ ${fmtPct(MAX_POPULAR_STALE)}`, pass: gateway.popularStale <= MAX_POPULAR_STALE },
    { name: 'p99 of popular answers', got: fmtMs(gateway.popularP99), target: `≤ ${fmtMs(MAX_POPULAR_P99_MS)}`, pass: gateway.popularP99 <= MAX_POPULAR_P99_MS },
    { name: 'p99 of all answers', got: fmtMs(gateway.all.p99), target: `≤ ${fmtMs(MAX_P99_MS)}, the platform's latency + 50 ms`, pass: gateway.all.p99 <= MAX_P99_MS },
    nginx
      ? { name: "platform calls against nginx's", got: `${gateway.platformCalls} / ${nginx.platformCalls} = ${(gateway.platformCalls / Math.max(1, nginx.platformCalls)).toFixed(2)}×`, target: `≤ ${MAX_CALLS_X_NGINX}×`, pass: gateway.platformCalls <= MAX_CALLS_X_NGINX * nginx.platformCalls }
      : { name: "platform calls against nginx's", got: 'nginx did not run', target: `≤ ${MAX_CALLS_X_NGINX}×`, pass: null },
  ]
}

export const run = ({ fixture, quick }) => runDashboards({ fixture, quick, noisy: false, targets })
