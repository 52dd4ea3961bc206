// A family of dashboard traces, not one: seeded draws of users (10–100), reports (50–500),
// Zipf exponent (0.8–1.3), freshness (2–60 s) and the platform's latency (50 ms–2 s
// median, spread log-normally), every other trace with a second team's burst of misses,
// each replayed against the gateway (defaults but the TTL and `staleWhileRevalidate`, both
// the trace's freshness) and nginx proxy_cache (lock, background update, stale for the same
// window: `stale-while-revalidate` = the freshness, bench/lib/dashboard-workload.mjs) in the
// same run. Past that window neither serves a copy: the next ask waits for the platform.
// The gateway's refresh ahead is not tuned to any of them: when it refreshes is derived
// (docs/refresh-ahead.md). Targets on every trace: popular answers past their freshness,
// their p99, the p99 of all answers against the platform's own, platform calls against nginx's.

import { markdownTable, fmtMs, fmtPct, verdictLines } from '../lib/stats.mjs'
import { FAMILY_SEED, drawShapes, replaySeconds } from '../lib/dashboard-trace.mjs'
import { dashboardTargets, popularWords, replayShape, tableHeader } from '../lib/dashboard-workload.mjs'
import { log } from '../lib/processes.mjs'

export const id = 'dashboard-family'
export const title = 'A family of dashboard traces: seeded users, reports, popularity, freshness and platform latency, with and without a second team\'s burst, side by side with nginx'

const TRACES = 8
const QUICK_TRACES = 3
const MAX_POPULAR_STALE = 0.01
const MAX_POPULAR_STALE_BURST = 0.02
const MAX_POPULAR_P99_MS = 20
const MAX_CALLS_X_NGINX = 1.2
// z of the 99th percentile of a standard normal: the platform's own p99 is its median × e^(σ·z).
const Z99 = 2.326

/** The platform's own p99 latency for a shape (ms). */
const platformP99 = (shape) => shape.latencyMs * Math.exp(shape.spread * Z99)

/** The targets of one trace, judged on the gateway's figures (and nginx's platform calls). */
export function targets(shape, gateway, nginx) {
  const maxStale = shape.burst ? MAX_POPULAR_STALE_BURST : MAX_POPULAR_STALE
  return dashboardTargets({ maxStale, maxPopularP99Ms: MAX_POPULAR_P99_MS, maxP99Ms: platformP99(shape) + 50, p99Words: "the platform's p99 + 50 ms", maxCallsXNginx: MAX_CALLS_X_NGINX }, gateway, nginx)
}

const shapeWords = (s) => `${s.users} users, ${s.reports} reports, Zipf ${s.zipf}, freshness ${s.ttlS} s, platform ${s.latencyMs} ms median (σ ${s.spread}, p99 ${fmtMs(platformP99(s))})${s.burst ? ', with a burst' : ''}`

export async function run({ fixture, quick, baseline = null, traces = null, withoutAhead = false, nginxAnyAge = false }) {
  // `traces`: the numbers (1-based) of the traces to replay, of the eight; their shapes as in the full family.
  const drawn = drawShapes(traces ? TRACES : quick ? QUICK_TRACES : TRACES)
  const shapes = traces ? drawn.filter((_, i) => traces.includes(i + 1)) : drawn
  const started = Date.now()
  const sections = []
  const summary = []
  // Each target's platform calls in the measured time by cause (bench/lib/dashboard-workload.mjs, `callCauses`).
  const causeRows = []
  for (const shape of shapes) {
    const i = drawn.indexOf(shape)
    const { warmupS, seconds } = replaySeconds(shape, quick)
    // The burst: the middle third of the measured time.
    const noise = shape.burst ? { fromS: warmupS + seconds / 3, forS: seconds / 3 } : null
    log(`trace ${i + 1}/${drawn.length}: ${shapeWords(shape)}`)
    const r = await replayShape({ fixture, shape, quick, noise, name: `family${i + 1}`, baseline, withoutAhead, nginxAnyAge })
    const checks = r.measured.gateway ? targets(shape, r.measured.gateway, r.measured.nginx ?? null) : []
    const g = r.measured.gateway
    const n = r.measured.nginx
    const b = r.measured.baseline
    for (const [id, m] of Object.entries(r.measured)) {
      const c = m.causes
      causeRows.push([String(i + 1), id, String(c.calls), n ? `${(c.calls / Math.max(1, n.causes.calls - n.causes.overlapping)).toFixed(2)}×` : '—', String(c.first), String(c.ahead), String(c.stale), String(c.expired), String(c.early), String(c.overlapping), fmtMs(c.waitMs), c.ahead ? fmtMs(c.aheadMs) : '—'])
    }
    summary.push([
      String(i + 1),
      shapeWords(shape),
      g ? fmtPct(g.popularStale) : '—',
      n ? fmtPct(n.popularStale) : '—',
      g ? fmtMs(g.popularP99) : '—',
      g ? fmtMs(g.all.p99) : '—',
      g && n ? `${(g.platformCalls / Math.max(1, n.coalescedCalls)).toFixed(2)}×` : '—',
      `${checks.filter((c) => c.pass).length} / ${checks.length}`,
      ...(baseline ? [b ? `${fmtPct(b.popularStale)}, ${n ? `${(b.platformCalls / Math.max(1, n.coalescedCalls)).toFixed(2)}×` : '—'}, ${b ? targets(shape, b, n ?? null).filter((c) => c.pass).length : 0} / 4` : '—'] : []),
    ])
    sections.push(
      [
        `#### Trace ${i + 1}: ${shapeWords(shape)}`,
        '',
        markdownTable(tableHeader(shape.burst), r.rows),
        '',
        ...(g ? verdictLines(checks) : ['The gateway did not run: no target judged.']),
        '',
        `${warmupS} s not measured (the caches fill), then ${seconds} s measured${shape.burst ? `; the burst from ${noise.fromS.toFixed(0)} s for ${noise.forS.toFixed(0)} s` : ''}; trace seed ${shape.seed}. ${popularWords(r.popular)}.`,
        ...r.notes.map((x) => `- ${x}`),
        '',
      ].join('\n'),
    )
  }
  const minutes = (Date.now() - started) / 60_000
  return [
    markdownTable(['trace', 'shape', 'gateway popular past freshness', 'nginx popular past freshness', 'gateway popular p99', 'gateway p99', "gateway calls / nginx's", 'targets met', ...(baseline ? ["baseline: popular past freshness, calls / nginx's, targets met"] : [])], summary),
    '',
    `${shapes.length === drawn.length ? shapes.length : `${shapes.length} of ${drawn.length}`} traces drawn from seed ${FAMILY_SEED} (bench/lib/dashboard-trace.mjs), the family took ${minutes.toFixed(1)} min.${baseline ? ` Baseline: the gateway run from ${baseline}/dist/main.js with the same settings, replayed between the gateway and nginx.` : ''} Each trace: its users load dashboards of 3 distinct Zipf-drawn reports at once, then think (exponential, mean 2 s); the platform stand-in answers each call after its median latency × e^(σ·z) and stamps the answer: an answer is past its freshness when its data is older than the TTL as its headers arrive. The burst (every other trace): a second team's 200 callers each asking a report never asked before, in a closed loop, during the middle third of the measured time, against both targets. Targets: popular answers past freshness ≤ ${fmtPct(MAX_POPULAR_STALE)} (≤ ${fmtPct(MAX_POPULAR_STALE_BURST)} with the burst), popular p99 ≤ ${MAX_POPULAR_P99_MS} ms, p99 of all answers ≤ the platform's p99 + 50 ms, platform calls ≤ ${MAX_CALLS_X_NGINX}× nginx's.`,
    '',
    'Platform calls in the measured time by cause, from the stand-in\'s log of each call, judged against the call of the same report before it: first (none before), ahead (a refresh ahead, by its request id), stale (its copy 1 to 2 freshnesses old), expired (older), early (its copy still fresh), overlapping (the call before still unanswered: nginx\'s fills of a copy past its stale window, not coalesced; "/ nginx\'s" is against nginx\'s calls less these); wait: the mean time past freshness of the stale and expired calls; ahead at: the mean age of the copy a refresh ahead replaced.',
    '',
    markdownTable(['trace', 'target', 'calls', "/ nginx's", 'first', 'ahead', 'stale', 'expired', 'early', 'overlapping', 'wait', 'ahead at'], causeRows),
    '',
    ...sections,
  ].join('\n')
}
