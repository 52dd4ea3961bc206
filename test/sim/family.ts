import { expect } from 'vitest'

/**
 * A seeded family judged against its known misses: seeds 1 to `count`, each judged by `judge`
 * (what the seed breaks: none, null or [] where it holds). Fails on a seed that misses and is
 * not known (saying what it broke), and on a known one that holds now (to be taken off).
 */
export async function expectKnownMisses(count: number, known: readonly number[], judge: (seed: number) => Promise<string | readonly string[] | null>): Promise<void> {
  const missed: number[] = []
  const seen: string[] = []
  for (let seed = 1; seed <= count; seed++) {
    const found = await judge(seed)
    const what = found === null ? [] : typeof found === 'string' ? [found] : found
    if (what.length > 0) missed.push(seed)
    if (what.length > 0 && !known.includes(seed)) seen.push(...what)
  }
  expect(seen, seen.join('\n')).toEqual([])
  expect(missed).toEqual(known)
}
