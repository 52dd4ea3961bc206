import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto'

const TAG_BYTES = 32

/**
 * Redis is shared, not trusted: whoever may write to it must not be
 * able to speak for the gateway. What a replica writes there (report entries, pauses,
 * bus messages) carries an HMAC-SHA256 with a key derived from GATEWAY_SECRET, bound to
 * where it lives (its Redis key, its bus channel): a value copied under another key, or
 * a message replayed on another channel, does not verify. The subkey is its own, so a
 * seal never doubles as the token store's encryption key.
 *
 * A fallback secret (GATEWAY_SECRET_FALLBACK) is one more whose seals are taken, never
 * one sealed with: replicas of two secrets read each other's values through a rotation.
 */
export class RedisSeal {
  // Key objects made once: createHmac given raw bytes makes one on every call (a tenth of
  // an L2 hit's seal check, profiled).
  readonly #key: KeyObject
  readonly #fallback: KeyObject | null

  constructor(secret: string, fallback: string | null = null) {
    this.#key = sealKey(secret)
    this.#fallback = fallback === null ? null : sealKey(fallback)
  }

  /** Whether a fallback secret is configured: a change of GATEWAY_SECRET is under way (step 2). */
  get hasFallback(): boolean { return this.#fallback !== null }

  /** The tag followed by `data`. */
  seal(binding: string, data: Buffer): Buffer {
    return Buffer.concat([tag(this.#key, binding, data), data])
  }

  /** The data of a sealed value, or null when it is not this gateway's for `binding`. */
  open(binding: string, sealed: Buffer): Buffer | null {
    if (sealed.length < TAG_BYTES) return null
    const data = sealed.subarray(TAG_BYTES)
    return this.#verifies(sealed.subarray(0, TAG_BYTES), binding, data) ? data : null
  }

  /** `<tag, base64url>.<text>`: for values and messages that are text. */
  sealText(binding: string, text: string): string {
    return `${tag(this.#key, binding, Buffer.from(text, 'utf8')).toString('base64url')}.${text}`
  }

  openText(binding: string, sealed: string): string | null {
    const dot = sealed.indexOf('.')
    if (dot < 0) return null
    const given = Buffer.from(sealed.slice(0, dot), 'base64url')
    const text = sealed.slice(dot + 1)
    if (given.length !== TAG_BYTES) return null
    return this.#verifies(given, binding, Buffer.from(text, 'utf8')) ? text : null
  }

  #verifies(given: Buffer, binding: string, data: Buffer): boolean {
    if (timingSafeEqual(given, tag(this.#key, binding, data))) return true
    return this.#fallback !== null && timingSafeEqual(given, tag(this.#fallback, binding, data))
  }
}

function sealKey(secret: string): KeyObject {
  return createSecretKey(createHmac('sha256', secret).update('report-gateway redis-entries').digest())
}

// The binding's length first: no binding and data can be re-split into another pair.
function tag(key: KeyObject, binding: string, data: Buffer): Buffer {
  const where = Buffer.from(binding, 'utf8')
  const length = Buffer.allocUnsafe(4)
  length.writeUInt32BE(where.length, 0)
  return createHmac('sha256', key).update(length).update(where).update(data).digest()
}
