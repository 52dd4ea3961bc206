// The limit rule's arithmetic of the calls ahead of an answer (knee-estimator.ts): when k had ended, how likely so soon. Pure.

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
