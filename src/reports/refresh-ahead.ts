/**
 * When a copy is refreshed ahead: the model of docs/refresh-ahead.md, pure (times passed in).
 *
 * - **Whether**: a copy is refreshed ahead when its report is expected to be asked at least
 *   REFRESH_AHEAD_ASKS times in one freshness. Against a stale-while-revalidate cache
 *   (which calls once the first ask after expiry comes, serving that ask and those during
 *   the call stale), refreshing ahead a report asked at rate λ with freshness F costs
 *   1 / (λ·F) extra platform call per stale answer it spares, whatever the platform's
 *   latency: at λ·F ≥ K, one extra call buys K fresh answers or more. And within a
 *   budget: the refreshes of a team's reports, most asked first, add at most
 *   REFRESH_AHEAD_BUDGET of the calls a stale-while-revalidate cache would make for them
 *   (`budgetAsks`): K prices each refresh, the budget their sum.
 * - **When**: its call starts `lead` before the copy expires, `lead` derived from the
 *   freshness target and the latency of its class (the report's work,
 *   reports/work-class.ts) as its last LATENCY_SAMPLES answers give it: the least lead ℓ
 *   whose expected share of answers past freshness, E[(X − ℓ)⁺] / (F − ℓ + E[X]) for asks
 *   spread evenly in time, is at most LEAD_STALE_SHARE (`shareLead`), plus LEAD_MARGIN_MS.
 *   What the target counts is that share (the mean excess of the latency over the lead),
 *   not how often a call is late, so the lead spends no call on freshness the target does
 *   not ask for. A class answered fewer than MIN_LATENCY_SAMPLES times here leads by a high
 *   bound of its latency, mean + 4 × mean deviation (RFC 6298's retransmission timer), plus
 *   LEAD_MARGIN_MS. A copy whose class takes longer than its freshness is refreshed as soon
 *   as it is asked enough: it cannot be kept fresh, only as fresh as the platform allows.
 * - **Rate**: asks counted over the copy's life up to the refresh's start and over the
 *   earlier copies' (each weighed ASKS_DECAY less than the one after it), per freshness,
 *   never extrapolated from less than one freshness: a report must be asked K times within
 *   one freshness (or at that rate over its copies) before its first refresh ahead. The
 *   asks the fill of a copy answered (a miss and its waiters) do not count for that copy
 *   (`ownAsks`): it exists because it was asked, so its making is no sample of its rate.
 *   They count in the history the next copies carry, as asks of the report over its copies.
 */

/** K: the asks in one freshness that make a refresh ahead worth its call (a price, not a timing: see the module's comment). */
export const REFRESH_AHEAD_ASKS = 3
/** The refreshes' extra platform calls, at most this share of the calls of a stale-while-revalidate cache: half of issue 54's 0.2 (1.2 × nginx's), half left to the estimates' noise (docs/refresh-ahead.md, "The budget"). */
export const REFRESH_AHEAD_BUDGET = 0.1
/**
 * How much of its asks' history a copy carries on to the next (`priorOf`): each copy before
 * weighs this much less than the one after it, so the rate is read from about
 * (1 + d) / (1 − d) = 7 freshnesses' asks once a report has had that many copies, not from
 * one or two Poisson counts (docs/refresh-ahead.md, "The rate over several copies").
 */
export const ASKS_DECAY = 0.75
/** How often (ms) the budget's fewest asks (`budgetAsks`) are worked out again from the watched reports. */
export const BUDGET_EVERY_MS = 1000
/** Added to the lead: the timer's and the dispatch's own delay, which no answer's latency counts. */
export const LEAD_MARGIN_MS = 20
/** How much of each answer moves its class's mean and deviation (RFC 6298's α; β is twice it). */
export const LATENCY_GAIN = 1 / 8
/** The lead, as a share of freshness, of a class not yet answered here (a copy filled by another replica). */
export const UNKNOWN_LEAD_SHARE = 0.2
/**
 * The expected share of a refreshed report's answers its lead lets be past freshness
 * (`shareLead`): a quarter of issue 54's 1 % of popular answers. The rest is the noise of
 * what the lead's arithmetic reads as an expectation: a run's late calls are few and each
 * makes a clump of stale answers, and the class's distribution is read from its last
 * LATENCY_SAMPLES answers (its tail beyond the largest counted as none). On the
 * simulation's shapes the reports it keeps fresh served up to 4 times this share in a run
 * (0.99 % at most over 900 seeds; at 0.005, 1.22 %: docs/decisions/refresh-ahead-model.md).
 */
export const LEAD_STALE_SHARE = 0.0025
/**
 * How many of a class's latest answers its latency distribution is read from: 64 hold two
 * or three answers past the lead of a platform at a quarter of the freshness (4 % of its
 * calls: the family's trace 7), and follow a platform that changes within 64 calls of the
 * class; 512 kept classes (report-cache.ts) hold 32,768 numbers, 256 KB.
 */
export const LATENCY_SAMPLES = 64
/**
 * The answers a class needs before its lead is read from their distribution; fewer: the
 * high bound mean + 4 × mean deviation. Under 32 answers the largest is below the
 * latency's 97th percentile on average, and the excess past a lead is read from one or two.
 */
export const MIN_LATENCY_SAMPLES = 32

/** A class's latency as its answers taught it: mean and mean deviation (ms), RFC 6298's SRTT and RTTVAR, and its latest answers. */
export interface ClassLatency {
  meanMs: number
  devMs: number
  /** The class's latest answers (ms), the oldest first: at most LATENCY_SAMPLES. */
  recentMs: readonly number[]
}

/** The asks of a watched report: of the copy now served, and of the copies before over the span they were counted in. */
export interface AskCount {
  asks: number
  /**
   * Of `asks`, those the fill that made the copy answered (the miss that started it, the
   * callers that waited with it): not counted for the copy itself (`ownAsks`).
   */
  filled?: number
  priorAsks: number
  priorMs: number
}

/** `latency` after one more answer taking `ms` (the first answer: its mean, half of it as deviation, as RFC 6298 starts); a new value, `latency` unchanged. */
export function learnLatency(latency: ClassLatency | undefined, ms: number): ClassLatency {
  if (latency === undefined) return { meanMs: ms, devMs: ms / 2, recentMs: [ms] }
  const devMs = latency.devMs + 2 * LATENCY_GAIN * (Math.abs(ms - latency.meanMs) - latency.devMs)
  return { meanMs: latency.meanMs + LATENCY_GAIN * (ms - latency.meanMs), devMs, recentMs: [...latency.recentMs.slice(1 - LATENCY_SAMPLES), ms] }
}

// The lead of each learned class per freshness: a class's latency is a new value at every answer, so its leads stay right.
const leads = new WeakMap<ClassLatency, Map<number, number>>()

/** How long before a copy with freshness `freshMs` expires its refresh's call starts. */
export function refreshLead(latency: ClassLatency | undefined, freshMs: number): number {
  if (latency === undefined) return UNKNOWN_LEAD_SHARE * freshMs
  if (latency.recentMs.length < MIN_LATENCY_SAMPLES) return latency.meanMs + 4 * latency.devMs + LEAD_MARGIN_MS
  let byFresh = leads.get(latency)
  if (byFresh === undefined) leads.set(latency, (byFresh = new Map()))
  let lead = byFresh.get(freshMs)
  if (lead === undefined) byFresh.set(freshMs, (lead = shareLead(latency.recentMs, freshMs) + LEAD_MARGIN_MS))
  return lead
}

/**
 * The least lead ℓ ≥ 0 (ms) for which a copy of freshness `freshMs`, refreshed ℓ before it
 * expires by calls whose latency X is drawn from `samplesMs`, serves at most `share` of its
 * answers past freshness, expected, its asks spread evenly in time: E[(X − ℓ)⁺] ≤ share ×
 * (F − ℓ + E[X]), a cycle being F − ℓ + X long and past freshness for (X − ℓ)⁺ of it. At
 * most the freshness: a lead of the whole freshness (latencies as long as it or longer)
 * starts the refresh as soon as the copy qualifies.
 */
export function shareLead(samplesMs: readonly number[], freshMs: number, share = LEAD_STALE_SHARE): number {
  const xs = [...samplesMs].sort((a, b) => a - b)
  const n = xs.length
  if (n === 0) return 0
  let sumAbove = xs.reduce((a, x) => a + x, 0)
  const budget = share * (freshMs + sumAbove / n)
  // h(ℓ) = E[(X − ℓ)⁺] − share × (F − ℓ + E[X]) is convex in ℓ and linear between two
  // samples (a − b·ℓ there): its least root is on the first stretch where it reaches 0.
  let from = 0
  for (let above = n, i = 0; ; ) {
    const a = sumAbove / n - budget
    const b = above / n - share
    if (a - b * from <= 0) return Math.min(from, freshMs)
    const to = i < n ? xs[i]! : Infinity
    if (b > 0 && a / b <= to) return Math.min(a / b, freshMs)
    if (i === n) return freshMs
    from = to
    sumAbove -= to
    above -= 1
    i += 1
  }
}

/** A watched report as the budget weighs it: asks expected in one freshness, its freshness, its class's mean latency and lead (ms). */
export interface Demand {
  asksPerFresh: number
  freshMs: number
  latencyMs: number
  leadMs: number
}

/** Platform calls per ms a stale-while-revalidate cache makes for `d`: one per freshness + latency + wait for the next ask. */
export function revalidateCalls(d: Demand): number {
  if (d.asksPerFresh <= 0) return 0
  return 1 / (d.freshMs + d.latencyMs + d.freshMs / d.asksPerFresh)
}

/** Platform calls per ms refreshing `d` ahead makes: one per freshness less the lead's margin over the latency. */
export function aheadCalls(d: Demand): number {
  return 1 / (Math.max(0, d.freshMs - d.leadMs) + Math.max(1, d.latencyMs))
}

/**
 * The fewest asks in one freshness that qualify a report for refresh ahead when the
 * refreshes may add at most `budget` times the calls a stale-while-revalidate cache makes
 * for `demands` (the watched reports): reports are taken most asked first (each extra call
 * spares the most stale answers there: 1/(λ·F) calls each), as long as their extra calls
 * fit; never fewer than `floor`. Infinity: none fits.
 */
export function budgetAsks(demands: readonly Demand[], budget = REFRESH_AHEAD_BUDGET, floor = REFRESH_AHEAD_ASKS): number {
  let total = 0
  for (const d of demands) total += revalidateCalls(d)
  const allowed = budget * total
  let spent = 0
  let threshold = Infinity
  for (const d of [...demands].sort((x, y) => y.asksPerFresh - x.asksPerFresh)) {
    if (d.asksPerFresh < floor) break
    const extra = Math.max(0, aheadCalls(d) - revalidateCalls(d))
    if (spent + extra > allowed) break
    spent += extra
    threshold = d.asksPerFresh
  }
  return threshold
}

/** How a watched copy's report weighs in the budget at `now`: its asks (`count`), freshness and class's latency. */
export function demandOf(copy: { fetchedAt: number; freshUntil: number }, count: AskCount, latency: ClassLatency | undefined, now: number): Demand {
  const freshMs = copy.freshUntil - copy.fetchedAt
  return { asksPerFresh: expectedAsks(ownAsks(count), now - copy.fetchedAt, freshMs), freshMs, latencyMs: latency?.meanMs ?? 0, leadMs: refreshLead(latency, freshMs) }
}

/**
 * The asks that count for a new copy fetched at `fetchedAt`, carried from the watch of the
 * copy before it (`before`; none: a new report): that copy's asks over the part of its
 * freshness it was served in, and the history it carried, weighed `decay` per copy.
 */
export function priorOf(before: (AskCount & { fetchedAt: number; freshUntil: number }) | undefined, fetchedAt: number, decay = ASKS_DECAY): Pick<AskCount, 'priorAsks' | 'priorMs'> {
  if (before === undefined) return { priorAsks: 0, priorMs: 0 }
  const servedMs = Math.max(0, Math.min(fetchedAt, before.freshUntil) - before.fetchedAt)
  return { priorAsks: before.asks + decay * before.priorAsks, priorMs: servedMs + decay * before.priorMs }
}

/** `count` without the asks the fill of its copy answered: the copy exists because it was asked, so they say nothing of how often it is. */
export function ownAsks(count: AskCount): AskCount {
  return count.filled ? { ...count, asks: count.asks - count.filled, filled: 0 } : count
}

/** The asks expected in one freshness `freshMs` from `count`, counted up to `untilMs` after the copy was fetched. */
export function expectedAsks(count: AskCount, untilMs: number, freshMs: number): number {
  const span = count.priorMs + Math.max(0, untilMs)
  return ((count.asks + count.priorAsks) * freshMs) / Math.max(freshMs, span)
}

/**
 * When the refresh ahead of a copy fetched at `fetchedAt`, fresh until `freshUntil`, starts
 * (epoch ms; `now` or earlier: at once), as known at `now` after its asks `count`; null: not
 * (yet) asked enough to be refreshed ahead. Asks are counted as if none came before the
 * refresh's start: a copy that qualifies now still qualifies then; the asks its own fill
 * answered are not counted (`ownAsks`). `minAsks`: K (another
 * only to measure the price of another K, test/sim/refresh-ahead.test.ts).
 */
export function refreshAheadStart(copy: { fetchedAt: number; freshUntil: number }, count: AskCount, leadMs: number, now: number, minAsks = REFRESH_AHEAD_ASKS): number | null {
  const freshMs = copy.freshUntil - copy.fetchedAt
  if (freshMs <= 0 || now >= copy.freshUntil) return null
  const start = Math.max(copy.fetchedAt, copy.freshUntil - leadMs)
  if (expectedAsks(ownAsks(count), Math.max(now, start) - copy.fetchedAt, freshMs) < minAsks) return null
  return start
}

