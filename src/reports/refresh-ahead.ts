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
 * - **When**: its call starts `lead` before the copy expires, `lead` priced per report
 *   (`refreshLead`): the least at which a longer one spares at most LEAD_PRICE stale answers
 *   per call it adds, by the report's rate and its class's latency (the report's work,
 *   reports/work-class.ts) fitted as a log-normal, at most a high bound of that latency,
 *   mean + 4 × mean deviation (RFC 6298's retransmission timer), plus LEAD_MARGIN_MS; the
 *   latency of the class's refreshes ahead once one was answered (`leadLatency`: they wait
 *   behind their team's callers' calls for a seat). A popular report is called once per
 *   F − (lead − latency). The start is read again at each ask of the copy with the lead then
 *   (`rescheduledStart`): a lead learned after the timer was set (a burst's seat waits, a
 *   rate read higher) moves it. A copy whose class takes longer than its freshness is
 *   refreshed as soon as it is asked enough: it cannot be kept fresh, only as fresh as the
 *   platform allows.
 * - **Rate**: asks counted over the copy's life up to the refresh's start and over the
 *   earlier copies' (each weighed ASKS_DECAY less than the one after it), per freshness,
 *   never extrapolated from less than one freshness: a report must be asked K times within
 *   one freshness (or at that rate over its copies) before its first refresh ahead. The
 *   asks the fill of a copy answered (a miss and its waiters) do not count for that copy
 *   (`ownAsks`): it exists because it was asked, so its making is no sample of its rate.
 *   They count in the history the next copies carry, as asks of the report over its copies.
 */

/**
 * K: the asks in one freshness that make a refresh ahead worth its call (a price, not a
 * timing: see the module's comment), the budget choosing among the reports above it. 2:
 * the least price at which the reports of the freshness guarantee, asked 2K times a
 * freshness, lose at most 1 % of their answers to copies nobody asked while fresh (a
 * refresh is set by an ask of the fresh copy, so e^(−a) of the copies of a report asked
 * a times a freshness are not refreshed: 0.46 % at a = 4, 1.6 % at 3); docs/refresh-ahead.md, rule 1.
 */
export const REFRESH_AHEAD_ASKS = 2
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
/** Added to the lead: the timer's and the dispatch's own delay. */
export const LEAD_MARGIN_MS = 20
/**
 * The stale answers each platform call a longer lead adds must spare (`refreshLead`): one.
 * Rule 1's K = 2 puts each report's share of answers past freshness at about 15 / a % on a
 * class like trace 7's (1.3 % at 6.6 asks a freshness on the simulation's seed 63, over the
 * guarantee's 1 %); at one the simulation's guarantees hold on every shape
 * (docs/refresh-ahead.md, rule 2, "The lead priced per report").
 */
export const LEAD_PRICE = 1
/** How close to the least lead at LEAD_PRICE the lead is found (ms): the timers' own resolution. */
export const LEAD_PRECISION_MS = 1
/** How much of each answer moves its class's mean and deviation (RFC 6298's α; β is twice it). */
export const LATENCY_GAIN = 1 / 8
/** The lead, as a share of freshness, of a class not yet answered here (a copy filled by another replica). */
export const UNKNOWN_LEAD_SHARE = 0.2

/** A class's latency as its answers taught it: mean and mean deviation (ms), RFC 6298's SRTT and RTTVAR. */
export interface ClassLatency {
  meanMs: number
  devMs: number
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

/** `latency` after one more answer taking `ms` (the first answer: its mean, half of it as deviation, as RFC 6298 starts). */
export function learnLatency(latency: ClassLatency | undefined, ms: number): ClassLatency {
  if (latency === undefined) return { meanMs: ms, devMs: ms / 2 }
  const devMs = latency.devMs + 2 * LATENCY_GAIN * (Math.abs(ms - latency.meanMs) - latency.devMs)
  return { meanMs: latency.meanMs + LATENCY_GAIN * (ms - latency.meanMs), devMs }
}

/**
 * The latency a class's refreshes ahead are led by: their own once one was answered, else all
 * the class's calls'. A refresh ahead waits for a seat behind its team's callers' calls (the
 * governor's order, platform/governor/fair-queue.ts): beside another team's burst the callers'
 * calls are seated first and fast, the refreshes after them and slow, and all the class's calls
 * together read the refreshes' waits as spread, four times over (docs/refresh-ahead.md, rule 2).
 */
export function leadLatency(refreshes: ClassLatency | undefined, calls: ClassLatency | undefined): ClassLatency | undefined {
  return refreshes ?? calls
}

/**
 * How long before a copy with freshness `freshMs` of a report asked `asksPerFresh` times a
 * freshness expires its refresh's call starts: the least lead at which lengthening it spares
 * at most LEAD_PRICE stale answers per platform call it adds, capped by the class's latency
 * bound (mean + 4 mean deviations, RFC 6298's timer) and the freshness, plus LEAD_MARGIN_MS.
 * A report refreshed with lead ℓ, its calls taking X, is called once per C = F − ℓ + E[X] and
 * is past freshness E[(X − ℓ)⁺] of each cycle; a longer lead costs dℓ / C² calls a unit of time
 * and spares λ(P(X > ℓ)·C − E[(X − ℓ)⁺])·dℓ / C² answers, falling as ℓ grows. So the most asked
 * reports are led long and those at the budget's edge short, and the budget's calls reach
 * further down (docs/refresh-ahead.md, rule 2).
 */
export function refreshLead(latency: ClassLatency | undefined, freshMs: number, asksPerFresh: number): number {
  if (latency === undefined) return UNKNOWN_LEAD_SHARE * freshMs
  const bound = Math.min(freshMs, latency.meanMs + 4 * latency.devMs)
  if (latency.meanMs <= 0) return bound + LEAD_MARGIN_MS
  // At ℓ = 0 every call is late: a lead spares at most λF, the asks a freshness, per call it adds.
  if (asksPerFresh <= LEAD_PRICE) return LEAD_MARGIN_MS
  // X log-normal of the class's mean and mean deviation (standard deviation √(π/2) × the mean
  // deviation, as for a normal; the deviation at least 1e-6 ms): log X ~ N(mu, s²).
  const cv = (Math.sqrt(Math.PI / 2) * Math.max(1e-6, latency.devMs)) / latency.meanMs
  const s2 = Math.log(1 + cv * cv)
  const s = Math.sqrt(s2)
  const mu = Math.log(latency.meanMs) - s2 / 2
  const rate = asksPerFresh / freshMs
  // Stale answers spared per call the lead adds at lead ℓ > 0, less the price, falling as ℓ grows:
  // λ(P(X > ℓ)·(F − ℓ + E[X]) − E[(X − ℓ)⁺]) − LEAD_PRICE = λ(P(X > ℓ)·(F + E[X]) − E[X]·P(log X > log ℓ + s²)) − LEAD_PRICE.
  let z = 0
  const excessAt = (lead: number): number => {
    z = (Math.log(lead) - mu) / s
    return rate * (upperTail(z) * (freshMs + latency.meanMs) - latency.meanMs * upperTail(z - s)) - LEAD_PRICE
  }
  // A bracket of the root first, [low, high] at most LEAD_PRECISION_MS wide: above the price at `low` (or 0),
  // at most it at `high` (or the bound, unpriced). Its first lead priced is where P(X > ℓ)·(F + E[X]) alone
  // falls to the price, at or past the root; each next is Newton's from the one before (the slope at ℓ:
  // −λ·φ(z)·(F + E[X] − ℓ) / (s·ℓ)), a quarter of the precision past the root it predicts so that once Newton's
  // error is under that quarter the next lands on the root's other side; halved where Newton's leaves the
  // bracket or moves more than half the move before it (Numerical Recipes' rtsafe).
  let [low, high, moved] = [0, bound, bound]
  let lead = Math.min(bound, Math.exp(mu + s * upperQuantile(LEAD_PRICE / (rate * (freshMs + latency.meanMs)))))
  let excess = excessAt(lead)
  for (;;) {
    if (excess <= 0) high = lead
    else low = lead
    if (high - low <= LEAD_PRECISION_MS) break
    const slope = (-rate * Math.exp(-0.5 * z * z) * (freshMs + latency.meanMs - lead)) / (Math.sqrt(2 * Math.PI) * s * lead)
    const newton = lead - excess / slope + (excess > 0 ? 1 : -1) * (LEAD_PRECISION_MS / 4)
    const next = newton > low && newton < high && Math.abs(newton - lead) <= moved / 2 ? newton : (low + high) / 2
    moved = Math.abs(next - lead)
    lead = next
    excess = excessAt(lead)
  }
  // The lead: [0, bound] halved to LEAD_PRECISION_MS, `short` sparing more than the price, `long` at most it. A
  // midpoint outside the bracket is on the side of the root its end there is (the worth falls as ℓ grows), priced
  // only within it: about four pricings in all where the halving alone prices one per bit of bound / precision
  // (eight to fourteen), the same lead.
  let short = 0
  let long = bound
  while (long - short > LEAD_PRECISION_MS) {
    const mid = (short + long) / 2
    if (mid >= high || (mid > low && excessAt(mid) <= 0)) long = mid
    else short = mid
  }
  return long + LEAD_MARGIN_MS
}

/** The z at which P(Z > z) = q of a standard normal, 0 < q < 1, by Abramowitz and Stegun's 26.2.23 (error under 4.5e-4): a first guess. */
function upperQuantile(q: number): number {
  const t = Math.sqrt(-2 * Math.log(Math.min(q, 1 - q)))
  const z = t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308)))
  return q <= 0.5 ? z : -z
}

/** P(Z > z) of a standard normal, by Numerical Recipes' erfc (fractional error under 1.2e-7). */
function upperTail(z: number): number {
  const x = z / Math.SQRT2
  const a = Math.abs(x)
  const t = 1 / (1 + 0.5 * a)
  const erfc = t * Math.exp(-a * a - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
  return 0.5 * (x >= 0 ? erfc : 2 - erfc)
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

/** How a watched copy's report weighs in the budget at `now`: its asks (`count`), freshness, class's latency and its own lead. */
export function demandOf(copy: { fetchedAt: number; freshUntil: number }, count: AskCount, latency: ClassLatency | undefined, now: number): Demand {
  const freshMs = copy.freshUntil - copy.fetchedAt
  const asksPerFresh = expectedAsks(ownAsks(count), now - copy.fetchedAt, freshMs)
  return { asksPerFresh, freshMs, latencyMs: latency?.meanMs ?? 0, leadMs: refreshLead(latency, freshMs, asksPerFresh) }
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

/** When the refresh ahead of `copy` starts with its class's lead `leadMs`: the lead before it expires, at its fetch at the earliest. */
function leadStart(copy: { fetchedAt: number; freshUntil: number }, leadMs: number): number {
  return Math.max(copy.fetchedAt, copy.freshUntil - leadMs)
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
  const start = leadStart(copy, leadMs)
  if (expectedAsks(ownAsks(count), Math.max(now, start) - copy.fetchedAt, freshMs) < minAsks) return null
  return start
}

/**
 * The start of a refresh ahead scheduled at `dueAt` for `copy`, read again at an ask with its
 * class's lead now (`leadMs`); null: as it is. The start is the lead before expiry with the lead
 * as of the copy's last ask, not as of the ask that set the timer: a lead grown since (a burst's
 * seat waits learned meanwhile) starts the call earlier, a lead shrunk later (the longest lead
 * seen while the timer waited would call more often than the budget prices). A move within
 * LEAD_MARGIN_MS, the timer's own delay, leaves it. docs/refresh-ahead.md, rule 2.
 */
export function rescheduledStart(copy: { fetchedAt: number; freshUntil: number }, dueAt: number, leadMs: number): number | null {
  const start = leadStart(copy, leadMs)
  return Math.abs(start - dueAt) > LEAD_MARGIN_MS ? start : null
}
