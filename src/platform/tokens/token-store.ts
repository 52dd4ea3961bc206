import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { fingerprint } from '../../observe/fingerprint.js'
import type { Logger } from 'pino'
import type { Metrics } from '../../observe/metrics.js'
import type { Config } from '../../config.js'
import type { RedisBreaker } from '../../redis/breaker.js'
import type { RedisBus } from '../../redis/bus.js'
import type { RedisClient } from '../../redis/client.js'
import { sameConfiguration, takesStoredAtStart, type SharedToken, type TokenOrigin, type TokenProvider, type TokenState } from './token-provider.js'
import type { TokenRegistry } from './token-registry.js'
import { compareRank } from './token-order.js'
import type { Clock, Timer } from '../../clock.js'
import { redisKey } from '../../redis/keys.js'
import { redisScript } from '../../redis/script.js'

const CHANNEL = 'token'
/**
 * Where a replica answers another's start (share()). Every replica that answers starts
 * subscribes to it, and none else (a replica of a version before the answer): its
 * subscriptions count the answers a start waits for, on every topology.
 */
const ANSWERS = 'token-answers'
/** What #read answers when Redis holds no record of the credential. */
const ABSENT = Symbol('no token stored')
/**
 * The longest a start waits, where Redis held no token, for the other replicas that answer
 * starts (share()): each answers at once; a replica subscribed to the answers after the
 * start was announced has not heard it, nor answers.
 */
export const RESTORE_WAIT_MS = 2000

/** What the token store reads of the gateway; the composition root hands it these. */
export interface TokenStoreParts {
  config: Config
  log: Logger
  redis: RedisClient | null
  breaker: RedisBreaker | null
  bus: RedisBus | null
  tokens: TokenRegistry
  /** Counts the announcements acted on (gateway_platform_token_announcements_total), and a stored record no secret of this replica's opens (gateway_redis_unverified_total{what="token"}). */
  metrics: Pick<Metrics, 'tokenAnnouncements' | 'redisUnverified'>
  clock: Clock
  /** This replica's id: the origin of the changes it stores. */
  replica: string
}

/**
 * The record format. Format 3 adds the rank's basis and the origin (who set the token:
 * the reason, the operator, the replica) to format 2; both authenticate every field
 * beside the ciphertext (see associatedData). A format-2 record is still read (its basis
 * is its version, its origin unknown), so a rotation stored before an upgrade stays; a
 * record of any other format, such as format 1 whose version and fingerprint anyone with
 * Redis access could rewrite, is treated as absent and written over.
 */
const FORMAT = 3
const PREVIOUS_FORMAT = 2
/** The full GCM tag: a shorter one given in a record would weaken its authentication. */
const TAG_BYTES = 16

interface StoredToken {
  v: typeof FORMAT | typeof PREVIOUS_FORMAT
  iv: string
  tag: string
  data: string
  version: number
  /** Format 3 only. */
  basis?: number | undefined
  base: string
  fingerprint: string
  obtainedAt: number
  expiresAt: number
  /** Format 3 only. */
  origin?: TokenOrigin | undefined
  /**
   * The configurations (`base`s) the changes leading to this record replaced, oldest first,
   * at most REPLACED_KEPT; with `replacedSeal`, its HMAC. Beside the format-3 fields, not
   * among them: a replica of an earlier build reads the record as ever, and writes its own
   * without them.
   */
  replaced?: string[] | undefined
  replacedSeal?: string | undefined
}

/** The replaced configurations a record keeps: more than a deployment rolls out within its replicas' restarts. */
const REPLACED_KEPT = 16

/** A record's configuration and the configurations the changes leading to it replaced. */
type Lineage = Pick<SharedToken, 'base' | 'replaced'>

function lineageOf(stored: SharedToken): Lineage {
  return { base: stored.base, replaced: stored.replaced }
}

/** Whether the changes a replica makes itself reach the others through Redis (PUT /admin/token answers with it). */
export interface TokenShares {
  /**
   * Whether Redis took this replica's change of the credential's token to `version` (or a
   * higher-ranked token it holds): true, false when the write failed (the others take it
   * once Redis answers again), null when the token is not shared (no Redis or no
   * GATEWAY_SECRET) or this replica made no such change.
   */
  sharedChange(credential: string, version: number): Promise<boolean> | null
}

/** A stored record; `shared` is null when it fails authentication. */
/** Said once a token Redis did not take at first is stored there. */
const SHARED_NOW = 'the platform token not shared before is stored in Redis now; the other replicas take it'

interface StoredRead {
  /** The value as read: a write may replace it, if unchanged, when it fails authentication. */
  raw: string
  shared: SharedToken | null
}

// Writes only when the record ranks above the stored one (token-order.ts: the basis,
// then the version; a tie keeps the stored one), so replicas never undo each other's
// rotation and a login never undoes a change it was not made to replace. The stored
// rank is not authenticated here (Lua cannot check the GCM tag): a record that a replica
// found unauthentic is passed back as ARGV[3] and written over if unchanged, so a forged
// high rank cannot keep rotations out. Anything that is not a format-2 or format-3
// record with a numeric version (garbage, an older format) does not count either, and
// never makes the script fail. ARGV: the record, its version, the unauthentic record to
// write over, its basis.
const WRITE_IF_HIGHER = redisScript<number>('gatewayTokenWriteRanked', `
local cur = redis.call('get', KEYS[1])
if cur and cur ~= ARGV[3] then
  local ok, decoded = pcall(cjson.decode, cur)
  if ok and type(decoded) == 'table' and (decoded.v == ${FORMAT} or decoded.v == ${PREVIOUS_FORMAT}) then
    local version = tonumber(decoded.version)
    if version then
      local basis = version
      if decoded.v == ${FORMAT} then basis = tonumber(decoded.basis) or version end
      local newBasis = tonumber(ARGV[4])
      if basis > newBasis or (basis == newBasis and version >= tonumber(ARGV[2])) then return 0 end
    end
  end
end
redis.call('set', KEYS[1], ARGV[1])
return 1`, 1)

/**
 * Central rotation: the current token of each credential, AES-256-GCM
 * encrypted with a key from GATEWAY_SECRET, in Redis, announced on pub/sub. Without
 * GATEWAY_SECRET or Redis nothing is written and each replica keeps its own token.
 */
export class TokenStore implements TokenShares {
  readonly #ctx: TokenStoreParts
  /** Per credential, the last change this replica made and its write to Redis. */
  readonly #changes = new Map<string, { version: number; shared: Promise<boolean> }>()
  readonly #key: Buffer | null
  /** GATEWAY_SECRET_FALLBACK's key: a record it encrypted is read, none is written with it. */
  readonly #fallbackKey: Buffer | null
  #catchUp: Timer | null = null
  /** Credentials whose start found Redis out of reach: reconciled at a catch-up (#catchUpWith). */
  readonly #unreconciled = new Set<string>()
  /**
   * Credentials whose token Redis did not take (the error line says the other replicas keep
   * theirs): the write that stores it once Redis answers says so, and a higher change taken
   * instead says so in its audit line.
   */
  readonly #unshared = new Set<string>()
  /**
   * Per credential, the record this replica last wrote or took, by its configuration and
   * the configurations its changes replaced: kept here too, for when Redis loses the
   * record (#outranksStart, #replacedBy).
   */
  readonly #known = new Map<string, Lineage>()
  /**
   * Until share(): the credentials whose token this replica would store, held back, so
   * that a start that cannot bind its listeners stores and announces no token.
   */
  #held: Set<TokenProvider> | null = new Set()
  /** Credentials whose start found Redis holding no token (it lost its data, or none was ever stored). */
  readonly #absentAtStart = new Set<string>()
  /** Credentials whose token this start stored and announced as its start's (share()). */
  readonly #startAnnounced = new Set<string>()
  /** Per credential, the other replicas' answers to this replica's start announced while Redis held no token, and who waits for them. */
  readonly #answers = new Map<string, number>()
  readonly #answerWaiters = new Map<string, () => void>()

  constructor(ctx: TokenStoreParts) {
    this.#ctx = ctx
    this.#key = ctx.config.gatewaySecret ? storeKey(ctx.config.gatewaySecret) : null
    this.#fallbackKey = ctx.config.gatewaySecret && ctx.config.gatewaySecretFallback ? storeKey(ctx.config.gatewaySecretFallback) : null
  }

  get enabled(): boolean {
    return this.#key !== null && this.#ctx.redis !== null && this.#ctx.bus !== null
  }

  /**
   * The token stored for each credential, read before the providers start: each start
   * chooses between it and its configuration before it sets a token (TokenProvider.start),
   * a password login taking a usable one instead of logging in. Empty without Redis or
   * GATEWAY_SECRET; a credential whose record cannot be read or opened is left out (the
   * start's reconciliation tells of it, and reads again once Redis answers: #reconcile).
   */
  async storedAtStart(): Promise<Map<string, SharedToken>> {
    const stored = new Map<string, SharedToken>()
    if (!this.enabled) return stored
    for (const provider of this.#ctx.tokens.all()) {
      const shared = await this.stored(provider.name)
      if (shared) stored.set(provider.name, shared)
    }
    return stored
  }

  /** The credential's token stored in Redis now; null when there is none, or it cannot be read or opened. */
  async stored(credential: string): Promise<SharedToken | null> {
    if (!this.enabled) return null
    // Quiet: an unauthentic record is told once, by the start's reconciliation that follows.
    const read = await this.#readOrAbsent(credential, true)
    return read === ABSENT ? null : (read?.shared ?? null)
  }

  async start(): Promise<void> {
    if (!this.enabled) return
    const bus = this.#ctx.bus
    await bus?.subscribe(CHANNEL, (message) => void this.#onAnnouncement(message))
    // After CHANNEL: a replica counted among those that answer (share()) hears the starts announced.
    await bus?.subscribe(ANSWERS, (message) => this.#onAnswer(message))
    // The gateway's start waited for the connection (see whenReady in redis/client.ts).
    for (const provider of this.#ctx.tokens.all()) {
      await this.#reconcile(provider)
      provider.on('change', ({ state, reason }) => {
        if (reason !== 'shared') this.#changes.set(provider.name, { version: state.version, shared: this.#publish(provider, state) })
      })
    }
    // Pub/sub loses what is announced while a subscriber reconnects: the stored tokens are
    // read again as soon as its channels are subscribed again, and periodically besides.
    bus?.onSubscribed(() => this.restore())
    this.#catchUp = this.#ctx.clock.setInterval(() => {
      for (const provider of this.#ctx.tokens.all()) void this.#catchUpWith(provider)
    }, this.#ctx.config.platform.maintenanceMs)
    this.#catchUp.unref()
  }

  sharedChange(credential: string, version: number): Promise<boolean> | null {
    const change = this.#changes.get(credential)
    return this.enabled && change?.version === version ? change.shared : null
  }

  /**
   * Both listeners are bound: each token held back since start() is stored and announced
   * now, by its rank, as it would have been then (a change ranked higher since stays).
   * Where the start found Redis holding no token (it lost its data), a running replica
   * holding a rotation made on top of the same configuration stores it again above this
   * one's start (#outranksStart), and every replica that answers starts does so once it has
   * stored or taken what it holds (#onAnnouncement): share() waits for the answers of the
   * replicas subscribed to them (RESTORE_WAIT_MS at most), then takes what Redis holds, so
   * that the start's probe call checks the rotated token, never the configured one the
   * rotation replaced. The replicas are counted by their subscriptions on every node
   * (RedisBus.subscribers), not by PUBLISH's count: on a Cluster that tells of one node's
   * subscribers, and it counts a replica of a version that never answers.
   */
  async share(): Promise<void> {
    const held = this.#held ?? []
    this.#held = null
    for (const provider of held) {
      const current = provider.current()
      if (current) await this.#publish(provider, current, this.#absentAtStart.has(provider.name))
    }
    // Those whose start was announced: where a stored token ranked above it, it was taken instead, and no one answers.
    const starting = [...held].filter((p) => this.#startAnnounced.has(p.name))
    const { bus, breaker } = this.#ctx
    if (starting.length === 0 || !bus || !breaker) return
    // This replica's own subscription aside.
    const others = (await breaker.run(() => bus.subscribers(ANSWERS), 1)) - 1
    if (others <= 0) return
    await Promise.all(starting.map(async (provider) => {
      await this.#answeredBy(provider.name, others, RESTORE_WAIT_MS)
      await this.#adoptStored(provider)
    }))
  }

  /** Resolves once `replicas` answers to this replica's start came for `credential`, or after `ms` (said at info). */
  #answeredBy(credential: string, replicas: number, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#ctx.clock.clearTimeout(timer)
        this.#answerWaiters.delete(credential)
        resolve()
      }
      const check = () => void ((this.#answers.get(credential) ?? 0) >= replicas && done())
      const timer = this.#ctx.clock.setTimeout(() => {
        this.#ctx.log.info({ credential, replicas, answered: this.#answers.get(credential) ?? 0 }, `token: not every replica answered this start within ${ms} ms; its probe checks what Redis holds now`)
        done()
      }, ms)
      this.#answerWaiters.set(credential, check)
      check()
    })
  }

  /**
   * Redis answering again: each credential's stored token read at once (as the periodic
   * catch-up does), and stored again when Redis lost it (restarted empty).
   */
  restore(): void {
    // Before start, the start's own reconciliation is to come.
    if (!this.enabled || this.#catchUp === null) return
    for (const provider of this.#ctx.tokens.all()) void this.#catchUpWith(provider)
  }

  // A replica that started with Redis out of its reach holds its configured token, ranked
  // by its start: compared by rank, it would replace a rotation made before on top of the
  // same configuration, on every replica. Until its start's reconciliation has read Redis,
  // each catch-up makes it, while the token in use is still the one it started with.
  #catchUpWith(provider: TokenProvider): Promise<void> {
    if (this.#unreconciled.has(provider.name) && provider.current()?.origin.reason === 'start') return this.#reconcile(provider)
    this.#unreconciled.delete(provider.name)
    return this.#adoptStored(provider)
  }

  /**
   * Stops the catch-up. An operator's token (PUT /admin/token) Redis never took lives only
   * in this process: a start reads its configuration and the stored record, so the
   * rotation goes with it, and a warn line says so (a file's or a login's token is made
   * again from the same file or login).
   */
  close(): void {
    if (this.#catchUp) this.#ctx.clock.clearInterval(this.#catchUp)
    this.#catchUp = null
    for (const provider of this.#ctx.tokens.all()) {
      const state = provider.current()
      if (!this.#unshared.has(provider.name) || state?.origin.reason !== 'admin') continue
      this.#ctx.log.warn({ credential: provider.name, fingerprint: state.fingerprint }, 'the platform token set on this replica was never shared through Redis and stops with it: the other replicas, and this one when it starts again, keep the token stored before; set it again once Redis answers')
    }
  }

  // A replica that starts later takes a rotation made on top of the same configuration
  // (the same static token or token file content), and any stored token when it has none
  // of its own; a changed configuration (a new PLATFORM_TOKEN rolled out) replaces the
  // stored token. A password login took the stored token at start, or logged in to
  // replace it (refused or due) or for lack of one: what it holds is stored by rank,
  // so a login at start never replaces a token set after the one it replaced.
  async #reconcile(provider: TokenProvider): Promise<void> {
    const read = await this.#readOrAbsent(provider.name)
    if (read === null) {
      this.#unreconciled.add(provider.name)
      return
    }
    this.#unreconciled.delete(provider.name)
    if (read === ABSENT) this.#absentAtStart.add(provider.name)
    const stored = read === ABSENT ? undefined : read.shared
    const current = provider.current()
    // The start's choice (TokenProvider.takesAtStart), made again here for a start that
    // could not read Redis, or a record changed since: a configuration the stored token's
    // changes replaced (a host's .env not yet updated) is no rollout, and the stored token
    // stays, on this replica too. A password login chose at start (it logs in only when
    // the stored token is refused or due), unless it holds no token.
    if (stored && (!current || (!provider.hasLogin && provider.takesAtStart(stored)))) {
      this.#known.set(provider.name, lineageOf(stored))
      provider.adopt(stored.state, true)
      this.#reseal(provider, stored)
      return
    }
    if (!current) return
    // The stored token, taken at start (a password login's choice): what its record says is known.
    if (stored && stored.state.token === current.token && compareRank(stored.state, current) === 0) {
      this.#known.set(provider.name, lineageOf(stored))
      this.#reseal(provider, stored)
      return
    }
    await this.#publish(provider, current)
  }

  /** Stores and announces `state`; false when Redis could not be written (the catch-up stores it once Redis answers again). `over`: a record to write over if it is still the one stored, whatever its rank (one this replica found sealed with the fallback secret alone). */
  async #publish(provider: TokenProvider, state: TokenState, starting = false, over = ''): Promise<boolean> {
    const { redis, bus, breaker, log } = this.#ctx
    if (!redis || !bus || !breaker || !this.#key) return false
    if (this.#held) {
      this.#held.add(provider)
      return true
    }
    const key = this.#redisKey(provider.name)
    // A token read from Redis is stored again as made on the configuration it was made on
    // (a rollout's token this replica took, the record lost since), so that a replica of
    // this one's configuration starting after decides on it as on the lost record.
    const base = state.madeOn ?? provider.configuredBase
    const replaced = await this.#replacedBy(provider, base)
    const iv = randomBytes(12)
    const fields = {
      v: FORMAT,
      version: state.version,
      basis: state.basis,
      base,
      fingerprint: state.fingerprint,
      obtainedAt: state.obtainedAt,
      expiresAt: state.expiresAt,
      origin: { ...state.origin, replica: state.origin.replica ?? this.#ctx.replica },
    } as const
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES })
    cipher.setAAD(associatedData(key, fields))
    const data = Buffer.concat([cipher.update(state.token, 'utf8'), cipher.final()])
    const stored: StoredToken = {
      ...fields,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
      replaced,
      replacedSeal: replacedSeal(this.#key, key, fields, replaced),
    }
    const record = JSON.stringify(stored)
    // An empty value is never a record: nothing to write over unconditionally at first.
    let unauthentic = over
    // A second attempt only after an unauthentic record refused the first write.
    for (let attempt = 1; ; attempt++) {
      const written = await breaker.run(() => WRITE_IF_HIGHER(redis, key, record, String(state.version), unauthentic, String(state.basis)), null)
      if (written === null) {
        log.error({ credential: provider.name }, 'the new platform token could not be shared through Redis; other replicas keep theirs until Redis answers again')
        this.#unshared.add(provider.name)
        return false
      }
      if (written === 1) break
      const newer = await this.#read(provider.name)
      if (newer?.shared) {
        this.#unshared.delete(provider.name)
        // A change that ranks higher (made more recently, or after the token this login
        // replaced), or the same rank: theirs is the current token, unless it is the start
        // of a configuration this replica's token replaced.
        if (this.#outranksStart(provider, newer.shared)) return this.#storeAbove(provider, newer.shared)
        this.#take(provider, newer.shared)
        return true
      }
      if (!newer || attempt === 2) return false
      unauthentic = newer.raw
    }
    if (this.#unshared.delete(provider.name)) log.info({ credential: provider.name, fingerprint: state.fingerprint }, SHARED_NOW)
    this.#known.set(provider.name, { base, replaced })
    // A record stored again for its seal alone changes no token: nothing is announced (a
    // replica of the step before, its secrets the other way round, would store it again
    // sealed with its own, and so on; each replica's catch-up stores it again at most once
    // a maintenance interval, and once no replica of the step before is left, with the new
    // secret alone).
    if (over !== '') return true
    const announcement = { credential: provider.name, version: state.version, ...(starting ? { starting: this.#ctx.replica } : {}) }
    await breaker.run(() => bus.publish(CHANNEL, JSON.stringify(announcement)), undefined)
    if (starting) this.#startAnnounced.add(provider.name)
    return true
  }

  // A replica that starts while Redis holds no record (restarted empty, flushed, failed
  // over to an empty replica) stores its configured token ranked by its start, above an
  // operator's rotation the lost record held. When the starter would have taken this
  // replica's token from a stored record (takesStoredAtStart, the rule #reconcile and the
  // start apply), the start is no rollout and the rotation stays: a static token or token
  // file of this replica's configuration, or of one its token's changes replaced. A
  // login's start is none such: a login takes a stored token made on its own login alone,
  // whatever configurations that token replaced, so a login a rollout replaced is a
  // rollout again when it starts, as it is where Redis kept the record. Nor is a start of
  // this replica's own login: it replaces a token only when that token is refused or due.
  #outranksStart(provider: TokenProvider, stored: SharedToken): boolean {
    const current = provider.current()
    if (!current || provider.hasLogin || stored.state.origin.reason !== 'start' || stored.state.token === current.token) return false
    return takesStoredAtStart(stored.base, { base: provider.configuredBase, replaced: this.#known.get(provider.name)?.replaced ?? [] })
  }

  /** This replica's token stored again, ranked just above `stored` (the start of a configuration it replaced). */
  async #storeAbove(provider: TokenProvider, stored: SharedToken): Promise<boolean> {
    const raised = provider.outrank(stored.state)
    if (!raised) return false
    this.#ctx.log.info(
      { credential: provider.name, fingerprint: raised.fingerprint, startedReplica: stored.state.origin.replica },
      'a replica started with a configuration this token replaced while Redis held no token; storing this token again, above it',
    )
    return this.#publish(provider, raised)
  }

  #take(provider: TokenProvider, stored: SharedToken): void {
    this.#known.set(provider.name, lineageOf(stored))
    takeStored(provider, stored.state)
    this.#reseal(provider, stored)
  }

  /**
   * A record only the fallback secret opened (a GATEWAY_SECRET change under way,
   * docs/operations/deploy.md), once taken: stored again, unchanged but for its seal, over
   * that very record, so that replicas of the new secret alone read it once the fallback goes.
   */
  #reseal(provider: TokenProvider, stored: SharedToken): void {
    if (!stored.resealOver) return
    void this.#publish(provider, stored.state, false, stored.resealOver).then((sealed) => {
      if (sealed) this.#ctx.log.info({ credential: provider.name, fingerprint: stored.state.fingerprint }, 'the shared platform token, sealed with GATEWAY_SECRET_FALLBACK, is stored again sealed with GATEWAY_SECRET')
    })
  }

  /**
   * The configurations a record made on `base` replaces: those of the record this replica
   * last wrote or took and of the stored record, and each one's own configuration when it
   * is another (a rollout); this replica's own too when `base` is another's (a rollout's
   * token it took: the rollout replaced it); `base` left out. What this replica knows
   * counts where Redis lost the record (restarted empty, flushed): the record it stores
   * again, or over a start that stood in the lost one's place, names every configuration
   * the lost one named, not only its own.
   */
  async #replacedBy(provider: TokenProvider, base: string): Promise<string[]> {
    // Quiet: an unauthentic record is told by the reads that decide on it (the start's, an
    // announcement's, a refused write's), not again by this one.
    const read = await this.#readOrAbsent(provider.name, true)
    const stored = read === ABSENT ? null : read?.shared
    const earlier = [this.#known.get(provider.name), stored].flatMap((record) => (record ? [...record.replaced, record.base] : []))
    const replaced = [...earlier, provider.configuredBase].filter((b, i, all) => !sameConfiguration(b, base) && all.indexOf(b) === i)
    return replaced.slice(-REPLACED_KEPT)
  }

  async #onAnnouncement(message: string): Promise<void> {
    let said: { credential: string; starting?: unknown }
    try {
      said = JSON.parse(message) as typeof said
    } catch {
      return
    }
    const { credential, starting } = said
    const provider = this.#ctx.tokens.all().find((p) => p.name === credential)
    if (provider) {
      await this.#adoptStored(provider)
      this.#ctx.metrics.tokenAnnouncements.inc({ credential })
    }
    // A replica starting while Redis held no token waits for this answer (share()): what this replica holds is stored, or taken, by now.
    const { bus, breaker } = this.#ctx
    if (typeof starting === 'string' && starting !== this.#ctx.replica && bus && breaker) await breaker.run(() => bus.publish(ANSWERS, JSON.stringify({ credential, answering: starting })), undefined)
  }

  /** Another replica's answer to a start: counted when it answers this replica's (share() waits for them). */
  #onAnswer(message: string): void {
    let said: { credential?: unknown; answering?: unknown }
    try {
      said = JSON.parse(message) as typeof said
    } catch {
      return
    }
    const { credential, answering } = said
    if (typeof credential !== 'string' || answering !== this.#ctx.replica) return
    this.#answers.set(credential, (this.#answers.get(credential) ?? 0) + 1)
    this.#answerWaiters.get(credential)?.()
  }

  /**
   * Takes the stored token when it ranks above the one in use. One that ranks below (a
   * replay of a past record) is written over with this replica's, so that a replica
   * starting now does not take it. None stored (Redis restarted empty, or flushed): this
   * replica's token is stored again, with its rank, before a replica that starts takes
   * the stored token's place with its configured one, an operator's rotation undone.
   */
  async #adoptStored(provider: TokenProvider): Promise<void> {
    const read = await this.#readOrAbsent(provider.name)
    const current = provider.current()
    if (read === ABSENT) {
      if (current) await this.#publish(provider, current)
      return
    }
    const shared = read?.shared
    if (!shared) return
    if (current && this.#unshared.has(provider.name) && compareRank(shared.state, current) === 0 && shared.state.token === current.token) return this.#announceLanded(provider, current)
    if (current && compareRank(shared.state, current) < 0) await this.#publish(provider, current)
    else if (this.#outranksStart(provider, shared)) await this.#storeAbove(provider, shared)
    else this.#take(provider, shared)
  }

  /**
   * This replica's token, stored by a write whose answer timed out here and that Redis
   * carried out after all (it held the write past the command timeout): the record is in
   * Redis, and the announcement the write's answer would have led to is made now, so that
   * the other replicas take it when Redis answers again, not at their next catch-up.
   */
  async #announceLanded(provider: TokenProvider, state: TokenState): Promise<void> {
    const { bus, breaker, log } = this.#ctx
    if (!bus || !breaker) return
    this.#unshared.delete(provider.name)
    log.info({ credential: provider.name, fingerprint: state.fingerprint }, SHARED_NOW)
    await breaker.run(() => bus.publish(CHANNEL, JSON.stringify({ credential: provider.name, version: state.version })), undefined)
  }

  /** The stored record, or null when there is none (or Redis cannot be read, or it is of another format). */
  async #read(credential: string): Promise<StoredRead | null> {
    const read = await this.#readOrAbsent(credential)
    return read === ABSENT ? null : read
  }

  /** The stored record; ABSENT when Redis holds none (or one of another format, written over); null when Redis cannot be read. `quiet`: an unauthentic record is not logged. */
  async #readOrAbsent(credential: string, quiet = false): Promise<StoredRead | typeof ABSENT | null> {
    const { redis, breaker, log } = this.#ctx
    if (!redis || !breaker || !this.#key) return null
    const key = this.#redisKey(credential)
    const raw = await breaker.run(async () => (await redis.get(key)) ?? ABSENT, null)
    if (raw === ABSENT) return ABSENT
    if (!raw) return null
    const record = parseRecord(raw)
    if (record === 'other-format') return ABSENT
    const keys = [this.#key, ...(this.#fallbackKey ? [this.#fallbackKey] : [])]
    let token: string | null = null
    let opened: Buffer | null = null
    for (const candidate of record ? keys : []) {
      token = decrypt(candidate, key, record as StoredToken)
      if (token !== null) {
        opened = candidate
        break
      }
    }
    if (record === null || token === null || opened === null) {
      if (!quiet) {
        this.#ctx.metrics.redisUnverified.inc({ what: 'token' })
        log.warn(
          { credential },
          'the shared platform token cannot be decrypted (another GATEWAY_SECRET on some replica, or a record altered, replaced or moved in Redis); ignoring it',
        )
      }
      return { raw, shared: null }
    }
    return {
      raw,
      shared: {
        base: record.base,
        replaced: replacedOf(opened, key, record),
        resealOver: opened === this.#key ? null : raw,
        state: {
          token,
          source: 'shared',
          // Named as this replica names a token (a record written before fingerprints were keyed holds a plain one).
          fingerprint: fingerprint(token, this.#ctx.config.gatewaySecret),
          obtainedAt: record.obtainedAt,
          expiresAt: record.expiresAt,
          version: record.version,
          basis: record.basis ?? record.version,
          origin: record.origin ?? { reason: null, actor: null, replica: null },
          madeOn: record.base,
        },
      },
    }
  }

  #redisKey(credential: string): string {
    return redisKey.token(this.#ctx.config.redis.keyPrefix, credential)
  }
}

// Versions are milliseconds: two replicas changing the token in the same one give both
// changes the same rank, and each would keep its own (a provider adopts only a higher
// rank). Redis holds the one written first (an equal rank is refused), so at a tie the
// stored token wins and every replica settles on it.
function takeStored(provider: TokenProvider, stored: TokenState): void {
  const current = provider.current()
  provider.adopt(stored, current !== null && compareRank(stored, current) === 0)
}

/** The HMAC of a record's replaced configurations, bound to its key and to the fields that rank and place it. */
function replacedSeal(cipherKey: Buffer, key: string, s: Omit<StoredToken, 'iv' | 'tag' | 'data'>, replaced: string[]): string {
  return createHmac('sha256', cipherKey).update(JSON.stringify(['replaced', key, s.version, s.basis, s.base, s.fingerprint, replaced])).digest('base64')
}

/** A record's replaced configurations when their seal holds (the key that opened the record made it); none otherwise. */
function replacedOf(cipherKey: Buffer, key: string, s: StoredToken): string[] {
  const { replaced, replacedSeal: seal } = s
  if (!Array.isArray(replaced) || typeof seal !== 'string' || replaced.length > REPLACED_KEPT || !replaced.every((b) => typeof b === 'string')) return []
  const expected = Buffer.from(replacedSeal(cipherKey, key, s, replaced), 'base64')
  const given = Buffer.from(seal, 'base64')
  return given.length === expected.length && timingSafeEqual(given, expected) ? replaced : []
}

// Every field that decides whether a record is taken (version, basis, base), what it
// claims (fingerprint, times, origin), and the key it belongs to (deployment prefix and
// credential): a record with any of them altered, or copied to another key, fails to decrypt.
function associatedData(key: string, s: Omit<StoredToken, 'iv' | 'tag' | 'data'>): Buffer {
  const fields: unknown[] =
    s.v === PREVIOUS_FORMAT
      ? [s.v, key, s.version, s.base, s.fingerprint, s.obtainedAt, s.expiresAt]
      : [s.v, key, s.version, s.basis, s.base, s.fingerprint, s.obtainedAt, s.expiresAt, s.origin?.reason, s.origin?.actor, s.origin?.replica]
  return Buffer.from(JSON.stringify(fields), 'utf8')
}

/** The token, or null when the record fails authentication. */
function storeKey(secret: string): Buffer {
  return createHash('sha256').update(`report-gateway token store\0${secret}`).digest()
}

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

/** A format-3 or format-2 record; `other-format` for a record of another format; null for anything else. */
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
  if (r.v !== FORMAT && r.v !== PREVIOUS_FORMAT) return 'other-format'
  const strings = ['iv', 'tag', 'data', 'base', 'fingerprint'].every((k) => typeof r[k] === 'string')
  const numbers = ['version', 'obtainedAt', 'expiresAt', ...(r.v === FORMAT ? ['basis'] : [])].every((k) => Number.isFinite(r[k]))
  if (!strings || !numbers) return null
  // A format-2 record's basis is its version, its origin unknown; fields it did not have are not read.
  if (r.v === PREVIOUS_FORMAT) return { ...(r as unknown as StoredToken), basis: undefined, origin: undefined }
  const origin = r.origin as Record<string, unknown> | null | undefined
  const stringOrNull = (v: unknown) => v === null || typeof v === 'string'
  if (typeof origin !== 'object' || origin === null || !stringOrNull(origin.reason) || !stringOrNull(origin.actor) || !stringOrNull(origin.replica)) return null
  return { ...(r as unknown as StoredToken), origin: { reason: origin.reason as TokenOrigin['reason'], actor: origin.actor as string | null, replica: origin.replica as string | null } }
}
