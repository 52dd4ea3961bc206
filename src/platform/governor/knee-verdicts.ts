// The limit rule's arithmetic (knee-estimator.ts): verdicts over the log-likelihood of each guess w (index w − 1), it as the
// shared record carries it, and the calls ahead of an answer (when k had ended, how likely so soon). Pure.

// docs/governor.md, "Constants".
export const SURE = 3
export const MIN_CALLS = 8
export const PRIOR_SPREAD = 0.3
export const PRIOR_DOF = 10
export const TIE = 0.5
const LEAD_MAX = 1000

/** The spread² of residuals whose squares sum to `ss` over `n` of them (a weight), PRIOR_SPREAD worth PRIOR_DOF of them before them. */
export const spread2 = (ss: number, n: number): number => (ss + PRIOR_DOF * PRIOR_SPREAD ** 2) / (n + PRIOR_DOF)

/** Sets every guess from index `from` to `to` further than `lead` below the likeliest at that bound, the evidence set aside added to `lifted` (faded with the rest): the lead is bounded, so a pool that shrank is read as soon whatever was weighed before, and a probe seat's answers tell a pool that grew (docs/governor.md, "The limit rule"). Returns the likeliest's lead over those guesses before. */
export function boundLead(ll: Float64Array, lifted: Float64Array, lead = LEAD_MAX, from = 0, to = ll.length): number {
  const [top, floor] = [Math.max(...ll), Math.max(...ll) - lead]
  const led = top - Math.max(...ll.subarray(from, to))
  for (let i = from; i < to; i++) if (ll[i]! < floor) [lifted[i], ll[i]] = [lifted[i]! + floor - ll[i]!, floor]
  return led
}

/** Whether the evidence surely puts W below `level` (the likeliest w below it e^SURE times likelier than any at or above it), and the likeliest w below it. */
export function verdicts(ll: Float64Array, level: number): { queueBelow: boolean; best: number } {
  let [below, best] = [-Infinity, 1]
  for (let i = 0; i < Math.min(level - 1, ll.length); i++) if (ll[i]! > below) [below, best] = [ll[i]!, i + 1]
  let above = -Infinity
  for (let i = Math.max(0, level - 1); i < ll.length; i++) above = Math.max(above, ll[i]!)
  return { queueBelow: below - above > SURE, best }
}

/** Where a sure queue at the probe seat (`knee` + 1) puts the knee: the likeliest w below the seat, or the knee itself where it is within TIE of that (the evidence does not tell the knee from it). */
export function probeFall(ll: Float64Array, knee: number): number {
  const { best } = verdicts(ll, knee + 1)
  return ll[knee - 1]! >= ll[best - 1]! - TIE ? knee : best
}

/** Where a sure queue at the start's level puts the knee: the highest w below it within TIE of the likeliest w below it (the evidence does not tell them apart, and a knee below W idles a worker). */
export function highestTied(ll: Float64Array, level: number): number {
  const { best } = verdicts(ll, level)
  for (let w = Math.min(level - 1, ll.length); w > best; w--) if (ll[w - 1]! >= ll[best - 1]! - TIE) return w
  return best
}

/** The highest w such that every guess at or above it is e^`sure` times likelier than any below it (0: none). */
export function highestRoom(ll: Float64Array, sure = SURE): number {
  const prefix = new Float64Array(ll.length)
  for (let i = 0, m = -Infinity; i < ll.length; i++) prefix[i] = m = Math.max(m, ll[i]!)
  let suffix = -Infinity
  for (let i = ll.length - 1; i >= 1; i--) {
    suffix = Math.max(suffix, ll[i]!)
    if (suffix - prefix[i - 1]! > sure) return i + 1
  }
  return 0
}

/** How many of the ends from index `from` on were read before window `window` (ends in read order by their serials). */
export function endedBefore(serials: readonly number[], from: number, window: number): number {
  let ended = 0
  for (let i = from; i < serials.length; i++) if ((serials[i] as number) < window) ended++
  return ended
}

/** The index of the first of `times` at or after `cut` from index `from` on (-1: none): `times.findIndex((t) => t >= cut)` where none before `from` is at or after `cut`. */
export function firstAtOrAfter(times: readonly number[], cut: number, from: number): number {
  for (let i = from; i < times.length; i++) if (times[i]! >= cut) return i
  return -1
}

/** A(k): when k calls ahead had ended, this replica's counted and the others' at `rate` (per ms; 0: none, the k-th end seen here); null: not before the last end seen. */
export function endAt(ends: readonly number[], rate: number, k: number): number | null {
  if (rate === 0) return k <= ends.length ? (ends[k - 1] as number) : null
  let seen = 0
  for (const e of ends) {
    if (seen + rate * e >= k) return (k - seen) / rate
    if (++seen + rate * e >= k) return e
  }
  return rate > 0 ? (k - seen) / rate : null
}

/** The chance that `m` or more of `of` calls ended, `mean` of them expected (Poisson). */
export function atLeast(m: number, of: number, mean: number): number {
  if (m <= 0) return 1
  if (m > of || mean <= 0) return 0
  let [term, below] = [Math.exp(-mean), 0]
  for (let j = 0; j < m; j++, term *= mean / j) below += term
  return Math.max(0, 1 - below)
}

/** The log-likelihoods `ll` of each w at `now`, as the shared limit record carries them to the next learner (docs/governor.md, "the learner"): each below the likeliest, in tenths of a nat, and the moment. */
export function writeEvidence(ll: Float64Array, now: number): string {
  const top = Math.max(...ll)
  return `${Math.round(now)};${Array.from(ll, (x) => Math.round((top - x) * 10)).join(',')}`
}

/** The evidence with its moment moved by `ms`: from one clock to another. */
export function movedEvidence(text: string, ms: number): string {
  const head = text.slice(0, Math.max(0, text.indexOf(';')))
  return ms === 0 || !/^\d+$/.test(head) ? text : `${Math.max(0, Number(head) + ms)}${text.slice(head.length)}`
}

/** The evidence a record carries for `max` guesses, faded to `now` over `fadeMs`; null where there is none or it is not one. */
export function readEvidence(text: string | null, max: number, now: number, fadeMs: number): Float64Array | null {
  const m = text === null ? null : /^(\d+);(\d+(?:,\d+)*)$/.exec(text)
  if (m === null) return null
  const tenths = (m[2] as string).split(',').map(Number)
  if (tenths.length !== max) return null
  const f = Math.exp(-Math.max(0, now - Number(m[1])) / fadeMs)
  return Float64Array.from(tenths, (t) => (-t / 10) * f)
}
