// The dashboard family's traces, pure: which reports each user asks and when, drawn from a
// trace's seed (users loading dashboards of several Zipf-popular reports, thinking between
// loads), and which of them are popular. The benchmark replays them (dashboard-workload.mjs);
// the refresh-ahead simulation replays the same asks (test/sim/dashboard-asks.ts), so both
// read one trace.

import { seededRandom } from '../../scripts/soak-targets.mjs'
import { mostAsked } from './stats.mjs'

export const REPORTS_PER_DASHBOARD = 3
export const THINK_MS = 2000
/** The seed the family's trace shapes are drawn from (bench/scenarios/dashboard-family.mjs). */
export const FAMILY_SEED = 54

const logUniform = (rand, lo, hi) => lo * (hi / lo) ** rand()

/** The family's trace shapes, drawn from FAMILY_SEED: the same on every run. */
export function drawShapes(count) {
  const rand = seededRandom(FAMILY_SEED)
  return Array.from({ length: count }, (_, i) => ({
    users: Math.round(logUniform(rand, 10, 100)),
    reports: Math.round(logUniform(rand, 50, 500)),
    zipf: Math.round((0.8 + 0.5 * rand()) * 100) / 100,
    ttlS: Math.round(logUniform(rand, 2, 60)),
    latencyMs: Math.round(logUniform(rand, 50, 2000)),
    spread: Math.round((0.1 + 0.4 * rand()) * 100) / 100,
    seed: 1000 + i,
    burst: i % 2 === 1,
  }))
}

/** Index 0..n-1 drawn with probability ∝ 1 / (i + 1)^s. */
function zipf(n, s, rand) {
  const weights = Array.from({ length: n }, (_, i) => 1 / (i + 1) ** s)
  const total = weights.reduce((x, y) => x + y, 0)
  const cumulative = []
  let acc = 0
  for (const w of weights) cumulative.push((acc += w / total))
  return () => {
    const u = rand()
    const i = cumulative.findIndex((c) => c >= u)
    return i === -1 ? n - 1 : i
  }
}

/**
 * The trace: per user of `shape.users`, a list of [start offset ms, reports] loads within
 * `seconds`; each load's REPORTS_PER_DASHBOARD distinct reports drawn by Zipf popularity
 * (`shape.zipf`) over `shape.reports`, think time exponential with mean THINK_MS.
 */
export function makeTrace(shape, seconds) {
  // Seeded, so every target gets the same trace.
  const rand = seededRandom(shape.seed)
  const pickReport = zipf(shape.reports, shape.zipf, rand)
  const dashboard = () => {
    const set = new Set()
    while (set.size < REPORTS_PER_DASHBOARD) set.add(pickReport())
    return [...set]
  }
  return Array.from({ length: shape.users }, () => {
    const loads = []
    for (let at = rand() * THINK_MS; at < seconds * 1000; at += -Math.log(1 - rand()) * THINK_MS) loads.push([at, dashboard()])
    return loads
  })
}

/**
 * The popular reports: the most-asked reports of the trace's loads from `fromS` to `toS`
 * that together account for half of their asks. Each is asked about once a second or
 * more, so a cache that refreshes them in time never has to miss or serve them stale;
 * the rarer reports go unasked for longer than the TTL, and a cache would keep them
 * fresh only by calling the platform for nobody.
 */
export function popularReports(trace, fromS, toS) {
  const asks = new Map()
  for (const loads of trace) {
    for (const [at, reports] of loads) if (at >= fromS * 1000 && at < toS * 1000) for (const r of reports) asks.set(r, (asks.get(r) ?? 0) + 1)
  }
  const top = mostAsked(asks, 0.5)
  const popular = new Set(top.keys)
  const leastAsksPerS = Math.min(...top.keys.map((r) => asks.get(r))) / (toS - fromS)
  return { popular, reportsAsked: asks.size, shareOfAsks: top.share, leastAsksPerS }
}

/** How long a trace of `shape` is replayed: caches filling (not measured), then measured. */
export function replaySeconds(shape, quick) {
  const warmupS = Math.min(20, Math.max(4, 2 * shape.ttlS))
  if (shape.measureS) return { warmupS, seconds: quick ? shape.measureS / 2 : shape.measureS }
  return { warmupS, seconds: quick ? Math.min(20, Math.max(10, 2 * shape.ttlS)) : Math.min(45, Math.max(20, 3 * shape.ttlS)) }
}
