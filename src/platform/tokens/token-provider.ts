import { randomUUID } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { readFile } from 'node:fs/promises'
import { watch, type FSWatcher } from 'node:fs'
import { basename, dirname } from 'node:path'
import type { Dispatcher } from 'undici'
import type { Logger } from 'pino'
import type { CredentialConfig } from '../../config.js'
import { tokenFault } from '../../config/sources.js'
import type { SecretSet } from '../../observe/logger.js'
import { sha256Hex } from '../../config/secret-digest.js'
import { fingerprint } from '../../observe/fingerprint.js'
import { TokenLoginError } from '../../errors.js'
import { isTransient } from '../client/transient.js'
import { comparableTokenUrl, loginRefusal, loginThrottle, passwordLogin } from './password-login.js'
import { pauseLength } from '../pauses/pauses.js'
import { retryAfterMs } from '../pauses/retry-after.js'
import type { LoginGate } from './login-gate.js'
import { crossedWarnings, jwtSubject, refreshAt, tokenExpiry } from './token-expiry.js'
import { compareRank, loginBasis, rankAbove, type Ranked } from './token-order.js'
import { systemClock, type Clock, type Timer } from '../../clock.js'

/** Where the token in use came from. `shared`: another replica, through Redis. */
export type TokenSource = 'static' | 'file' | 'login' | 'admin' | 'shared'

export interface TokenState {
  token: string
  source: TokenSource
  fingerprint: string
  obtainedAt: number
  expiresAt: number
  /** Grows with every change: when it was made (ms), past the version it replaced. */
  version: number
  /**
   * With `version`, the token's rank across replicas (token-order.ts): its version for a
   * change someone made, the replaced token's version for a login the gateway made itself.
   */
  basis: number
  /** Who set the token, carried with it through Redis: every replica's audit line names them. */
  origin: TokenOrigin
  /**
   * The configuration it was made on (configuredBase of the replica that stored it), for a
   * token read from Redis; absent for one this replica set. A password login acts for its
   * login only with a token made on that login (accountOf).
   */
  madeOn?: string
}

/** What set a token: the reason on the replica that set it, the operator, that replica. */
export interface TokenOrigin {
  /** The change's reason where it was made; null for a record written before origins were kept. */
  reason: Exclude<ChangeEvent['reason'], 'shared'> | null
  /** The operator whose admin token made the change; null when none did (a login of the gateway's own, a file read, the configured token). */
  actor: string | null
  /** The id of the replica that made the change (GET /admin/cluster); null when unknown. */
  replica: string | null
}

/** A token another replica or an operator shared through Redis, with the configuration it was made on. */
export interface SharedToken {
  state: TokenState
  /** The configuration it was made on (TokenProvider.configuredBase of the replica that stored it). */
  base: string
  /** The configurations the changes leading to it replaced: a replica started with one of them takes it as its own configuration's. */
  replaced: string[]
  /** The record as read where only GATEWAY_SECRET_FALLBACK opened it: the replica that takes it stores it again over that record, sealed with its GATEWAY_SECRET; null otherwise. */
  resealOver?: string | null
}

export interface TokenInfo {
  credential: string
  source: TokenSource | null
  fingerprint: string | null
  obtainedAt: string | null
  expiresAt: string | null
  secondsLeft: number | null
  usable: boolean
}

export interface TokenProviderDeps {
  dispatcher: Dispatcher
  log: Logger
  secrets: SecretSet
  timeoutMs: number
  /** platform.maxPause: the longest a login's 429 holds the next login back. */
  maxPauseMs: number
  refreshBeforeMs: number
  expiryWarningsMs: number[]
  filePollMs: number
  /** Told after each read of the token file its watch or poll made (gateway_platform_token_file_reads_total). */
  onFileRead?: (credential: string) => void
  clock?: Clock
  /**
   * The time of a change's version (its rank, token-order.ts), which replicas compare
   * through Redis: Redis' clock as this replica reads it (redis/redis-clock.ts); default
   * `clock`'s. A token's expiry stays on `clock`: each replica renews on its own.
   */
  versionNow?: () => number
  /** How often expiry is checked (warnings, scheduled re-login, the loud rejected line). */
  maintenanceMs: number
  /** Told after each such check is done (gateway_platform_token_checks_total). */
  onCheck?: (credential: string) => void
  /** Every password login passes it: one at a time across replicas, at most one per loginMinInterval. */
  logins: LoginGate
  /** This replica's id, named as the origin of the changes it makes. */
  replica?: string
  /** GATEWAY_SECRET, whose key names a token by its fingerprint alike on every replica (observe/fingerprint.ts). */
  gatewaySecret: string | null
}

/**
 * Why the last password login failed, as callers left with no token are told: `down`, it got
 * no answer or a 5xx (the platform down), which a later login may not meet; `busy`, the
 * platform answered 429 (its throttle), until `until` (its retry-after, at most
 * platform.maxPause; the gateway's clock); `refused`, the platform refused the login itself
 * with `status` (a 4xx but 429: a wrong password, username or client), which a later login
 * meets again until the configuration changes.
 */
export type LoginFault = { kind: 'down' } | { kind: 'busy'; until: number } | { kind: 'refused'; status: number }

export interface ChangeEvent {
  state: TokenState
  previous: TokenState | null
  reason: 'start' | 'file' | 'login' | 'refresh' | 'relogin' | 'admin' | 'shared'
  actor?: string
}

/**
 * One platform credential's current token. The hot path reads `current()`
 * synchronously; every change is an event that the shared store and the audit log follow.
 */
export class TokenProvider extends EventEmitter<{ change: [ChangeEvent] }> {
  readonly credential: CredentialConfig
  #deps: TokenProviderDeps
  #state: TokenState | null = null
  #rejected = false
  #relogin: Promise<TokenState | null> | null = null
  #timers: Timer[] = []
  /** The wake-up at the end of a throttled login's retry-after (#wakeAtLoginEnd); null: none pending. */
  #loginEnd: Timer | null = null
  #watcher: FSWatcher | null = null
  #lastLeftMs: number | null = null
  /** The token file's content when last read: only a change of the file replaces the token. */
  #fileContent: string | null = null
  /** What is wrong with the token file now (an errno code, or `empty`); null: nothing. */
  #fileFault: string | null = null
  /** The account of the last token `account` was asked for, and that token. */
  #account: { token: string; account: string } | null = null
  /** The digest of the last account `accountDigest` was asked for, and that account. */
  #digest: { account: string; digest: string } | null = null
  /** A password login's account (configuredBase), worked out once: its configuration never changes. */
  #loginBase: string | null = null
  /** The account while no token is known: this process's own. */
  readonly #unknownAccount = randomUUID()
  /** The maintenance under way (#maintain); null: none. */
  #maintenance: Promise<void> | null = null
  /** Why the last password login failed (LoginFault), when no token came since; null: none, or a failure of another kind. */
  #loginFault: LoginFault | null = null
  readonly #clock: Clock
  readonly #versionNow: () => number
  /** Settles once start() has its first token, or has failed to get one. */
  readonly #started: Promise<void>
  #markStarted: () => void = () => undefined

  constructor(credential: CredentialConfig, deps: TokenProviderDeps) {
    super()
    this.credential = credential
    this.#deps = deps
    this.#clock = deps.clock ?? systemClock
    this.#versionNow = deps.versionNow ?? this.#clock.now
    this.#started = new Promise((resolve) => (this.#markStarted = resolve))
  }

  get name(): string {
    return this.credential.name
  }

  get hasLogin(): boolean {
    return this.credential.login !== null
  }

  current(): TokenState | null {
    return this.#state
  }

  usable(): boolean {
    return this.#state !== null && !this.#rejected
  }

  /**
   * Why its last password login failed, when no token came since: why it has no usable
   * token then (LoginFault); null: none such.
   */
  get loginFault(): LoginFault | null {
    return this.#loginFault
  }

  /** The whole seconds left of a throttled login's retry-after (the platform busy) at `now`; null: none left. */
  loginBusySec(now = this.#clock.now()): number | null {
    const fault = this.#loginFault
    const left = fault?.kind === 'busy' ? Math.ceil((fault.until - now) / 1000) : 0
    return left > 0 ? left : null
  }

  /**
   * Settles once the login due at a throttled login's retry-after end is made (the one
   * under way, or one sent now), when that retry-after has passed and no usable token came
   * since; at once otherwise. A call due when the retry-after ends (a report job's next
   * try, a read told to come back then) meets that login's token rather than failing for
   * want of it until the maintenance tick, `platform.maintenanceInterval` later.
   */
  async loginAfterBusy(): Promise<void> {
    if (this.usable() || this.#loginFault?.kind !== 'busy' || this.#loginHeld(this.#clock.now())) return
    await this.#maintain()
  }

  /**
   * Settles once the start has set its first token or failed to: a replica listens before
   * it has one (a start that cannot listen logs in nowhere), so a call that comes in
   * between waits for it instead of failing for want of a token.
   */
  get started(): Promise<void> {
    return this.#started
  }

  info(): TokenInfo {
    const s = this.#state
    return {
      credential: this.name,
      source: s?.source ?? null,
      fingerprint: s?.fingerprint ?? null,
      obtainedAt: s ? new Date(s.obtainedAt).toISOString() : null,
      expiresAt: s ? new Date(s.expiresAt).toISOString() : null,
      secondsLeft: s ? Math.floor((s.expiresAt - this.#clock.now()) / 1000) : null,
      usable: this.usable(),
    }
  }

  /**
   * Sets the stored token or the configured one, or logs in. `shared`: the token stored in
   * Redis when the replica starts (null without one, or without Redis). The choice is made
   * before any token is set (takesAtStart), so that the one change event, and its audit
   * line, names the token taken: a configured token a rotation replaced is never set.
   * With a password login, a shared token made on the same login is taken as it is, and
   * the replica logs in only when it is refused or due for renewal
   * (`platform.refreshBefore`): a restart never replaces an operator's rotation. Where
   * Redis could not be read, the shared store makes the same choice once it answers
   * (token-store.ts). `stored` reads the stored token again: a login that waited on
   * another replica's takes that replica's token instead (LoginGate).
   */
  async start(shared: SharedToken | null = null, stored?: () => Promise<SharedToken | null>): Promise<void> {
    const c = this.credential
    try {
      if (c.token) {
        this.#startWith(c.token, 'static', shared)
      } else if (c.tokenFile) {
        const content = await this.#tokenFileContent()
        if (content !== null) {
          this.#fileContent = content
          this.#startWith(content, 'file', shared)
        }
        this.#watchTokenFile(c.tokenFile)
      } else if (c.login) {
        const sameLogin = shared !== null && this.takesAtStart(shared)
        if (shared && sameLogin) this.adopt(shared.state, true)
        if (!this.#state || this.#loginDue(this.#clock.now())) {
          try {
            // No usable token yet: exempt from loginMinInterval, not from the lock. A stored
            // token made on another login (other account, other platform) is a configuration
            // rolled out: this login replaces it as a change of its own.
            await this.#login('start', true, null, undefined, shared !== null && !sameLogin, stored && (() => this.#takeStored(stored)))
          } catch (err) {
            // Not fatal: readiness stays false (or the shared token stays) and the maintenance tick tries again.
            this.#loginFailed(err, 'platform login failed at start; retrying every maintenance tick')
          }
        }
      }
    } finally {
      this.#markStarted()
    }
    const tick = this.#clock.setInterval(() => void this.#maintain(), this.#deps.maintenanceMs)
    tick.unref()
    this.#timers.push(tick)
  }

  async close(): Promise<void> {
    for (const t of this.#timers) this.#clock.clearInterval(t)
    this.#timers = []
    this.#clock.clearTimeout(this.#loginEnd)
    this.#loginEnd = null
    this.#watcher?.close()
    this.#watcher = null
  }

  /**
   * The platform answered 401 to `failedToken`; `confirmed`: the probe call says the token
   * itself is refused. With a password login: one re-login shared by every
   * caller that saw the 401 (unconfirmed, only when loginMinInterval allows). Without one,
   * or while a login's 429 holds logins back (#loginHeld), a confirmed refusal makes the
   * credential unusable until a new token arrives (file, admin call, another replica, the
   * tick's login once the 429's retry-after ends); an unconfirmed one changes nothing.
   */
  async recover(failedToken: string, confirmed: boolean): Promise<TokenState | null> {
    if (this.#state && this.#state.token !== failedToken) return this.usable() ? this.#state : null
    if (!this.credential.login || this.#loginHeld(this.#clock.now())) {
      if (confirmed) this.#markRejected()
      return null
    }
    this.#relogin ??= this.#login('relogin', confirmed, this.#state)
      .catch((err: unknown) => {
        this.#loginFailed(err, 'platform re-login after 401 failed')
        return null
      })
      .then((state) => {
        if (!state && confirmed) this.#markRejected()
        return state
      })
      .finally(() => {
        this.#relogin = null
      })
    return this.#relogin
  }

  /** A token the probe call confirmed refused right after it was obtained: no second login at once (the maintenance tick tries). */
  condemn(token: string): void {
    if (this.#state?.token === token) this.#markRejected()
  }

  /** POST /admin/token/refresh: a new password login now (exempt from loginMinInterval, not from the lock). */
  async refresh(actor?: string): Promise<TokenState> {
    if (!this.credential.login) throw new TokenLoginError(`credential ${this.name} has no password login`)
    const state = await this.#login('refresh', true, null, actor)
    if (!state) throw new TokenLoginError('another replica held the login lock too long; try again')
    return state
  }

  /** PUT /admin/token: a token pasted by ops. */
  replace(token: string, actor?: string): TokenState {
    return this.#set(token, 'admin', undefined, 'admin', actor)
  }

  /**
   * A token from the shared store. Only one that ranks higher (token-order.ts) replaces
   * the current one, except with `force`: at start, where a rotation made on top of the
   * same configuration wins over the configured token, and at a tie, where the stored
   * token wins. The token in use, stored at another rank (each replica read one token
   * file), takes that rank and keeps its source and obtainedAt: nothing changed here.
   */
  adopt(state: TokenState, force = false): boolean {
    const current = this.#state
    if (current && current.token === state.token && compareRank(current, state) >= 0) return false
    if (current && !force && compareRank(state, current) <= 0) return false
    this.#deps.secrets.add(state.token)
    this.#state = current?.token === state.token ? { ...state, source: current.source, obtainedAt: current.obtainedAt } : { ...state, source: 'shared' }
    this.#rejected = false
    this.#loginFault = null
    this.#lastLeftMs = null
    const event: ChangeEvent = { state: this.#state, previous: current, reason: 'shared' }
    if (state.origin.actor !== null) event.actor = state.origin.actor
    this.emit('change', event)
    return true
  }

  /**
   * The token in use, ranked anew above `above` (token-order.ts, rankAbove): the same
   * token, origin and times, so no change event; null when there is none.
   */
  outrank(above: Ranked): TokenState | null {
    if (!this.#state) return null
    this.#state = { ...this.#state, ...rankAbove(above, this.#versionNow()) }
    return this.#state
  }

  /**
   * What the configuration gives (the static token, the token file's current content, or
   * the password login's account, its token endpoint however it is spelled:
   * comparableTokenUrl), by digest: a rotation stored in Redis applies to replicas
   * configured alike. Never shown (only inside the encrypted record's
   * authenticated fields), it stays the plain digest prefix stored records were written
   * with, so that they survive an upgrade.
   */
  get configuredBase(): string {
    const login = this.credential.login
    if (login) return `login:${baseDigest(JSON.stringify([this.credential.baseUrl, comparableTokenUrl(this.credential.baseUrl, login.tokenUrl), login.grantType, login.username, String(login.clientId)]))}`
    if (this.credential.token) return `static:${baseDigest(this.credential.token)}`
    return `file:${this.#fileContent === null ? 'unread' : baseDigest(this.#fileContent)}`
  }

  /**
   * The platform account this credential's calls act for, as a cache key holds it
   * (reports/cache-key.ts): what the platform answers is that account's view, and a
   * credential is only a name. That of the token in use (`accountOf`), else of the
   * configured one (a start that has not set it yet); with neither (a token file not read
   * yet), an account of this process alone, so that a copy filled meanwhile is shared with
   * no start of another account. Kept for the token it was worked out from: a read asks
   * it at every call.
   */
  get account(): string {
    const state = this.#state
    if (state) return this.accountOf(state)
    const token = this.credential.login ? null : (this.credential.token ?? this.#fileContent)
    if (token === null) return this.credential.login ? this.#loginAccount() : `${this.credential.baseUrl ?? ''} unknown:${this.#unknownAccount}`
    return this.#tokenAccount(token)
  }

  /** `account` by digest, short and free of spaces: what a Redis key holds of it (the ownership lists'). */
  get accountDigest(): string {
    const account = this.account
    if (this.#digest?.account !== account) this.#digest = { account, digest: sha256Hex(account).slice(0, 16) }
    return this.#digest.digest
  }

  /**
   * The account `state`'s token acts for. A password login's own tokens act for its login
   * (configuredBase: base URL, token URL, grant, username, client), known before its
   * first token and stable across re-logins; any other token, a token an operator put on
   * that credential (PUT /admin/token, here or on another replica) or one a replica of
   * another configuration shared (a rollout to another login or token: `madeOn`) among them, for its
   * JWT `sub` on the base URL, or, for a token that names none, the token itself (by
   * digest: a rotation of such a token starts new copies).
   */
  accountOf(state: TokenState): string {
    if (!this.credential.login || state.origin.reason === 'admin') return this.#tokenAccount(state.token)
    const login = this.#loginAccount()
    return state.madeOn === undefined || sameLoginBase(state.madeOn, login) ? login : this.#tokenAccount(state.token)
  }

  #loginAccount(): string {
    this.#loginBase ??= this.configuredBase
    return this.#loginBase
  }

  #tokenAccount(token: string): string {
    if (this.#account?.token === token) return this.#account.account
    const base = this.credential.baseUrl ?? ''
    const subject = jwtSubject(token)
    this.#account = { token, account: subject === null ? `${base} token:${baseDigest(token)}` : `${base} sub:${subject}` }
    return this.#account.account
  }

  /** The stored token `read` gives (its fingerprint), taken when this login takes it at start and it is not due for renewal. */
  async #takeStored(read: () => Promise<SharedToken | null>): Promise<{ taken: TokenState | null; stored: string | null }> {
    const stored = await read()
    if (!stored) return { taken: null, stored: null }
    const usable = this.takesAtStart(stored) && this.#clock.now() < refreshAt(stored.state.expiresAt, this.#deps.refreshBeforeMs, stored.state.obtainedAt)
    if (usable) this.adopt(stored.state, true)
    return { taken: usable ? this.#state : null, stored: stored.state.fingerprint }
  }

  /** Whether a replica of this configuration takes `stored` rather than its configured token (takesStoredAtStart). */
  takesAtStart(stored: SharedToken): boolean {
    return takesStoredAtStart(this.configuredBase, stored)
  }

  /** The start of a static or file token: the stored token when this configuration takes it, the configured one otherwise. */
  #startWith(configured: string, source: 'static' | 'file', shared: SharedToken | null): void {
    if (shared && shared.state.token !== configured && this.takesAtStart(shared)) this.adopt(shared.state, true)
    else this.#set(configured, source, undefined, 'start')
  }

  /** A password login is due: the token was refused, or expires within `platform.refreshBefore`. */
  #loginDue(now: number): boolean {
    const s = this.#state
    return s === null || this.#rejected || now >= refreshAt(s.expiresAt, this.#deps.refreshBeforeMs, s.obtainedAt)
  }

  /**
   * `basis`: the rank's basis of a login the gateway makes itself (the replaced token's
   * version, token-order.ts); undefined for a change someone made, whose basis is its version.
   */
  #set(token: string, source: TokenSource, expiresIn: unknown, reason: Exclude<ChangeEvent['reason'], 'shared'>, actor?: string, basis?: number): TokenState {
    this.#deps.secrets.add(token)
    const now = this.#clock.now()
    const previous = this.#state
    const version = Math.max(this.#versionNow(), (previous?.version ?? 0) + 1)
    const state: TokenState = {
      token,
      source,
      fingerprint: fingerprint(token, this.#deps.gatewaySecret),
      obtainedAt: now,
      expiresAt: tokenExpiry(token, now, expiresIn),
      version,
      basis: basis ?? version,
      origin: { reason, actor: actor ?? null, replica: this.#deps.replica ?? null },
    }
    this.#state = state
    this.#lastLeftMs = null
    if (this.#rejected) this.#deps.log.info({ credential: this.name }, 'platform token replaced; credential usable again')
    this.#rejected = false
    this.#loginFault = null
    this.emit('change', actor === undefined ? { state, previous, reason } : { state, previous, reason, actor })
    return state
  }

  /**
   * A password login through the login gate: the new token, another replica's that arrived
   * meanwhile, or null when the gate made none (see LoginGate.run). `refused`: the token
   * whose 401 asked for it.
   *
   * A login the gateway makes itself replaces the token in use when it was asked for
   * (refused, about to expire, or none), and ranks just above it (token-order.ts). When
   * another token arrived while it ran (an operator's rotation, another replica's login),
   * that one stays and the login's token is dropped. An operator's refresh (`refresh`)
   * and a login on a configuration rolled out (`rollout`) are changes of their own: the
   * newest wins.
   */
  async #login(reason: Exclude<ChangeEvent['reason'], 'shared'>, exempt: boolean, refused: TokenState | null = null, actor?: string, rollout = false, instead?: () => Promise<{ taken: TokenState | null; stored: string | null }>): Promise<TokenState | null> {
    const { login, baseUrl } = this.credential
    if (!login || !baseUrl) throw new TokenLoginError(`credential ${this.name} has no password login`)
    const own = reason !== 'refresh' && !rollout
    const replacing = this.#state
    return this.#deps.logins.run({
      credential: this.name,
      refused,
      exempt,
      current: () => this.#state,
      changed: (ms) => this.#changed(ms),
      ...(instead ? { instead } : {}),
      login: async () => {
        const result = await passwordLogin(baseUrl, login, this.#deps.dispatcher, this.#deps.timeoutMs).catch((err: unknown) => {
          this.#loginFault = this.#faultOf(err)
          if (this.#loginFault?.kind === 'busy') this.#wakeAtLoginEnd()
          throw err
        })
        // Redacted from every line like any token the gateway held, even one it drops.
        this.#deps.secrets.add(result.token)
        if (own && this.#state !== replacing && this.#state !== null) {
          this.#deps.log.info({ credential: this.name, fingerprint: this.#state.fingerprint }, 'platform login result dropped: another token arrived while it ran (an operator\'s or another replica\'s), and stays')
          return this.#state
        }
        return this.#set(result.token, 'login', result.expiresIn, reason, actor, own ? loginBasis(replacing) : undefined)
      },
    })
  }

  /**
   * Whether a login the platform answered 429 holds the next back at `now`: none of the
   * gateway's own (the tick's, a 401's re-login) is sent before its retry-after, whatever
   * loginMinInterval allows; an operator's refresh alone is.
   */
  #loginHeld(now: number): boolean {
    return this.#loginFault?.kind === 'busy' && now < this.#loginFault.until
  }

  /**
   * Runs the maintenance once the throttled login's retry-after ends: a credential left
   * with no usable token meanwhile is logged in then, when the reads refused were told to
   * come back (their retry-after), not at the next tick, `platform.maintenanceInterval` later.
   * A timer may fire a little before the clock reaches the end: it waits again then.
   */
  #wakeAtLoginEnd(): void {
    this.#clock.clearTimeout(this.#loginEnd)
    const fault = this.#loginFault
    if (fault?.kind !== 'busy') return
    this.#loginEnd = this.#clock.setTimeout(() => {
      this.#loginEnd = null
      if (this.#loginHeld(this.#clock.now())) this.#wakeAtLoginEnd()
      else void this.#maintain()
    }, Math.max(1, fault.until - this.#clock.now()))
    this.#loginEnd.unref()
  }

  /** The LoginFault of a failed password login's error; null: a failure of another kind (a 200 whose reply holds no usable token). */
  #faultOf(err: unknown): LoginFault | null {
    const refused = loginRefusal(err)
    if (refused !== null) return { kind: 'refused', status: refused }
    const throttle = loginThrottle(err)
    if (throttle === null) return isTransient(err) ? { kind: 'down' } : null
    // Its retry-after held to platform.maxPause, as every pause of the platform's is: one of
    // years would stop the credential's logins for good.
    const now = this.#clock.now()
    return { kind: 'busy', until: now + pauseLength(retryAfterMs(throttle.retryAfter, now) ?? 0, 0, this.#deps.maxPauseMs) }
  }

  /** Resolves at the next change of token, or after `ms`. */
  #changed(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#clock.clearTimeout(timer)
        this.off('change', done)
        resolve()
      }
      const timer = this.#clock.setTimeout(done, ms)
      this.once('change', done)
    })
  }

  #markRejected(): void {
    if (!this.#rejected) this.#loudRejected()
    this.#rejected = true
  }

  /**
   * A login that failed: the platform's refusal or failure (a GW_* code, answered to callers
   * as documented: readiness degraded, 502 GW_PLATFORM_AUTH) is a warn line with its code
   * and no stack; anything else is an error the gateway did not expect (contract, "Logs").
   */
  #loginFailed(err: unknown, msg: string): void {
    const code = (err as { code?: unknown } | null)?.code
    if (typeof code === 'string' && code.startsWith('GW_')) this.#deps.log.warn({ err, code, credential: this.name }, msg)
    else this.#deps.log.error({ err, credential: this.name }, msg)
  }

  #loudRejected(): void {
    this.#deps.log.error(
      { credential: this.name, fingerprint: this.#state?.fingerprint ?? null },
      'PLATFORM TOKEN REJECTED: the platform answers 401 to the gateway token; calls fail with GW_PLATFORM_AUTH until a new token arrives (file, PUT /admin/token, or another replica)',
    )
  }

  /**
   * The token file's token; null (the fault logged once) when it cannot be read or holds none.
   * Each fault is the operator's file, no fault of the gateway's: a warn line (contract, "Logs").
   */
  async #tokenFileContent(): Promise<string | null> {
    const path = this.credential.tokenFile as string
    let content: string
    try {
      content = (await readFile(path, 'utf8')).trim()
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error'
      this.#fileProblem(code, () => this.#deps.log.warn({ credential: this.name, path, code }, 'token file cannot be read; keeping the current token'))
      return null
    }
    if (content === '') {
      this.#fileProblem('empty', () => this.#deps.log.warn({ credential: this.name, path }, 'token file is empty; keeping the current token'))
      return null
    }
    // The start refuses such a file (a configuration error); afterwards the token in use
    // stays: a token with a line break inside, or `Bearer <token>`, is no header's token.
    const fault = tokenFault(content)
    if (fault !== null) {
      this.#fileProblem(fault, () => this.#deps.log.warn({ credential: this.name, path }, `token file ${fault}; keeping the current token`))
      return null
    }
    this.#fileFault = null
    return content
  }

  async #readTokenFile(): Promise<void> {
    const content = await this.#tokenFileContent()
    // Compared with the file's last content, not with the token in use: a token from PUT
    // /admin/token or another replica stays until the file itself changes.
    if (content === null || content === this.#fileContent) return
    this.#fileContent = content
    // A file rewritten to hold the token in use (an operator's PUT written to the Secret
    // after) changes no token: the token keeps its source, version and verdict, unaudited.
    if (content === this.#state?.token) return
    this.#set(content, 'file', undefined, 'file')
  }

  // The file is polled every second: a lasting fault is logged once, when it begins.
  #fileProblem(fault: string, report: () => void): void {
    if (this.#fileFault !== fault) report()
    this.#fileFault = fault
  }

  // A Kubernetes Secret update swaps the `..data` symlink in the file's folder, which a
  // watch on the file itself misses; the folder is watched, and polled as a backstop.
  #watchTokenFile(path: string): void {
    // One read at a time, in order: a read begun before the file went cannot succeed after
    // one begun later failed (which would log the lasting fault again).
    let reading = false
    let again = false
    const check = (): void => {
      if (reading) {
        again = true
        return
      }
      reading = true
      void this.#readTokenFile().finally(() => {
        reading = false
        this.#deps.onFileRead?.(this.name)
        if (again) {
          again = false
          check()
        }
      })
    }
    try {
      this.#watcher = watch(dirname(path), { persistent: false }, (_event, name) => {
        if (name === null || name === basename(path) || name.startsWith('..')) check()
      })
      this.#watcher.on('error', () => undefined)
    } catch (err) {
      this.#deps.log.warn({ err, path }, 'cannot watch the token file folder; polling only')
    }
    const poll = this.#clock.setInterval(check, this.#deps.filePollMs)
    poll.unref()
    this.#timers.push(poll)
  }

  /** One maintenance at a time: a login slower than the interval starts no second one, and a caller meanwhile waits for it. */
  #maintain(): Promise<void> {
    this.#maintenance ??= this.#maintainOnce().finally(() => {
      this.#maintenance = null
      this.#deps.onCheck?.(this.name)
    })
    return this.#maintenance
  }

  async #maintainOnce(): Promise<void> {
    const now = this.#clock.now()
    if (this.#rejected) this.#loudRejected()
    // No token yet, or a refused one whose re-login failed: requests no longer reach the
    // platform (so no 401 asks for a re-login), so the login is retried here.
    // Both are exempt from loginMinInterval: no token yet is the start login again, and a
    // rejected one was confirmed refused by the probe (this tick bounds the retries).
    if (!this.#state || (this.#rejected && this.credential.login)) {
      if (this.#loginHeld(now)) return
      if (this.credential.login) await this.#login('login', true, this.#state).catch((err: unknown) => this.#loginFailed(err, 'platform login failed'))
      return
    }
    const leftMs = this.#state.expiresAt - now
    for (const threshold of crossedWarnings(this.#deps.expiryWarningsMs, this.#lastLeftMs, leftMs)) {
      this.#deps.log.warn(
        { credential: this.name, fingerprint: this.#state.fingerprint, daysLeft: Math.floor(leftMs / 86_400_000), thresholdDays: threshold / 86_400_000 },
        'platform token expires soon',
      )
    }
    this.#lastLeftMs = leftMs
    if (this.credential.login && !this.#loginHeld(now) && this.#loginDue(now)) {
      await this.#login('login', false).catch((err: unknown) => this.#loginFailed(err, 'scheduled platform re-login failed; the current token is kept'))
    }
  }
}

/**
 * Whether a replica configured with `configured` (TokenProvider.configuredBase) takes the
 * stored token rather than its configured one at start: a password login takes a token
 * made on the same login; a static token or token file takes one made on its
 * configuration, or on top of a change that replaced it (a host's `.env` or a pod's
 * Secret a rotation or rollout left behind). Any other configuration is a rollout, and
 * its token replaces the stored one.
 */
export function takesStoredAtStart(configured: string, stored: Pick<SharedToken, 'base' | 'replaced'>): boolean {
  if (configured.startsWith('login:')) return sameLoginBase(stored.base, configured)
  return [stored.base, ...stored.replaced].some((base) => sameConfiguration(base, configured))
}

/**
 * Whether a stored token was made on this login: the same account, or a record written
 * before the login's account was part of its base (`login` alone), taken as the same.
 */
function sameLoginBase(stored: string, configured: string): boolean {
  return stored === configured || stored === 'login'
}

/**
 * Whether two configurations' bases (configuredBase, a stored record's `base` or
 * `replaced`) name one configuration. A static token and a token file give the same token
 * when their digests agree (a Secret file made from a host's PLATFORM_TOKEN): one
 * configuration, whatever the token is read from. The bases keep their prefixes as
 * stored, so that records of earlier builds compare alike.
 */
export function sameConfiguration(a: string, b: string): boolean {
  return a === b || (tokenDigest(a) ?? a) === (tokenDigest(b) ?? b)
}

/** The token's digest of a static token's or a token file's base; null for another base. */
function tokenDigest(base: string): string | null {
  const match = /^(?:static|file):([0-9a-f]{12})$/.exec(base)
  return match ? match[1]! : null
}

/** The digest configuredBase names a configuration by: 12 hex digits of its SHA-256. */
function baseDigest(text: string): string {
  return sha256Hex(text).slice(0, 12)
}
