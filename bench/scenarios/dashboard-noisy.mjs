// The dashboard workload (bench/scenarios/dashboard.mjs) while a second team keeps 200
// misses of its own outstanding: the dashboard team's popular answers past their
// freshness and its p99, against nginx in the same run.

import { PLATFORM_LATENCY_MS, runDashboards } from '../lib/dashboard-workload.mjs'
import { fmtMs, fmtPct } from '../lib/stats.mjs'

export const id = 'dashboard-noisy'
export const title = 'Dashboards with a noisy neighbour: the dashboard workload while a second team keeps 200 misses outstanding'

const MAX_POPULAR_STALE = 0.02
const MAX_P99_MS = PLATFORM_LATENCY_MS + 100

/** The targets, judged on the gateway's figures for the dashboard team. */
export function targets(gateway) {
  return [
    { name: "the dashboard team's popular answers past their freshness", got: fmtPct(gateway.popularStale), target: `≤ ${fmtPct(MAX_POPULAR_STALE)}`, pass: gateway.popularStale <= MAX_POPULAR_STALE },
    { name: "p99 of the dashboard team's answers", got: fmtMs(gateway.all.p99), target: `≤ ${fmtMs(MAX_P99_MS)}, the platform's latency + 100 ms`, pass: gateway.all.p99 <= MAX_P99_MS },
  ]
}

export const run = ({ fixture, quick, baseline }) => runDashboards({ fixture, quick, baseline, noisy: true, targets })
