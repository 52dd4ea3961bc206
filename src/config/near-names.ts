// Which known name a mistyped one was meant to be: a variable, a setting.

/**
 * The name of `known` one or two edits from `name` (one for a name shorter than 8
 * characters: HOME is not HOST mistyped), the nearest; null when none is that near.
 */
export function nearestName(name: string, known: Iterable<string>): string | null {
  let best: { known: string; distance: number } | null = null
  for (const candidate of known) {
    const allowed = candidate.length < 8 ? 1 : 2
    const distance = editDistance(name, candidate, allowed)
    if (distance <= allowed && (best === null || distance < best.distance)) best = { known: candidate, distance }
  }
  return best?.known ?? null
}

/** Optimal string alignment distance (insertions, deletions, substitutions, adjacent swaps); anything above `bound` is bound + 1. */
export function editDistance(a: string, b: string, bound: number): number {
  if (Math.abs(a.length - b.length) > bound) return bound + 1
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)]
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min((rows[i - 1]?.[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (rows[i - 1]?.[j - 1] ?? 0) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, (rows[i - 2]?.[j - 2] ?? 0) + 1)
      row.push(d)
    }
    rows.push(row)
  }
  return Math.min(rows[a.length]?.[b.length] ?? bound + 1, bound + 1)
}
