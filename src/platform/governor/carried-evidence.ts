/**
 * The limit rule's evidence as the shared limit record carries it from one learner to the
 * next (docs/governor.md, "the learner"): the log-likelihood of each w below the likeliest,
 * in tenths of a nat, and the moment it was weighed. A replica that takes over starts from
 * it, faded as its own evidence fades, rather than from none.
 */

/** The log-likelihoods `ll` of each w at `now`, as the record carries them. */
export function writeEvidence(ll: Float64Array, now: number): string {
  const top = Math.max(...ll)
  return `${Math.round(now)};${Array.from(ll, (x) => Math.round((top - x) * 10)).join(',')}`
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
