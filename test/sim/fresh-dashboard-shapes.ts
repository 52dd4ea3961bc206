import { Random } from './random.js'
import { simulate, type Scenario, type Trace } from './simulate.js'
import { newGovernor } from './new-governor.js'
import type { TeamPlan } from './teams.js'

/**
 * Seeded shapes of the two-teams bench's fresh row (bench/scenarios/two-teams.mjs, 'cold'
 * order, views-year-long): on a fresh gateway, one replica, W workers (8 to 48), a team of
 * 1.2W to 2W callers of one long report (2 to 8 s) starts first; 3 to 8 s later a dashboard
 * that asks F distinct short reports at once (60 to 250 ms; F from 4 to W/2, within its
 * nominal share beside the other team) and waits for all of them before its next view.
 * Spread σ 0.02 to 0.2. Each seed's draws come from a stream of its own.
 */
export interface FreshDashboardShape { seed: number; workers: number; shortMs: number; longMs: number; arrivesMs: number; fanOut: number; callers: number; spread: number }

export const FRESH_DASHBOARD_MS = 60_000
/** The dashboard is judged over this long from its arrival, as the bench judges its row. */
const JUDGED_MS = 30_000

export function freshDashboardShape(seed: number): FreshDashboardShape {
  const r = new Random(seed * 7_368_787)
  const workers = r.int(8, 48)
  const shortMs = Math.round(r.logUniform(60, 250))
  const longMs = Math.round(r.logUniform(2_000, 8_000))
  const arrivesMs = r.uniform(3_000, 8_000)
  const fanOut = r.int(4, Math.max(4, Math.floor(workers / 2)))
  const callers = r.int(Math.ceil(1.2 * workers), 2 * workers)
  const spread = r.uniform(0.02, 0.2)
  return { seed, workers, shortMs, longMs, arrivesMs, fanOut, callers, spread }
}

/**
 * What the shape's guarantees find: the dashboard's answers over the JUDGED_MS from its
 * arrival against itself alone (at least 80 %, the issue's *isolation* for a dashboard that
 * waits for all its answers), and *work-conserving* from 10 s and three long calls' cost on
 * (the start's doubling, as the sweep judges it): at most 2 % of samples with a worker idle
 * while a call waits past what the model allows. Null where both hold.
 */
export async function freshDashboardMiss(shape: FreshDashboardShape): Promise<string | null> {
  const { seed, workers, shortMs, longMs, arrivesMs, fanOut, callers, spread } = shape
  const views: TeamPlan = { name: 'B', weight: 1, behaviour: { kind: 'dashboard', users: 1, fanOut, reports: [{ name: 'week', costMs: shortMs }], thinkMs: [0, 0] }, replicas: [0], from: arrivesMs, until: FRESH_DASHBOARD_MS }
  const longs: TeamPlan = { name: 'A', weight: 1, behaviour: { kind: 'callers', callers, reports: [{ name: 'year', costMs: longMs }], thinkMs: [0, 0] }, replicas: [0], from: 0, until: FRESH_DASHBOARD_MS }
  const scenario = (teams: TeamPlan[]): Scenario => ({ seed, durationMs: FRESH_DASHBOARD_MS, workers, spread, slowness: [], stalls: [], outages: [], shedding: [], replicas: 1, storeStalls: [], teams })
  const rate = (t: Trace) => t.records.filter((c) => c.team === 'B' && c.result === 'ok' && c.ended - t.start >= arrivesMs && c.ended - t.start < arrivesMs + JUDGED_MS).length / (JUDGED_MS / 1000)
  const alone = rate(await simulate(scenario([views]), newGovernor))
  const trace = await simulate(scenario([views, longs]), newGovernor)
  const kept = rate(trace) / alone
  const judged = trace.samples.filter((x) => x.at - trace.start >= Math.max(arrivesMs, 10_000 + 3 * longMs))
  const idle = judged.filter((x) => x.waiting > 0 && x.busy < x.workers && !x.idleAllowed).length / judged.length
  if (kept >= 0.8 && idle <= 0.02) return null
  return `seed ${seed} (${workers} workers, ${callers} callers of ${longMs} ms first, a dashboard of ${fanOut} × ${shortMs} ms from ${(arrivesMs / 1000).toFixed(1)} s, σ ${spread.toFixed(2)}): the dashboard keeps ${(100 * kept).toFixed(0)} % of itself alone, a worker idle while calls waited in ${(100 * idle).toFixed(1)} % of samples, the limit ${Math.min(...judged.map((x) => x.limit))} at its lowest`
}
