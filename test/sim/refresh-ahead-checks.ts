import { REFRESH_AHEAD_BUDGET as B, budgetAsks } from '../../src/reports/refresh-ahead.js'
import { MODEL, drawBurst, drawShape, simulate, type Burst, type Run } from './refresh-ahead-sim.js'

// The refresh-ahead model's guarantees (docs/refresh-ahead.md, "The simulation"), checked on
// a seeded trace shape alone and beside another team's burst: `npm test` runs the first
// shapes (test/sim/refresh-ahead.test.ts), test:slow the next (test/slow/refresh-ahead-shapes.test.ts).

// z of a standard normal's 99th percentile: the platform's p99 is its median × e^(σ·z).
const Z99 = 2.326
// What the price may exceed the budget by: rates read from a few asks (docs/refresh-ahead.md, "The simulation").
const PRICE_NOISE = 0.1

const sum = (xs: number[], keep: (i: number) => boolean): number => xs.reduce((a, x, i) => a + (keep(i) ? x : 0), 0)

/** The reports asked twice as often as the budget's fewest asks on the drawn rates (twice: the rates are read from a few asks), priced by `calm`'s lead: the run without a burst. */
function clearOf(calm: Run): (i: number) => boolean {
  const s = calm.shape
  const demands = calm.asksPerFresh.map((asksPerFresh) => ({ asksPerFresh, freshMs: s.freshMs, latencyMs: s.latencyMs, leadMs: calm.leadMs }))
  const threshold = budgetAsks(demands)
  return (i) => calm.asksPerFresh[i]! >= 2 * threshold
}

/** What `run` breaks of the guarantees, in words (none: []); `burst`: the other team's burst it ran beside, `calm`: the same shape without it. */
function broken(run: Run, calm = run, burst?: Burst): string[] {
  const { shape: s, ahead, swr } = run
  const out: string[] = []
  const p99 = s.latencyMs * Math.exp(Z99 * s.spread)
  const clear = clearOf(calm)
  // Fresh: the clear reports, on a platform whose p99 is under a quarter of the freshness.
  if (burst === undefined && p99 < s.freshMs / 4) {
    const stale = sum(ahead.stale, clear) / Math.max(1, sum(ahead.answers, clear))
    if (stale > 0.01) out.push(`reports asked twice the budget's fewest asks a freshness: ${(stale * 100).toFixed(2)} % of answers past freshness (> 1 %)`)
  }
  // Beside a burst, the same reports while it lasts, when the platform's p99 and the burst's
  // waits (a seat's p99 and a CPU turn) are under a quarter of the freshness. A call waits for
  // a seat with chance c, an exponential time of mean m: P(wait > x) = c·e^(−x/m), p99 m·ln(100c).
  if (burst !== undefined && p99 + burst.seatMs * Math.log(Math.max(1, 100 * burst.seatChance)) + burst.turnMs < s.freshMs / 4) {
    const stale = sum(ahead.burstStale, clear) / Math.max(1, sum(ahead.burstAnswers, clear))
    if (stale > 0.02) out.push(`reports asked twice the budget's fewest asks a freshness: ${(stale * 100).toFixed(2)} % of answers past freshness (> 2 %)`)
  }
  // The price: at most 1 + the budget (and PRICE_NOISE) times the calls of a stale-while-revalidate cache.
  const bound = 1 + B + PRICE_NOISE
  if (ahead.calls > bound * swr.calls) out.push(`${ahead.calls} platform calls against ${swr.calls} without refresh ahead: ${(ahead.calls / swr.calls).toFixed(2)}× (> ${bound.toFixed(2)}×)`)
  // Never staler than not refreshing ahead.
  const [a, w] = [sum(ahead.stale, () => true), sum(swr.stale, () => true)]
  if (a > w) out.push(`${a} answers past freshness against ${w} without refresh ahead`)
  return out
}

/** What the shapes of `shapeSeeds` break, alone and beside their burst, in words (none: []); `verbose` prints each shape's figures. */
export function failuresOf(shapeSeeds: readonly number[], verbose = false): string[] {
  const failures: string[] = []
  for (const seed of shapeSeeds) {
    const shape = drawShape(seed)
    const burst = drawBurst(shape)
    const run = simulate(shape)
    const busy = simulate(shape, MODEL, undefined, burst)
    const clear = clearOf(run)
    const words = `seed ${seed}: ${shape.reports} reports, ${shape.rate.toFixed(0)} asks/s, Zipf ${shape.zipf.toFixed(2)}, freshness ${shape.freshMs} ms, platform ${shape.latencyMs} ms (σ ${shape.spread.toFixed(2)}), lead ${run.leadMs.toFixed(0)} ms`
    if (verbose) {
      console.log(`${words}\n  calls ${run.ahead.calls} (without refresh ahead ${run.swr.calls}), past freshness ${sum(run.ahead.stale, () => true)} (${sum(run.swr.stale, () => true)}) of ${sum(run.ahead.answers, () => true)}`)
      console.log(`  beside a burst: calls ${busy.ahead.calls} (${busy.swr.calls}), the clear reports past freshness while it lasts ${sum(busy.ahead.burstStale, clear)} of ${sum(busy.ahead.burstAnswers, clear)}`)
    }
    const seats = `beside a burst (seats ${(burst.seatChance * 100).toFixed(0)} % of calls for ${burst.seatMs.toFixed(0)} ms, turns to ${burst.turnMs.toFixed(0)} ms)`
    for (const w of [...broken(run), ...broken(busy, run, burst).map((w) => `${seats}: ${w}`)]) failures.push(`${words}: ${w} (replay: SIM_SEED=${seed} npx vitest run test/sim/refresh-ahead.test.ts)`)
  }
  return failures
}
