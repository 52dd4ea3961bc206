/**
 * A listener's description, written at its first ask: a listener's routes are fixed once
 * it listens, so every answer holds that one copy. Asks pipelined on one connection are
 * all read before any answer goes (some 1,600 in a 64 KB read), and an answer a caller
 * does not read waits whole in the gateway: written per ask, each would be a copy, and
 * the YAML of the proxy's document takes some 100 ms of the event loop to write.
 */
export function writtenOnce(write: () => string): () => Buffer {
  let written: Buffer | undefined
  return () => (written ??= Buffer.from(write()))
}
