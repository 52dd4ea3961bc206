// What a memo entry keeps on the heap, counted the way V8 lays it out (64-bit, pointer
// compression off: the upper bound). A memo bounded by the URL's length alone would undercount
// what it keeps by half or more (the canonical query spells `+` as `%20`, and the
// parsed parameters are a third copy), so every string and object an entry holds is counted.

const STRING_HEADER = 16
const OBJECT_HEADER = 24
const SLOT = 8
/** What lru-cache spends on an entry besides key and value: its slots in the index arrays and the Map. */
export const LRU_ENTRY_BYTES = 128

/** Bytes a value keeps: strings at two bytes a character, every object and array slot counted. */
export function keptBytes(value: unknown): number {
  if (typeof value === 'string') return STRING_HEADER + 2 * value.length
  if (value === null || typeof value !== 'object') return SLOT
  // Counted once per new memo entry (every report miss): loops that allocate nothing.
  let sum = OBJECT_HEADER
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) sum += SLOT + keptBytes(value[i])
    return sum
  }
  const record = value as Record<string, unknown>
  for (const name in record) {
    if (Object.hasOwn(record, name)) sum += SLOT + STRING_HEADER + 2 * name.length + keptBytes(record[name])
  }
  return sum
}

/** A memo entry's size for lru-cache's sizeCalculation: key, value and the cache's own slots. */
export function entryBytes(value: unknown, key: string): number {
  return LRU_ENTRY_BYTES + keptBytes(key) + keptBytes(value)
}
