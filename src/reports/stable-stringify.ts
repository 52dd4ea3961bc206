// Deterministic JSON for cache keys and canonical bodies: two spellings of one object
// give one string, so keys are a hash of it rather than raw strings glued together.

type Json = string | undefined

// Built by concatenation, not arrays joined: a cache key is made at every read.
function encode(input: unknown, key: string | number): Json {
  let value = input
  // JSON.stringify honours toJSON (Date and friends); doing the same keeps the output
  // identical to JSON.stringify apart from key order.
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON: (key: string) => unknown }).toJSON(String(key))
  }
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value)
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null'
    case 'boolean':
      return value ? 'true' : 'false'
    case 'bigint':
      throw new TypeError('stableStringify: a BigInt is not JSON-serializable')
    case 'object': {
      if (value === null) return 'null'
      if (Array.isArray(value)) {
        let out = '['
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out += ','
          out += encode(value[i], i) ?? 'null'
        }
        return `${out}]`
      }
      const record = value as Record<string, unknown>
      let out = ''
      // Plain code-unit order: JS objects enumerate integer-like keys first whatever
      // their insertion order, so relying on insertion order would not be stable.
      for (const name of Object.keys(record).sort()) {
        const member = encode(record[name], name)
        if (member === undefined) continue
        out += `${out === '' ? '{' : ','}${JSON.stringify(name)}:${member}`
      }
      return out === '' ? '{}' : `${out}}`
    }
    default:
      return undefined
  }
}

/**
 * Deterministic JSON: object keys sorted recursively, arrays in order, `undefined`,
 * functions and symbols dropped from objects (null in arrays) as JSON.stringify does.
 */
export function stableStringify(value: unknown): string {
  const out = encode(value, '')
  if (out === undefined) throw new TypeError(`stableStringify: a top-level ${typeof value} is not JSON-serializable`)
  return out
}
