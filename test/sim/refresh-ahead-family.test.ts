import { describe, expect, it } from 'vitest'
import { familyTrace, type FamilyTrace } from './dashboard-asks.js'
import { Random } from './random.js'
import { askLedCopies, fewestCopiesOf, timedCopies } from './refresh-ahead-oracle.js'
import { MODEL, STALE_CAUSES, simulate, type Run, type Tally } from './refresh-ahead-sim.js'

// The benchmark's dashboard family on its own asks (bench/lib/dashboard-trace.mjs), through the
// refresh-ahead simulation: the model's cache, a stale-while-revalidate cache and nginx's, each
// call and each stale answer by cause. SIM_TRACE=<n> prints trace n's figures over SIM_DRAWS
// platform draws (default 20), beside the fewest calls caches that know more would make
// (refresh-ahead-oracle.ts; docs/refresh-ahead.md, "Trace 7: the fewest calls").

const only = process.env.SIM_TRACE === undefined ? null : Number(process.env.SIM_TRACE)
const draws = Number(process.env.SIM_DRAWS ?? 20)
const TARGET_STALE = 0.01

const sum = (xs: readonly number[], keep: (i: number) => boolean = () => true): number => xs.reduce((a, x, i) => a + (keep(i) ? x : 0), 0)

/** What does not add up in `tally`: its calls against their causes, its stale answers against theirs (none: []). */
function unaccounted(name: string, tally: Tally): string[] {
  const out: string[] = []
  const byCause = sum(Object.values(tally.callCauses))
  if (byCause !== tally.calls || sum(tally.reportCalls) !== tally.calls) out.push(`${name}: ${tally.calls} calls, ${byCause} by cause, ${sum(tally.reportCalls)} by report`)
  tally.stale.forEach((n, r) => {
    const byStaleCause = sum(STALE_CAUSES.map((c) => tally.staleCauses[c][r]!))
    if (byStaleCause !== n) out.push(`${name}: report ${r} ${n} answers past freshness, ${byStaleCause} by cause`)
  })
  return out
}

/** Trace `n`'s figures over `draws` platform draws, in words. */
function figures(n: number): string[] {
  const runs: Array<{ trace: FamilyTrace; run: Run }> = []
  for (let seed = 1; seed <= draws; seed++) {
    const trace = familyTrace(n, seed)
    runs.push({ trace, run: simulate(trace.shape, MODEL, trace.span, undefined, { asks: trace.asks, nginx: true }) })
  }
  const { shape, asks, span, popular } = runs[0]!.trace
  const isPopular = (r: number) => popular.has(r)
  const mean = (of: (run: Run) => number) => sum(runs.map(({ run }) => of(run))) / draws
  const nginxCalls = mean((r) => r.nginx!.calls)
  const popularAnswers = mean((r) => sum(r.ahead.answers, isPopular))
  const lines = [`trace ${n}: ${shape.reports} reports, ${shape.rate.toFixed(1)} asks/s, Zipf ${shape.zipf}, freshness ${shape.freshMs} ms, platform ${shape.latencyMs} ms (σ ${shape.spread}); ${popular.size} popular reports, ${popularAnswers} popular answers in the window; ${draws} platform draws, means`]
  for (const name of ['ahead', 'swr', 'nginx'] as const) {
    const calls = mean((r) => r[name]!.calls)
    const causes = Object.keys(runs[0]!.run[name]!.callCauses).map((c) => `${c} ${mean((r) => r[name]!.callCauses[c as keyof Tally['callCauses']]).toFixed(2)}`)
    const stale = STALE_CAUSES.map((c) => `${c} ${mean((r) => sum(r[name]!.staleCauses[c], isPopular)).toFixed(2)}`)
    lines.push(`  ${name}: ${calls.toFixed(1)} calls (${(calls / nginxCalls).toFixed(3)} × nginx's; popular ${mean((r) => sum(r[name]!.reportCalls, isPopular)).toFixed(1)}): ${causes.join(', ')}; popular past freshness ${((100 * mean((r) => sum(r[name]!.stale, isPopular))) / popularAnswers).toFixed(2)} %: ${stale.join(', ')}; popular misses ${mean((r) => sum(r[name]!.missed, isPopular)).toFixed(2)}`)
  }
  // Each popular report, most asked first: its asks a freshness in the window, the model's calls (stale-while-revalidate's) and stale answers by cause.
  const freshMs = shape.freshMs
  const fromMs = span.warmup * freshMs
  const untilMs = span.freshnesses * freshMs
  const times = [...popular].map((r) => asks.filter(([t, x]) => x === r && t >= fromMs).map(([t]) => t))
  const perFresh = (i: number) => (times[i]!.length * freshMs) / (untilMs - fromMs)
  for (const i of [...times.keys()].sort((x, y) => perFresh(y) - perFresh(x))) {
    const r = [...popular][i]!
    const stale = STALE_CAUSES.filter((c) => c !== 'none').map((c) => `${c} ${mean((run) => run.ahead.staleCauses[c][r]!).toFixed(2)}`)
    lines.push(`  report ${r}, ${perFresh(i).toFixed(1)} asks a freshness: ${mean((run) => run.ahead.reportCalls[r]!).toFixed(2)} calls (stale-while-revalidate ${mean((run) => run.swr.reportCalls[r]!).toFixed(2)}); past freshness ${stale.join(', ')}; misses ${mean((run) => run.ahead.missed[r]!).toFixed(2)}`)
  }
  // The model reading the platform's own latency (log-normal: its mean, and its standard deviation as √(π/2) mean deviations, as refreshLead fits it), not the one it learns.
  const meanMs = shape.latencyMs * Math.exp(shape.spread ** 2 / 2)
  const knownLatency = { meanMs, devMs: (meanMs * Math.sqrt(Math.exp(shape.spread ** 2) - 1)) / Math.sqrt(Math.PI / 2) }
  const known = runs.map(({ trace }) => simulate(trace.shape, { ...MODEL, knownLatency }, trace.span, undefined, { asks: trace.asks, nginx: true }))
  const knownMean = (of: (run: Run) => number) => sum(known.map(of)) / draws
  lines.push(`  the model reading the platform's latency (mean ${meanMs.toFixed(0)} ms, mean deviation ${knownLatency.devMs.toFixed(0)} ms), not the one it learns: ${(knownMean((r) => r.ahead.calls) / knownMean((r) => r.nginx!.calls)).toFixed(3)} × nginx's calls; popular past freshness ${((100 * knownMean((r) => sum(r.ahead.stale, isPopular))) / popularAnswers).toFixed(2)} %: ${STALE_CAUSES.filter((c) => c !== 'none').map((c) => `${c} ${knownMean((r) => sum(r.ahead.staleCauses[c], isPopular)).toFixed(2)}`).join(', ')}`)
  // The caches that know more, for the popular reports; the others' calls as the gateway's stale-while-revalidate makes them.
  const rest = mean((r) => sum(r.swr.reportCalls, (i) => !isPopular(i)))
  const maxStale = Math.floor(TARGET_STALE * popularAnswers)
  const words = (what: string, copies: number, stale: number) => `  ${what}: popular ${copies.toFixed(1)} calls, ${((100 * stale) / popularAnswers).toFixed(2)} % past freshness; with the others' ${rest.toFixed(1)} ${((copies + rest) / nginxCalls).toFixed(3)} × nginx's`
  // The copy there at the window's start: called before it, landing by its first ask or the platform's median after the start.
  const freshUntil = times.map((ts) => Math.min(ts[0] ?? fromMs, fromMs + shape.latencyMs) + freshMs)
  lines.push(words(`knowing the asks and the latencies, at most ${maxStale} stale`, fewestCopiesOf(times, freshMs, freshUntil, maxStale), maxStale))
  for (const leadMs of [1.2, 1.4, 1.6, 1.8, 2].map((x) => Math.round(x * shape.latencyMs))) {
    // Timed, the copy there at the window's start landed at a point of its cycle drawn from the draw's seed.
    const [asked, timed] = [{ copies: 0, stale: 0 }, { copies: 0, stale: 0 }]
    for (let seed = 1; seed <= draws; seed++) {
      // Each policy its own latencies, drawn from the draw's seed.
      const [askedLatency, timedLatency] = [new Random(seed), new Random(seed ^ 0x71ed)]
      const draw = (latency: Random) => () => shape.latencyMs * latency.spread(shape.spread)
      for (const [i, ts] of times.entries()) {
        for (const [total, s] of [
          [asked, askLedCopies(ts, freshMs, freshUntil[i]!, leadMs, draw(askedLatency), fromMs)],
          [timed, timedCopies(ts, freshMs, fromMs - timedLatency.next() * (freshMs - leadMs + shape.latencyMs), leadMs, draw(timedLatency), fromMs, untilMs)],
        ] as const) {
          total.copies += s.copies / draws
          total.stale += s.stale / draws
        }
      }
    }
    lines.push(words(`knowing the asks, lead ${leadMs} ms`, asked.copies, asked.stale))
    lines.push(words(`knowing only which reports are popular, lead ${leadMs} ms`, timed.copies, timed.stale))
  }
  return lines
}

describe("the dashboard family's traces on their own asks", () => {
  it.skipIf(only !== null)('tells every platform call and every answer past freshness apart by cause', () => {
    const failures: string[] = []
    for (let n = 1; n <= 8; n++) {
      const trace = familyTrace(n, n)
      const run = simulate(trace.shape, MODEL, trace.span, undefined, { asks: trace.asks, nginx: true })
      for (const name of ['ahead', 'swr', 'nginx'] as const) failures.push(...unaccounted(`trace ${n}, ${name}`, run[name]!))
    }
    expect(failures, failures.join('\n')).toEqual([])
  })

  // A popular report's MISS waits for the platform: on trace 8 it is what takes the popular p99
  // over 20 ms. Each is a copy nobody asked through its freshness and its stale window (the
  // report silent for 2F or more), the same copies on every platform draw, as in the benchmark's
  // runs (docs/refresh-ahead.md, "What the model does not promise"). A fix takes them off this list.
  it.skipIf(only !== null)("misses the family's popular reports only where a copy lapsed: trace 8's three", () => {
    const known: Record<number, Record<number, number>> = { 8: { 5: 1, 10: 1, 14: 1 } }
    const found: Record<number, Record<number, number>> = {}
    for (let n = 1; n <= 8; n++) {
      for (let seed = 1; seed <= 3; seed++) {
        const trace = familyTrace(n, seed)
        const run = simulate(trace.shape, MODEL, trace.span, undefined, { asks: trace.asks })
        run.ahead.missed.forEach((m, r) => {
          if (m > 0 && trace.popular.has(r)) (found[n] ??= {})[r] = Math.max(found[n]![r] ?? 0, m)
        })
        const noCopy = sum(run.ahead.missed, (r) => trace.popular.has(r)) - sum(run.ahead.lapsed, (r) => trace.popular.has(r))
        expect(noCopy, `trace ${n}, draw ${seed}: popular misses with no copy`).toBe(0)
      }
    }
    expect(found).toEqual(known)
  })

  it.skipIf(only === null)(`prints trace ${only}'s calls and stale answers by cause`, () => {
    console.log(figures(only!).join('\n'))
  }, 120_000)
})
