import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import type { GatewayContext } from '../context.js'
import type { RedisClient } from '../redis.js'
import type { TokenProvider, TokenState } from './token-provider.js'

const CHANNEL = 'token'
/** Longest wait at start for the Redis connection before going on without the shared token. */
const CONNECT_WAIT_MS = 2000

interface StoredToken {
  v: 1
  iv: string
  tag: string
  data: string
  version: number
  base: string
  fingerprint: string
  obtainedAt: number
  expiresAt: number
}

// Writes only when the stored version is older: the last writer by version wins, so
// two replicas never undo each other's rotation.
const WRITE_IF_NEWER = `
local cur = redis.call('get', KEYS[1])
if cur then
  local ok, decoded = pcall(cjson.decode, cur)
  if ok and decoded.version and tonumber(decoded.version) >= tonumber(ARGV[2]) then return 0 end
end
redis.call('set', KEYS[1], ARGV[1])
return 1`

/**
 * Central rotation (issue 4): the current token of each credential, AES-256-GCM
 * encrypted with a key from GATEWAY_SECRET, in Redis, announced on pub/sub. Without
 * GATEWAY_SECRET or Redis nothing is written and each replica keeps its own token.
 */
export class TokenStore {
  readonly #ctx: GatewayContext
  readonly #key: Buffer | null
  #catchUp: NodeJS.Timeout | null = null

  constructor(ctx: GatewayContext) {
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
    await whenReady(this.#ctx.redis as RedisClient)
    for (const provider of this.#ctx.tokens.all()) {
      await this.#reconcile(provider)
      provider.on('change', ({ state, reason }) => {
        if (reason !== 'shared') void this.#publish(provider, state)
      })
    }
    // Pub/sub loses what is announced while a subscriber reconnects: a periodic read of the
    // stored tokens brings such a replica up to date.
    this.#catchUp = setInterval(() => {
      for (const provider of this.#ctx.tokens.all()) void this.#adoptStored(provider)
    }, this.#ctx.config.platform.maintenanceMs)
    this.#catchUp.unref()
  }

  close(): void {
    if (this.#catchUp) clearInterval(this.#catchUp)
    this.#catchUp = null
  }

  // A replica that starts later takes a rotation made on top of the same configuration
  // (the same static token or token file content), and any stored token when it has none
  // of its own; a changed configuration (a new PLATFORM_TOKEN rolled out) or a fresh
  // password login replaces the stored token.
  async #reconcile(provider: TokenProvider): Promise<void> {
    const stored = await this.#read(provider.name)
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
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv)
    const data = Buffer.concat([cipher.update(state.token, 'utf8'), cipher.final()])
    const stored: StoredToken = {
      v: 1,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
      version: state.version,
      base: provider.configuredBase,
      fingerprint: state.fingerprint,
      obtainedAt: state.obtainedAt,
      expiresAt: state.expiresAt,
    }
    const written = await breaker.run(() => redis.eval(WRITE_IF_NEWER, 1, this.#redisKey(provider.name), JSON.stringify(stored), String(state.version)), null)
    if (written === null) {
      log.error({ credential: provider.name }, 'the new platform token could not be shared through Redis; other replicas keep theirs')
      return
    }
    if (written === 0) {
      // Someone rotated more recently: theirs is the current token.
      const newer = await this.#read(provider.name)
      if (newer) provider.adopt(newer.state)
      return
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

  /** Takes the stored token when its version is newer than the one in use. */
  async #adoptStored(provider: TokenProvider): Promise<void> {
    const stored = await this.#read(provider.name)
    if (stored) provider.adopt(stored.state)
  }

  async #read(credential: string): Promise<{ state: TokenState; base: string } | null> {
    const { redis, breaker, log } = this.#ctx
    if (!redis || !breaker || !this.#key) return null
    const raw = await breaker.run(() => redis.get(this.#redisKey(credential)), null)
    if (!raw) return null
    try {
      const s = JSON.parse(raw) as StoredToken
      const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(s.iv, 'base64'))
      decipher.setAuthTag(Buffer.from(s.tag, 'base64'))
      const token = Buffer.concat([decipher.update(Buffer.from(s.data, 'base64')), decipher.final()]).toString('utf8')
      return {
        base: s.base,
        state: { token, source: 'shared', fingerprint: s.fingerprint, obtainedAt: s.obtainedAt, expiresAt: s.expiresAt, version: s.version },
      }
    } catch {
      log.error({ credential }, 'the shared platform token cannot be decrypted (is GATEWAY_SECRET the same on every replica?); ignoring it')
      return null
    }
  }

  #redisKey(credential: string): string {
    return `${this.#ctx.config.redis.keyPrefix}token:${credential}`
  }
}

// Commands fail at once while the connection is still being made (no offline queue), so
// the start-up read of the stored token waits for it, a bounded time: a Redis that is
// down at start only means this replica starts with its own token.
async function whenReady(redis: RedisClient): Promise<void> {
  if (redis.status === 'ready') return
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer)
      redis.off('ready', done)
      resolve()
    }
    const timer = setTimeout(done, CONNECT_WAIT_MS)
    redis.once('ready', done)
  })
}
