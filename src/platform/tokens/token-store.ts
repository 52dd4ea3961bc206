import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import type { Config } from '../../config.js'
import type { RedisBreaker } from '../../redis/breaker.js'
import type { RedisBus } from '../../redis/bus.js'
import type { RedisClient } from '../../redis/client.js'
import type { TokenProvider, TokenState } from './token-provider.js'
import type { TokenRegistry } from './token-registry.js'
import type { Clock, Timer } from '../../clock.js'
import { redisKey } from '../../redis/keys.js'
import { redisScript } from '../../redis/script.js'

const CHANNEL = 'token'

/** What the token store reads of the gateway; the composition root hands it these. */
export interface TokenStoreParts {
  config: Config
  log: Logger
  redis: RedisClient | null
  breaker: RedisBreaker | null
  bus: RedisBus | null
  tokens: TokenRegistry
  clock: Clock
}

/**
 * The record format. Format 2 authenticates every field beside the ciphertext (see
 * associatedData); a record of any other format, such as format 1 whose version and
 * fingerprint anyone with Redis access could rewrite, is treated as absent and written over.
 */
const FORMAT = 2
/** The full GCM tag: a shorter one given in a record would weaken its authentication. */
const TAG_BYTES = 16

interface StoredToken {
  v: typeof FORMAT
  iv: string
  tag: string
  data: string
  version: number
  base: string
  fingerprint: string
  obtainedAt: number
  expiresAt: number
}

interface SharedToken {
  state: TokenState
  base: string
}

/** A stored record; `shared` is null when it fails authentication. */
interface StoredRead {
  /** The value as read: a write may replace it, if unchanged, when it fails authentication. */
  raw: string
  shared: SharedToken | null
}

// Writes only when the stored version is older: the last writer by version wins, so
// two replicas never undo each other's rotation. The stored version is not authenticated
// here (Lua cannot check the GCM tag): a record that a replica found unauthentic is
// passed back as ARGV[3] and written over if unchanged, so a forged high version cannot
// keep rotations out. Anything that is not a format-2 record with a numeric version
// (garbage, an older format) does not count either, and never makes the script fail.
const WRITE_IF_NEWER = redisScript<number>('gatewayTokenWrite', `
local cur = redis.call('get', KEYS[1])
if cur and cur ~= ARGV[3] then
  local ok, decoded = pcall(cjson.decode, cur)
  if ok and type(decoded) == 'table' and decoded.v == ${FORMAT} then
    local version = tonumber(decoded.version)
    if version and version >= tonumber(ARGV[2]) then return 0 end
  end
end
redis.call('set', KEYS[1], ARGV[1])
return 1`, 1)

/**
 * Central rotation: the current token of each credential, AES-256-GCM
 * encrypted with a key from GATEWAY_SECRET, in Redis, announced on pub/sub. Without
 * GATEWAY_SECRET or Redis nothing is written and each replica keeps its own token.
 */
export class TokenStore {
  readonly #ctx: TokenStoreParts
  readonly #key: Buffer | null
  #catchUp: Timer | null = null

  constructor(ctx: TokenStoreParts) {
    this.#ctx = ctx
    this.#key = ctx.config.gatewaySecret ? createHash('sha256').update(`report-gateway token store\0${ctx.config.gatewaySecret}`).digest() : null
  }

  get enabled(): boolean {
    return this.#key !== null && this.#ctx.redis !== null && this.#ctx.bus !== null
  }

  async start(): Promise<void> {
    if (!this.enabled) return
    const bus = this.#ctx.bus
    await bus?.subscribe(CHANNEL, (message) => void this.#onAnnouncement(message))
    // The gateway's start waited for the connection (see whenReady in redis/client.ts).
    for (const provider of this.#ctx.tokens.all()) {
      await this.#reconcile(provider)
      provider.on('change', ({ state, reason }) => {
        if (reason !== 'shared') void this.#publish(provider, state)
      })
    }
    // Pub/sub loses what is announced while a subscriber reconnects: a periodic read of the
    // stored tokens brings such a replica up to date.
    this.#catchUp = this.#ctx.clock.setInterval(() => {
      for (const provider of this.#ctx.tokens.all()) void this.#adoptStored(provider)
    }, this.#ctx.config.platform.maintenanceMs)
    this.#catchUp.unref()
  }

  close(): void {
    if (this.#catchUp) this.#ctx.clock.clearInterval(this.#catchUp)
    this.#catchUp = null
  }

  // A replica that starts later takes a rotation made on top of the same configuration
  // (the same static token or token file content), and any stored token when it has none
  // of its own; a changed configuration (a new PLATFORM_TOKEN rolled out) or a fresh
  // password login replaces the stored token.
  async #reconcile(provider: TokenProvider): Promise<void> {
    const stored = (await this.#read(provider.name))?.shared
    const current = provider.current()
    const sameBase = stored?.base === provider.configuredBase && provider.configuredBase !== 'login'
    if (stored && (!current || sameBase)) {
      provider.adopt(stored.state, true)
      return
    }
    if (current) await this.#publish(provider, current)
  }

  async #publish(provider: TokenProvider, state: TokenState): Promise<void> {
    const { redis, bus, breaker, log } = this.#ctx
    if (!redis || !bus || !breaker || !this.#key) return
    const key = this.#redisKey(provider.name)
    const iv = randomBytes(12)
    const fields = {
      v: FORMAT,
      version: state.version,
      base: provider.configuredBase,
      fingerprint: state.fingerprint,
      obtainedAt: state.obtainedAt,
      expiresAt: state.expiresAt,
    } as const
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES })
    cipher.setAAD(associatedData(key, fields))
    const data = Buffer.concat([cipher.update(state.token, 'utf8'), cipher.final()])
    const stored: StoredToken = { ...fields, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') }
    const record = JSON.stringify(stored)
    // An empty value is never a record: nothing to write over unconditionally at first.
    let unauthentic = ''
    // A second attempt only after an unauthentic record refused the first write.
    for (let attempt = 1; ; attempt++) {
      const written = await breaker.run(() => WRITE_IF_NEWER(redis, key, record, String(state.version), unauthentic), null)
      if (written === null) {
        log.error({ credential: provider.name }, 'the new platform token could not be shared through Redis; other replicas keep theirs')
        return
      }
      if (written === 1) break
      const newer = await this.#read(provider.name)
      if (newer?.shared) {
        // Someone rotated more recently, or in the same millisecond: theirs is the current token.
        takeStored(provider, newer.shared.state)
        return
      }
      if (!newer || attempt === 2) return
      unauthentic = newer.raw
    }
    await breaker.run(() => bus.publish(CHANNEL, JSON.stringify({ credential: provider.name, version: state.version })), undefined)
  }

  async #onAnnouncement(message: string): Promise<void> {
    let credential: string
    try {
      credential = (JSON.parse(message) as { credential: string }).credential
    } catch {
      return
    }
    const provider = this.#ctx.tokens.all().find((p) => p.name === credential)
    if (provider) await this.#adoptStored(provider)
  }

  /**
   * Takes the stored token when its version is newer than the one in use. An older one
   * (a replay of a past record) is written over with this replica's, so that a replica
   * starting now does not take it.
   */
  async #adoptStored(provider: TokenProvider): Promise<void> {
    const shared = (await this.#read(provider.name))?.shared
    if (!shared) return
    const current = provider.current()
    if (current && shared.state.version < current.version) await this.#publish(provider, current)
    else takeStored(provider, shared.state)
  }

  /** The stored record, or null when there is none (or Redis cannot be read, or it is of another format). */
  async #read(credential: string): Promise<StoredRead | null> {
    const { redis, breaker, log } = this.#ctx
    if (!redis || !breaker || !this.#key) return null
    const key = this.#redisKey(credential)
    const raw = await breaker.run(() => redis.get(key), null)
    if (!raw) return null
    const record = parseRecord(raw)
    if (record === 'other-format') return null
    const token = record ? decrypt(this.#key, key, record) : null
    if (record === null || token === null) {
      log.warn(
        { credential },
        'the shared platform token cannot be decrypted (another GATEWAY_SECRET on some replica, or a record altered, replaced or moved in Redis); ignoring it',
      )
      return { raw, shared: null }
    }
    return {
      raw,
      shared: {
        base: record.base,
        state: { token, source: 'shared', fingerprint: record.fingerprint, obtainedAt: record.obtainedAt, expiresAt: record.expiresAt, version: record.version },
      },
    }
  }

  #redisKey(credential: string): string {
    return redisKey.token(this.#ctx.config.redis.keyPrefix, credential)
  }
}

// Versions are milliseconds: two replicas changing the token in the same one give both
// changes the same version, and each would keep its own (a provider adopts only a newer
// version). Redis holds the one written first (an equal version is refused), so at a
// tie the stored token wins and every replica settles on it.
function takeStored(provider: TokenProvider, stored: TokenState): void {
  provider.adopt(stored, stored.version === provider.current()?.version)
}

// Every field that decides whether a record is taken (version, base), what it claims
// (fingerprint, times), and the key it belongs to (deployment prefix and credential): a
// record with any of them altered, or copied to another key, fails to decrypt.
function associatedData(key: string, s: Omit<StoredToken, 'iv' | 'tag' | 'data'>): Buffer {
  return Buffer.from(JSON.stringify([s.v, key, s.version, s.base, s.fingerprint, s.obtainedAt, s.expiresAt]), 'utf8')
}

/** The token, or null when the record fails authentication. */
function decrypt(cipherKey: Buffer, key: string, s: StoredToken): string | null {
  try {
    const decipher = createDecipheriv('aes-256-gcm', cipherKey, Buffer.from(s.iv, 'base64'), { authTagLength: TAG_BYTES })
    decipher.setAAD(associatedData(key, s))
    decipher.setAuthTag(Buffer.from(s.tag, 'base64'))
    return Buffer.concat([decipher.update(Buffer.from(s.data, 'base64')), decipher.final()]).toString('utf8')
  } catch {
    return null
  }
}

/** A format-2 record; `other-format` for a record of another format; null for anything else. */
function parseRecord(raw: string): StoredToken | 'other-format' | null {
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    return null
  }
  if (typeof parsed !== 'object' || parsed === null) return null
  const r = parsed as Record<string, unknown>
  if (typeof r.v !== 'number') return null
  if (r.v !== FORMAT) return 'other-format'
  const strings = ['iv', 'tag', 'data', 'base', 'fingerprint'].every((k) => typeof r[k] === 'string')
  const numbers = ['version', 'obtainedAt', 'expiresAt'].every((k) => Number.isFinite(r[k]))
  return strings && numbers ? (r as unknown as StoredToken) : null
}
