// The sandbox's only source of variation. Every number it reports is a hash of the
// inputs that name it (seed, advertiser, campaign, day, ...), never Math.random, so
// the same question always gets the same answer, in every process and on every run.

const TWO_POW_32 = 2 ** 32

/** A 32-bit avalanche hash of integers (a multiplicative mix closed by murmur3's finalizer). */
export function hash32(...parts: readonly number[]): number {
  let h = 0x811c9dc5
  for (const part of parts) {
    // Fold the high bits in too, so that large seeds still change the data.
    h = Math.imul(h ^ (part | 0) ^ Math.floor(part / TWO_POW_32), 0x9e3779b1)
    h ^= h >>> 15
  }
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

/** A number in [min, max) picked by the hash of `parts`. */
export function between(min: number, max: number, ...parts: readonly number[]): number {
  return min + (max - min) * (hash32(...parts) / TWO_POW_32)
}

/** An element of a non-empty list picked by the hash of `parts`. */
export function pick<T>(items: readonly [T, ...T[]], ...parts: readonly number[]): T {
  return items[hash32(...parts) % items.length] ?? items[0]
}
