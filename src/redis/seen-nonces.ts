import { randomBytes } from 'node:crypto'

/**
 * A bus message's nonce: `<sender>-<sequence>`, the publishing bus's random id (48 bits,
 * hex) and the number of messages it published before (from 1). Unique per message, and
 * ordered per sender: what a replica remembers of the nonces it took is one number per
 * sender and channel, not one entry per message, so its memory does not grow with the
 * traffic.
 */
export class NonceSource {
  readonly #sender = randomBytes(6).toString('hex')
  #sequence = 0

  next(): string {
    this.#sequence += 1
    return `${this.#sender}-${this.#sequence}`
  }
}

const NONCE = /^([0-9a-f]{12})-([1-9]\d{0,14})$/

// Messages of one sender may overtake each other by a little (a Cluster client sends each
// PUBLISH to a node of its choosing): the sequences this far below the highest taken are
// remembered one by one, older ones are refused.
export const NONCE_WINDOW = 64
const WINDOW_MASK = (1n << BigInt(NONCE_WINDOW)) - 1n

interface Heard {
  /** The highest sequence taken from this sender on this channel. */
  sequence: number
  /** Bit i: sequence - i was taken. */
  window: bigint
  /** When its latest message was sent (its own time). */
  sentAt: number
}

/**
 * The nonces of the bus messages a replica has taken, for as long as such a message could
 * still be taken (its lifetime: sent at most `maxAgeMs` before or after the reader's
 * clock), so that a message captured and published again is refused: a seal proves who
 * wrote a message, not that it is news. A sender's messages on one channel arrive in
 * about the order it published them: a nonce is taken once within NONCE_WINDOW of the
 * highest taken from its sender, never further below it. A sender not heard of for a message's
 * lifetime is forgotten (its older messages are too old to be taken). Bounded: past
 * `maxEntries` senders and channels, the one heard of longest ago is forgotten and no
 * message sent at or before its last is taken any more (a floor).
 */
export class SeenNonces {
  readonly #maxAgeMs: number
  readonly #maxEntries: number
  /** `<channel> <sender>` → what was taken from it; in the order last heard. */
  readonly #heard = new Map<string, Heard>()
  #floor = Number.NEGATIVE_INFINITY

  constructor(opts: { maxAgeMs: number; maxEntries: number }) {
    this.#maxAgeMs = opts.maxAgeMs
    this.#maxEntries = Math.max(1, opts.maxEntries)
  }

  /** Whether a message on `channel` sent at `sentAt` with `nonce` is news at `now`; it is remembered if so. */
  take(channel: string, nonce: string, sentAt: number, now: number): boolean {
    const parsed = NONCE.exec(nonce)
    if (!parsed || !(Math.abs(now - sentAt) <= this.#maxAgeMs) || sentAt <= this.#floor) return false
    const key = `${channel} ${parsed[1] as string}`
    const sequence = Number(parsed[2])
    const heard = this.#heard.get(key)
    if (heard) {
      if (!taken(heard, sequence, sentAt)) return false
      // Last heard now: to the end of the order.
      this.#heard.delete(key)
      this.#heard.set(key, heard)
      this.#forgetPast(now)
      return true
    }
    this.#forgetPast(now)
    if (this.#heard.size >= this.#maxEntries) {
      const [oldest, last] = this.#heard.entries().next().value as [string, Heard]
      this.#heard.delete(oldest)
      this.#floor = Math.max(this.#floor, last.sentAt)
      if (sentAt <= this.#floor) return false
    }
    this.#heard.set(key, { sequence, window: 1n, sentAt })
    return true
  }

  /** Senders and channels remembered. */
  get size(): number {
    return this.#heard.size
  }

  // In the order last heard: the first ones whose last message is past its lifetime go.
  #forgetPast(now: number): void {
    for (const [key, heard] of this.#heard) {
      if (now - heard.sentAt <= this.#maxAgeMs) return
      this.#heard.delete(key)
    }
  }
}

/** Takes `sequence` into `heard` unless it was taken before or is too far below the highest. */
function taken(heard: Heard, sequence: number, sentAt: number): boolean {
  if (sequence > heard.sequence) {
    const shift = sequence - heard.sequence
    heard.window = shift >= NONCE_WINDOW ? 1n : ((heard.window << BigInt(shift)) | 1n) & WINDOW_MASK
    heard.sequence = sequence
    heard.sentAt = Math.max(heard.sentAt, sentAt)
    return true
  }
  const below = heard.sequence - sequence
  if (below >= NONCE_WINDOW) return false
  const bit = 1n << BigInt(below)
  if ((heard.window & bit) !== 0n) return false
  heard.window |= bit
  return true
}
