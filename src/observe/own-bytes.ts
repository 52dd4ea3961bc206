/**
 * `buf` itself, or a copy when it is a view of a larger buffer it would keep alive: a slice
 * of Node's Buffer pool (or of a read's chunk) pins its whole slab for as long as it lives,
 * so whatever is kept long (a cache copy, a job's result, a secret the log is scrubbed of)
 * keeps its own bytes.
 */
export function ownBytes(buf: Buffer): Buffer {
  if (buf.byteLength === buf.buffer.byteLength) return buf
  // Not from the pool, which would make it a view of a shared slab again.
  const copy = Buffer.allocUnsafeSlow(buf.byteLength)
  buf.copy(copy)
  return copy
}
