/**
 * The fewest platform calls any cache needs to serve a report's asks fresh, known in advance:
 * a bound on every refresh-ahead rule (docs/refresh-ahead.md, "Trace 7: the fewest calls any
 * policy needs"). A copy that lands at t serves the asks in [t, t + F) fresh; knowing the
 * asks, a cache lands each copy exactly at the first ask the copy before cannot serve fresh
 * (landing it later serves none of them; earlier, fewer after), so every copy lands at an ask,
 * and the asks no copy serves fresh are served stale from the copy before.
 */

/**
 * The fewest copies that serve `times` (one report's asks, ms, ascending) with at most s of
 * them past freshness, for s = 0 to `maxStale` (the result's index), the asks before
 * `freshUntil` served fresh by a copy already there (which also serves any ask stale).
 */
export function fewestCopies(times: readonly number[], freshMs: number, freshUntil: number, maxStale: number): number[] {
  const n = times.length
  // next[i]: the first ask a copy landed at ask i does not serve fresh.
  const next: number[] = []
  for (let i = 0, j = 0; i < n; i++) {
    while (j < n && times[j]! < times[i]! + freshMs) j++
    next.push(j)
  }
  // fewest[i][s]: the fewest copies for the asks from i on, ask i not served fresh by a copy, at most s stale.
  const fewest: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(maxStale + 1).fill(0))
  for (let i = n - 1; i >= 0; i--) {
    for (let s = 0; s <= maxStale; s++) {
      const landed = 1 + fewest[next[i]!]![s]!
      fewest[i]![s] = s > 0 ? Math.min(landed, fewest[i + 1]![s - 1]!) : landed
    }
  }
  const first = times.findIndex((t) => t >= freshUntil)
  return fewest[first === -1 ? n : first]!
}

/**
 * The fewest copies that serve every report of `reports` (each its asks, ms, ascending) with
 * at most `maxStale` answers past freshness among all of them, the stale answers placed where
 * they spare the most copies; `freshUntil`: per report, until when a copy already there serves
 * its asks fresh.
 */
export function fewestCopiesOf(reports: ReadonlyArray<readonly number[]>, freshMs: number, freshUntil: readonly number[], maxStale: number): number {
  // best[s]: the fewest copies for the reports so far with at most s stale answers among them.
  let best = new Array<number>(maxStale + 1).fill(0)
  reports.forEach((times, r) => {
    const own = fewestCopies(times, freshMs, freshUntil[r]!, maxStale)
    best = best.map((_, s) => Math.min(...own.slice(0, s + 1).map((copies, k) => copies + best[s - k]!)))
  })
  return best[maxStale]!
}

/** Copies made and answers past freshness of a policy, over one report's asks. */
export interface Served {
  copies: number
  stale: number
}

/**
 * A cache that knows the asks but not the platform's latency: when an ask comes that its copy
 * cannot serve fresh, its call started `leadMs` before that ask, landing after a latency drawn
 * by `latencyMs`; the asks before it lands are served stale. Its copies: the calls started at
 * `fromMs` or later (those before are the warm-up's); the copy there first lands by `freshUntil − F`.
 */
export function askLedCopies(times: readonly number[], freshMs: number, freshUntil: number, leadMs: number, latencyMs: () => number, fromMs: number): Served {
  const served = { copies: 0, stale: 0 }
  let landed = freshUntil - freshMs
  for (const t of times) {
    if (t >= landed + freshMs) {
      const start = t - leadMs
      if (start >= fromMs) served.copies += 1
      landed = start + latencyMs()
    }
    if (t < landed) served.stale += 1
  }
  return served
}

/**
 * A cache that knows neither the asks nor the latency, only that the report is asked: each
 * copy's call starts `leadMs` before it expires, whether or not it will be asked, from the copy
 * that lands at `landedMs` until `untilMs`; counted from `fromMs`.
 */
export function timedCopies(times: readonly number[], freshMs: number, landedMs: number, leadMs: number, latencyMs: () => number, fromMs: number, untilMs: number): Served {
  const served = { copies: 0, stale: 0 }
  const lands = [landedMs]
  for (let start = landedMs + freshMs - leadMs; start < untilMs; start = lands.at(-1)! + freshMs - leadMs) {
    if (start >= fromMs) served.copies += 1
    lands.push(start + latencyMs())
  }
  let k = 0
  for (const t of times) {
    while (k + 1 < lands.length && lands[k + 1]! <= t) k += 1
    if (t >= lands[k]! + freshMs) served.stale += 1
  }
  return served
}
