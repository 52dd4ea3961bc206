// Order statistics of a window's answers: pure functions over a list of numbers.

/** The value at `p` (0 to 1) of `values` (nearest rank); `values` is not empty. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] as number
}

/** The middle of `values`, or the mean of the two middle ones; `values` is not empty. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}
