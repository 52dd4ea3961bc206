import type { IncomingHttpHeaders } from 'node:http'
import { Readable } from 'node:stream'
import type { Config, TeamConfig, TeamKey } from '../config.js'
import { BadRequestError, BodyBudgetError, ForbiddenError, NotFoundError, PayloadTooLargeError, RateLimitedError } from '../errors.js'
import type { Metrics } from '../observe/metrics.js'
import type { SecretSet } from '../observe/logger.js'
import type { AdminAuth } from './admin-auth.js'
import type { TeamSuspensions } from './team-suspensions.js'
import type { TokenProvider } from '../platform/tokens/token-provider.js'
import type { TokenRegistry } from '../platform/tokens/token-registry.js'
import { assertAccounts, assertReadsThrough, namedInCall, placementsOf, type NamedInCall, type Placements } from './scope.js'
import { assertMayCall, type Identity, type TeamDirectory } from './team-auth.js'
import type { KnownTarget, KnownUrl, KnownUrls } from './known-urls.js'
import type { RateDecision, RateLimiter } from './rate-limit.js'
import type { CampaignOwners } from './campaign-owners.js'
import { rateLimitHeaders } from './rate-limit-headers.js'
import { isTokenPath, tokenPaths } from './path-safety.js'
import { assertNoOverridePart, assertPlainBodyType, bodyTypeRefused, FORM_TYPE, MULTIPART_TYPE, JSON_TYPE, mediaType, NO_INPUT_BODY, PLAIN_TEXT_TYPE, parseFormBody, parseJsonBody, parsingJsonBody, readAsJson, type CheckedBody, type JsonScan } from './request-body.js'
import { checkTarget, type RequestTarget } from './request-target.js'
import { KEY_PREFIX } from '../observe/key-shape.js'
import { assertHopSafe } from './connection-options.js'
import { inviteBody } from './expect-continue.js'
import { BodyRoom, type BodyHold } from './body-room.js'
import type { ByteBudget } from '../platform/client/answer-budget.js'
import { shownPath } from '../observe/caller-text.js'
import { inTurns } from '../pieces.js'
import { CallersGoneError } from '../platform/client/caller-group.js'

/** `%` as a byte: where a body may spell a key percent-encoded. */
const PERCENT = 0x25

/** An admitted caller and the call as the gateway checked it. */
export interface Caller {
  team: TeamConfig
  /** The id of the key it presented (logs, audit). */
  keyId: string
  /** The key it presented, as its team lists it: what stillAdmitted looks up again. */
  key: TeamKey
  /** The team's rate-limit decision for this call; null before it was counted. */
  rate: RateDecision | null
  /** Platform calls made for this request (a coalesced waiter makes none: usage counts it as saved). */
  platformCalls: number
  /** Their platform time (seat-time, ms), added as each ends; unset while none ended. */
  platformMs?: number
  provider: TokenProvider
  target: RequestTarget
  /** JSON and form bodies as parsed and checked; null: none. */
  body: CheckedBody | null
  /** A body forwarded as it came (an unrestricted writer's upload). */
  stream: Readable | null
  /** Owner of each campaign id the call names, where the gateway looked it up. */
  campaignOwners: Map<number, number>
  /** The accounts the call names, for the access log; set by the handler once known. */
  advertisers: readonly unknown[] | null
  /** How long the platform call this caller waited for took; null: none was made. */
  upstreamMs: number | null
  /** The accounts a scoped team's call names (checked). */
  accounts: number[]
}

/** A call as admission reads it (a Fastify request is one): its admitted caller is set on it once its key is known. */
export interface CallIn {
  method: string
  url: string
  headers: IncomingHttpHeaders
  caller: Caller | null
}

/** A call's body as the entrance left it: unread (http/api.ts). */
export interface BodyIn {
  method: string
  headers: IncomingHttpHeaders
  body: unknown
}

/**
 * Whether `text` holds a secret of the gateway's: one of `secrets`, as it is or as the
 * platform decodes it, or a named admin token known by its digest alone (`adminAuth`;
 * ADMIN_TOKEN and ADMIN_VIEWER_TOKEN are among `secrets`, which the start and each reload
 * that takes them add them to, and `secrets` finds them wherever `adminAuth` would).
 * The one search admission refuses by and the spans are cleaned by.
 */
export function holdsGatewaySecret(parts: Pick<AdmissionParts, 'secrets' | 'adminAuth'>, text: string): boolean {
  return parts.secrets.holds(text) || parts.adminAuth.heldInUnsearched(text)
}

/**
 * The refusal of a call holding a secret of the gateway's in `where`: it names neither the
 * secret nor which one it is, and says what it did (its caller's `team` suspended, `seconds`
 * left) and what to do: the next call is the 403 of the suspension, which no retry passes.
 */
function secretRefusal(where: string, team: string, seconds: number | null): Error {
  return new BadRequestError(
    `${where}: holds a secret of the gateway's (an admin or platform credential); it is never sent to the platform (the value is not shown). Team ${team} is suspended from now for ${seconds ?? 0} s (limits.secretSuspension), every request with its keys refused: tell the gateway's operators, who replace the secret and lift the suspension`,
  )
}

/** What admission reads of the gateway; the composition root hands it these. */
export interface AdmissionParts {
  config: Config
  teams: TeamDirectory
  rateLimiter: RateLimiter
  metrics: Metrics
  tokens: TokenRegistry
  campaignOwners: CampaignOwners
  /** The owners of creative sets, from their list; null unless `ownership.creativeSets.check` is `lookup`. */
  creativeSetOwners: CampaignOwners | null
  /** The gateway's secrets (admin tokens, platform tokens and login, GATEWAY_SECRET…), those replaced included. */
  secrets: SecretSet
  /** The admin tokens, the named ones of ADMIN_TOKENS_FILE known by their digests alone. */
  adminAuth: AdminAuth
  /** The teams suspended for a secret of the gateway's in a request: asked of every key, told of every hit. */
  suspensions: TeamSuspensions
  /** The answers' budget (platform.bufferTotalBytes), which request bodies are held within too; `reserveForBody`: a body's room, made as an answer's is. */
  answers: { budget: ByteBudget; reserveForBody?(team: string, bytes: number): boolean }
  /** The turns of the event loop the report calls' work takes, the teams in turn (reports/call-turns.ts): a large body's check takes them too, a piece a turn. */
  reports: WorkTurns
}

export interface WorkTurns {
  turn(team: string, gone?: AbortSignal): Promise<boolean>
}

/**
 * A body past this is checked in turns of its team's (WorkTurns), a piece of its work each
 * (pieces.ts): a JSON body's parse in four (its scan, JSON.parse, the walk of what it parsed,
 * the text sent on written), a form's in one, and the searches for the gateway's secrets
 * BODY_TURN_BYTES windows of a text a turn (the search is the larger part of a body's check:
 * a pass over the text a length of secret; docs/benchmarks.md, "Request bodies"). A hit then
 * waits behind at most one such piece per team with bodies waiting, as behind one piece of a
 * report call's work, not behind a body's whole check; a smaller body's check (about a
 * piece's) runs where it is read.
 */
export const BODY_TURN_BYTES = 64 * 1024

/** Where a call ends: its answer went, or its caller left (a ServerResponse's `close`). */
export interface CallEnd {
  readonly closed: boolean
  once(event: 'close', listener: () => void): unknown
}

const BODYLESS = new Set(['GET', 'HEAD', 'DELETE'])

/**
 * Who may call, and what: every /api/v1 entrance (the Fastify routes and the fast path
 * of hits) decides through these methods, in the order of the contract: the target
 * (400/404), the key (401), the read/write rule (403) and the rate limit (429) before
 * any body is read; then the body (400/413) and the scope (403).
 */
export class Admission {
  readonly #ctx: AdmissionParts
  readonly #blockedPaths: Set<string>
  readonly #placements: Placements
  readonly #known: KnownUrls<unknown>
  /** The secrets the URLs the memo keeps were searched for (secretsCount); null before the first read. */
  #memoSearched: number | null = null
  readonly #bodies: BodyRoom
  /** The headers of calls whose x-request-id held a secret when they were named (takesRequestId), until `vet` refuses them. */
  readonly #secretIds = new WeakSet<IncomingHttpHeaders>()

  constructor(ctx: AdmissionParts, known: KnownUrls<unknown>) {
    this.#known = known
    const { answers } = ctx
    this.#bodies = new BodyRoom(answers.budget, answers.reserveForBody === undefined ? undefined : (team, bytes) => answers.reserveForBody?.(team, bytes) ?? false)
    const { config } = ctx
    this.#ctx = ctx
    this.#blockedPaths = tokenPaths(
      [config.credentials.default?.baseUrl ?? config.platform.baseUrl, ...Object.values(config.credentials).map((c) => c.baseUrl)],
      Object.values(config.credentials).flatMap((c) => (c.login ? [c.login.tokenUrl] : [])).concat(config.platform.tokenUrl),
    )
    this.#placements = placementsOf(config.ownership)
  }

  /**
   * The checked target of `url` (400/404); `seen`: what the memo keeps of it, looked up
   * already (null: checked anew). Whether it holds a secret of the gateway's is asked once
   * its key is known (`key`), not here.
   */
  target(url: string, seen: KnownUrl<unknown> | null | undefined = this.#memo(url)): KnownTarget {
    if (seen) return seen.known
    // Before the target is read: a key in a name the reader refuses is not repeated in its message.
    this.#refuseTeamKeyIn(url, 'request target')
    const target = checkTarget(url, this.#ctx.config.limits.params)
    if (isTokenPath(target.path, this.#blockedPaths)) throw new NotFoundError()
    return { target }
  }

  /**
   * A team key or a secret of the gateway's in what would be sent to the platform (a caller
   * that put its key, an admin token or the platform's token in the query, or a form):
   * refused, whoever's key it is, so that the platform, its logs and the cache's keys never
   * hold one. The message does not repeat it. Of a body: its secrets searched in turns (#refuseSecretInBody).
   */
  async #refuseKeyInBody(text: string, caller: Caller, turn: () => Promise<void>): Promise<void> {
    this.#refuseTeamKeyIn(text, 'body')
    await this.#refuseSecretInBody(text, caller, turn)
  }

  /** A team key in `text`, as #refuseKeyInBody refuses it: a key is no secret a guess finds (a team's key is drawn at random, and long). */
  #refuseTeamKeyIn(text: string, where: 'request target' | 'body'): void {
    if (this.#ctx.teams.holdsKey(text)) throw new BadRequestError(`${where}: holds a team key; a key is sent in x-api-key or authorization: Bearer, and never to the platform`)
  }

  /**
   * A secret of the gateway's (ADMIN_TOKEN, a platform token, the login's password or
   * client secret, GATEWAY_SECRET; the current ones and those replaced; a named admin
   * token of ADMIN_TOKENS_FILE as a word) in `text`, what
   * would reach the platform as `where`, as it is or percent-encoded: 400, which names
   * neither the secret nor which one it is. The refusal answers `caller` a guess at the
   * secret, so its team is suspended (team-suspensions.ts).
   */
  refuseSecretIn(text: string, where: string, caller: Pick<Identity, 'team' | 'key'>): void {
    this.#refuseFound(this.holdsSecret(text), where, caller)
  }

  /** refuseSecretIn once the search said whether the text holds a secret (`found`). */
  #refuseFound(found: boolean, where: string, caller: Pick<Identity, 'team' | 'key'>): void {
    if (!found) return
    this.#ctx.suspensions.suspend(caller.team.name, caller.key.id, where)
    throw this.#secretRefusal(where, caller.team.name)
  }

  /**
   * refuseSecretIn for a body's `text`: past BODY_TURN_BYTES, searched in pieces of
   * BODY_TURN_BYTES windows, each in a `turn` of the caller's team (#turnsOf), so that another
   * team's call waits behind one piece, not the whole search. A secret added while the pieces
   * waited (a platform token obtained meanwhile) is in none of the pieces searched before it:
   * the text is then searched again, with the secrets as they are.
   */
  async #refuseSecretInBody(text: string, caller: Caller, turn: () => Promise<void>): Promise<void> {
    if (text.length <= BODY_TURN_BYTES) return this.refuseSecretIn(text, 'body', caller)
    let found = false
    let searchedWith: number
    do {
      searchedWith = this.#secretsCount()
      found = await inTurns(this.#ctx.secrets.searching(text, BODY_TURN_BYTES), turn)
    } while (!found && this.#secretsCount() !== searchedWith)
    // The named admin tokens, known by their digests alone: each word of the text hashed, in a turn of its own.
    if (!found) await turn()
    this.#refuseFound(found || this.#ctx.adminAuth.heldInUnsearched(text), 'body', caller)
  }

  /**
   * Whether a caller's well-shaped `x-request-id` (`given`) names its request, so that its
   * answer carries it back: only with a team key the gateway runs, of a team not suspended,
   * and without a secret of the gateway's in it. The echo tells the caller whether `given`
   * holds a secret, on every answer of the listener (a health call, OPTIONS, a path not
   * served, a refusal before any search): so an id holding one suspends the team here, as
   * its refusal does (refuseSecretIn), and the call's own search, where it has one (`vet`),
   * answers it that refusal's 400. A suspended team's id is never taken, so that its echo
   * tells nothing either.
   */
  takesRequestId(given: string, headers: IncomingHttpHeaders): boolean {
    let identity: Identity
    try {
      identity = this.#ctx.teams.authenticate(headers)
    } catch {
      return false
    }
    if (this.#ctx.suspensions.secondsLeft(identity.team.name) !== null) return false
    if (!this.holdsSecret(given)) return true
    this.#ctx.suspensions.suspend(identity.team.name, identity.key.id, 'x-request-id')
    this.#secretIds.add(headers)
    return false
  }

  /** The 400 of a hit of `team`'s, which suspended it (refuseSecretIn, takesRequestId). */
  #secretRefusal(where: string, team: string): Error {
    return secretRefusal(where, team, this.#ctx.suspensions.secondsLeft(team))
  }

  /** Whether `text` holds a secret of the gateway's, as refuseSecretIn finds one. */
  holdsSecret(text: string): boolean {
    return holdsGatewaySecret(this.#ctx, text)
  }

  /** Who the call's key names (401), once its `Connection` names no header the gateway reads. */
  identify(headers: IncomingHttpHeaders): Identity {
    assertHopSafe(headers)
    return this.#ctx.teams.authenticate(headers)
  }

  /**
   * The checks of an identified caller before anything of its call is used: a suspended
   * team's key is refused 403 (team-suspensions.ts); then its target `url` (given unless the
   * memo keeps it for the caller's team, which it keeps for none holding a secret; a URL kept
   * for other teams only is searched as one never seen, so that its time tells nothing of
   * their reads) and its `x-request-id` must hold no
   * secret of the gateway's (400). Asked after the key: a refusal for a secret answers a
   * guess at it (the search finds it in any window of the text, so one request guesses
   * many), which only a caller with a team key is told; any other is answered the key's
   * 401 whatever its text holds. The caller is set on its request first, so that these
   * refusals are its team's in the access line and in its usage, as every other is.
   */
  vet(identity: Identity, headers: IncomingHttpHeaders, url?: string): void {
    // An id whose naming found a secret (takesRequestId) suspended the team then: this call is that hit, refused as one found here.
    if (this.#secretIds.delete(headers)) throw this.#secretRefusal('x-request-id', identity.team.name)
    this.#ctx.suspensions.refuse(identity.team.name)
    if (url !== undefined) this.refuseSecretIn(url, 'request target', identity)
    // The request's id goes to the platform with the calls made for it: a secret in it is refused as in the query.
    const id = headers['x-request-id']
    if (typeof id === 'string') this.refuseSecretIn(id, 'x-request-id', identity)
  }

  /** What the memo keeps of a URL an admitted caller sent before: its checked target and the forms worked out from it. */
  seen(url: string): KnownUrl<unknown> | undefined {
    return this.#memo(url)
  }

  /** The checked target of a URL an admitted caller sent before. */
  known(url: string): KnownTarget | undefined {
    return this.#memo(url)?.known
  }

  /**
   * What the memo keeps of `url`. The memo keeps URLs that held none of the gateway's secrets
   * and no team key when they were checked, and their calls are not checked again: once a
   * secret is added (a token put in or obtained) or a teams reload is applied (AdminAuth's
   * tokens replaced with the teams: new admin tokens, new team keys), it is emptied, and each
   * URL is checked again at its next call.
   */
  #memo(url: string): KnownUrl<unknown> | undefined {
    const searched = this.#secretsCount()
    if (searched !== this.#memoSearched) {
      this.#known.clear()
      this.#memoSearched = searched
    }
    return this.#known.get(url)
  }

  /** Grows with every secret `holdsSecret` finds that is added: the sum of two counts that only grow. */
  #secretsCount(): number {
    return this.#ctx.secrets.size + this.#ctx.adminAuth.replaced
  }

  /**
   * What the memo keeps of a URL for `team`: only what a call of the team's own passed
   * (known-urls.ts); null otherwise, the URL to be checked anew as one never seen.
   */
  seenBy(seen: KnownUrl<unknown> | undefined, team: TeamConfig): KnownUrl<unknown> | null {
    return seen?.teams.includes(team.name) === true ? seen : null
  }

  /**
   * The checked target of `url` for a team: `checked` (the memo's entry `found`, or checked
   * anew where it had none) unless that entry is another team's only (`seen` null): then
   * checked anew, as a URL never seen.
   */
  targetFor(url: string, found: KnownUrl<unknown> | undefined, seen: KnownUrl<unknown> | null, checked: KnownTarget): KnownTarget {
    return found === undefined || seen !== null ? checked : this.target(url, null)
  }

  /**
   * Keeps the target of a call of `team` that passed its scope check, for the team's next
   * call to the same URL, and the form `credential` worked out from it (`form`); returns
   * the target kept. The one writer of the memo of URLs.
   */
  remember(method: string, url: string, target: RequestTarget, team: TeamConfig, form?: { credential: string; form: unknown }): KnownTarget {
    // Searched when it is kept for a team, with the secrets as they are now: a secret added
    // since the call's own search (its body read, its campaigns looked up meanwhile) is found
    // here, and one added after is found once the memo is emptied for it (#memo).
    if (this.#memo(url)?.teams.includes(team.name) !== true && this.holdsSecret(url)) return { target }
    return this.#known.keep(
      url,
      () => {
        const known: KnownTarget = { target }
        // Worked out now, so that the size counted is the size kept; a target the scope rules
        // cannot read (a team they do not apply to sent it) is left to be read, and refused, anew.
        if (BODYLESS.has(method)) known.bodyless = this.#readable(() => namedInCall('GET', known.target, null, this.#placements)) ?? undefined
        return known
      },
      team.name,
      form,
    )
  }

  /**
   * Counts the call against its team's limit at `now` (the limiter's clock when absent)
   * and returns the decision, allowed or spent; a spent one is counted in the metrics.
   * `counted`: the decision of this call, counted already (its refusal in the metrics too).
   */
  count(team: TeamConfig, now?: number, counted?: RateDecision): RateDecision {
    if (counted) return counted
    const decision = this.#ctx.rateLimiter.hit(team, now)
    if (!decision.allowed) this.#ctx.metrics.rateLimited.inc({ team: team.name })
    return decision
  }

  /** Counts the call as `count` does; 429 when the limit is spent. */
  limit(team: TeamConfig, now?: number, counted?: RateDecision): RateDecision {
    const decision = this.count(team, now, counted)
    if (decision.allowed) return decision
    throw Object.assign(new RateLimitedError(decision.retryAfterSec), { retryAfterSec: decision.retryAfterSec })
  }

  /** The rate-limit fields of an answer to `caller`; null for a team without a limit. */
  rateFields(caller: Caller): [policy: string, state: string] | null {
    return rateLimitHeaders(caller.team, caller.rate ?? this.#ctx.rateLimiter.peek(caller.team))
  }

  /** The record of a caller identified by its key, before the rules below admit it. */
  caller(identity: Identity, known: KnownTarget): Caller {
    const { team, key } = identity
    return {
      team,
      keyId: key.id,
      key,
      rate: null,
      platformCalls: 0,
      provider: this.#ctx.tokens.get(team.credential),
      target: known.target,
      body: null,
      stream: null,
      campaignOwners: new Map(),
      advertisers: null,
      upstreamMs: null,
      accounts: [],
    }
  }

  /**
   * Whether a caller admitted earlier may still be answered or sent on (team-auth.ts
   * `current`): 401 once its key no longer runs; 403 once a reload moved its team to
   * another credential than the one it was admitted through; with `advertiserIds`, the
   * accounts its answer holds, 403 once a reload took one out of its team's scope. Asked
   * after every wait between the admission and the answer, and before a call goes to the platform.
   */
  stillAdmitted(admitted: Identity, advertiserIds?: readonly number[]): void {
    const { team } = this.#ctx.teams.current(admitted)
    assertReadsThrough(team, admitted.team.credential)
    if (advertiserIds !== undefined) assertAccounts(team, [...advertiserIds])
  }

  /** stillAdmitted as a question, for a wait that looks again: whether its caller may still be answered. */
  stillAdmits(admitted: Identity, advertiserIds?: readonly number[]): boolean {
    try {
      this.stillAdmitted(admitted, advertiserIds)
      return true
    } catch {
      return false
    }
  }

  /** Everything before the body: the caller of `call`, set on it; `counted`: its call was counted already. */
  admit(call: CallIn, counted?: RateDecision): Caller {
    const found = this.#memo(call.url)
    const checked = this.target(call.url, found)
    const identity = this.identify(call.headers)
    const seen = this.seenBy(found, identity.team)
    const known = this.targetFor(call.url, found, seen, checked)
    const caller = this.caller(identity, known)
    // Set before the rules below, so that the request's log line names the team they refused.
    call.caller = caller
    // The target is searched for secrets unless this team's own call of it passed (as decide does).
    this.vet(identity, call.headers, seen === null ? call.url : undefined)
    assertMayCall(caller.team, call.method, caller.target.path)
    caller.rate = this.limit(caller.team, undefined, counted)
    return caller
  }

  /**
   * Reads the body the route's content parser left unread (http/api.ts): JSON (any type
   * the platform reads as JSON) and forms are parsed, checked and kept for
   * re-serialization; only unrestricted writers may send anything else, which is
   * forwarded as it comes. `jsonOnly`: the call reads a JSON body only (a report POST):
   * any other is refused as such, whatever the team, before the rules of a team's bodies.
   * The body's bytes, and what its parsed form and the text sent on hold, are held within
   * the answers' budget until `end` (BodyRoom): 503 GW_BODY_BUDGET where they do not fit.
   */
  async readBody(request: BodyIn, caller: Caller, limit: number, end: CallEnd, jsonOnly = false): Promise<void> {
    if (!hasBody(request.headers)) return
    const { team } = caller
    if (team.advertisers !== null && BODYLESS.has(request.method)) {
      throw new BadRequestError(`body: a ${request.method} call of team ${team.name} carries no body (the platform reads its account from the query)`)
    }
    const payload = request.body as Readable | undefined
    if (!payload || typeof payload.pipe !== 'function') return
    const type = mediaType(request.headers['content-type'])
    // Read as the platform reads it: JSON for any type Laravel takes for JSON (`+json`, a `/json` parameter).
    const json = type === JSON_TYPE || readAsJson(request.headers['content-type'])
    if (jsonOnly && !json) throw new BadRequestError(bodyTypeRefused(JSON_TYPE, request.headers['content-type']))
    const parsed = json || type === FORM_TYPE
    // Laravel reads input from JSON, a form or a multipart form: a body it reads none from
    // leaves the call unnamed (the campaign list answers the token's parent account).
    if (!parsed && (type === '' || type === PLAIN_TEXT_TYPE)) throw new BadRequestError(NO_INPUT_BODY)
    if (team.advertisers !== null || !team.write || (parsed && request.headers['content-encoding'] !== undefined)) assertPlainBodyType(request.headers, jsonOnly)
    if (Number(request.headers['content-length']) > limit) {
      // Refused before a byte is read: a caller that waits for `100 Continue` is not invited to send it.
      payload.resume()
      throw new PayloadTooLargeError(limit)
    }
    const hold = this.#bodies.hold(caller.team.name)
    if (end.closed) hold.release()
    else end.once('close', () => hold.release())
    const turn = this.#turnsOf(caller.team.name, end)
    inviteBody(payload)
    if (!parsed) {
      // Read whole before a byte of it is sent, whatever its type and framing: one past the
      // limit is refused here and reaches no platform; a multipart form, which PHP reads
      // fields of, is checked for an override part; and a secret of the gateway's in it is
      // refused as in a parsed body, however the chunks of its transfer split it. Read a
      // character a byte (Latin-1, as the search before parsing reads a body): SecretSet
      // looks for a secret's UTF-8 bytes so read too, and a binary body costs no decoding.
      const whole = await readAll(payload, limit, (bytes) => this.#held(hold, bytes))
      if (type === MULTIPART_TYPE) assertNoOverridePart(whole, request.headers['content-type'])
      await this.#refuseSecretInBody(whole.toString('latin1'), caller, turn)
      caller.stream = Readable.from([whole])
      return
    }
    const bytes = await readAll(payload, limit, (more) => this.#held(hold, more))
    if (bytes.length === 0) return
    // The caller's bytes before they are parsed (a key in a name the parser refuses is not
    // repeated in its message), then the gateway's serialization, what the platform gets:
    // a key escaped in JSON is written plain there.
    const raw = bytes.includes(KEY_PREFIX) || bytes.includes(PERCENT) ? bytes.toString('latin1') : null
    if (raw !== null) await this.#refuseKeyInBody(raw, caller, turn)
    const searchedWith = this.#secretsCount()
    const limits = this.#ctx.config.limits
    const bodyLimits = { jsonDepth: limits.jsonDepth, params: limits.params }
    // A JSON body whose bytes and values alone count past what its team's bodies may hold is
    // refused by its scan, before the parse it would be refused after (about 100 ms of CPU
    // for a MiB of small arrays).
    const scanned = (scan: JsonScan) => this.#refuseNeverHeld(hold, valuesHeld(scan))
    if (bytes.length <= BODY_TURN_BYTES) caller.body = json ? parseJsonBody(bytes, bodyLimits, scanned) : parseFormBody(bytes, bodyLimits)
    else if (json) caller.body = await inTurns(parsingJsonBody(bytes, bodyLimits, scanned), turn)
    else {
      await turn()
      caller.body = parseFormBody(bytes, bodyLimits)
    }
    this.#held(hold, heldAfterParse(caller.body))
    const { text } = caller.body
    if (text.includes(KEY_PREFIX)) this.#refuseTeamKeyIn(text, 'body')
    // A text sent on that is the caller's bytes searched above (an ASCII JSON body written as
    // JSON.stringify writes it, whose %-escapes cost a MiB's search of its decoded form), the
    // secrets the same (none added since: their count is the same), holds none of them.
    if (text !== raw || this.#secretsCount() !== searchedWith) await this.#refuseSecretInBody(text, caller, turn)
  }

  /**
   * The turns of `team`'s pieces of a body's check (WorkTurns), until its call's `end`: once
   * the caller has hung up, the turn waited for is given up to the other teams and the check
   * fails 499 (CallersGoneError), its pieces left unrun, since nobody is there to answer. Its
   * watch of `end` begins with the first turn: a body checked at once costs none.
   */
  #turnsOf(team: string, end: CallEnd): () => Promise<void> {
    let gone: AbortSignal | null = null
    return async () => {
      if (gone === null) {
        const controller = new AbortController()
        const leave = () => controller.abort(new CallersGoneError())
        if (end.closed) leave()
        else end.once('close', leave)
        gone = controller.signal
      }
      if (!(await this.#ctx.reports.turn(team, gone))) throw gone.reason as Error
    }
  }

  /** `bytes` more for a body, or 503 GW_BODY_BUDGET: the budget is full, or its team holds its share of it in bodies. */
  #held(hold: BodyHold, bytes: number): void {
    if (hold.grow(bytes)) return
    const teamBytes = this.#bodies.teamBytes
    // This body alone is past what one team's bodies may hold: no wait makes room for it,
    // so no retry-after invites the same body again (it was 503 GW_BODY_BUDGET, retry in 1 s,
    // answered so to every retry).
    if (hold.bytes + bytes > teamBytes) throw pastTeamBodies(hold.bytes + bytes, teamBytes, '')
    const retryAfterSec = this.#bodies.retryAfterSec(bytes)
    const why = `the request bodies and answers on their way hold platform.bufferTotalBytes (${this.#ctx.answers.budget.limit} bytes), or this team's bodies the quarter of it one team may hold (${this.#bodies.teamBytes} bytes); retry in ${retryAfterSec} s`
    throw Object.assign(new BodyBudgetError(why), { retryAfterSec })
  }

  /**
   * 400 where `bytes` more (a body's least count, before all of it is known) take its body
   * past what one team's bodies may hold, as #held refuses it; nothing is taken.
   */
  #refuseNeverHeld(hold: BodyHold, bytes: number): void {
    const teamBytes = this.#bodies.teamBytes
    if (hold.bytes + bytes > teamBytes) throw pastTeamBodies(hold.bytes + bytes, teamBytes, 'at least ')
  }

  /**
   * The scope of a team limited to some advertisers: its accounts, named where the
   * platform reads them, and only its own campaigns. 403 otherwise.
   */
  async checkScope(method: string, caller: Caller, known?: KnownTarget): Promise<void> {
    const { team } = caller
    if (team.advertisers === null) return
    const named = this.named(method, caller, known)
    // Set before the check, so that a refusal's access line names the account asked.
    caller.advertisers = named.accounts
    caller.accounts = this.checkAccounts(method, team, named)
    // A list's first load is the gateway's own call (GATEWAY_TEAM): one list serves every
    // team, so it is not charged to this team beyond this request, which the limit counted
    // already; it is made once per advertiser per ownership.ttl, and the team can name only
    // its own advertisers. A reload, for an id the lists lack, is this team's call
    // (campaign-owners.ts, ownersAmong).
    if (named.campaigns.length > 0) caller.campaignOwners = await ownedAmong(this.#ctx.campaignOwners, caller, team.advertisers, named.campaigns, 'campaign')
    const sets = this.#ctx.creativeSetOwners
    if (named.creativeSets.length > 0 && sets !== null) await ownedAmong(sets, caller, team.advertisers, named.creativeSets, 'creative set')
  }

  /**
   * The part of a scoped team's scope known without a lookup: the accounts `named` names
   * (returned), each its own, and one named where the platform reads it. 403 otherwise;
   * 400 for an account field spelled otherwise than the platform reads it.
   * Its campaigns, if it names any, are checked by checkScope.
   */
  checkAccounts(method: string, team: TeamConfig, named: NamedInCall): number[] {
    // An account, campaign or creative set field in a spelling the gateway does not check
    // might be the one a controller reads: only the platform's spelling is let through.
    if (named.respelled !== null) {
      const { field, reads, what } = named.respelled
      throw new BadRequestError(`${field.slice(0, 64)}: the platform reads ${what} from ${reads}; send it so`)
    }
    const accounts = assertAccounts(team, named.accounts)
    if (named.unknownRoute !== null) {
      throw new ForbiddenError(`team ${team.name} is limited to some advertisers, and the gateway does not know where ${shownPath(named.unknownRoute)} reads its account: ask for the route to be listed in ownership.accountRoutes`)
    }
    // A set id does not say whose it is, and a platform may let a parent's token attach one
    // child's set to another child's campaign: with no list to look it up in, none is let through.
    const { check } = this.#ctx.config.ownership.creativeSets
    if (named.creativeSets.length > 0 && check === 'refuse') {
      throw new ForbiddenError(`team ${team.name} may not name creative sets (creative set ${named.creativeSets[0]}): the gateway cannot tell whose they are (ownership.creativeSets.check: refuse)`)
    }
    // The platform falls back to the parent account when a call names none where it
    // reads it (`{}` or no body on campaign/get): a scoped team must name its account.
    if (!named.placed) {
      throw new ForbiddenError(`team ${team.name} is limited to some advertisers: name ${named.placeBy}`)
    }
    return accounts
  }

  /** A scoped team's write went through: the campaign and creative set lists of its accounts may have changed. */
  written(caller: Caller): void {
    for (const account of caller.accounts) {
      this.#ctx.campaignOwners.written(caller.provider, account)
      this.#ctx.creativeSetOwners?.written(caller.provider, account)
    }
  }

  /**
   * What the call of `team` names, as named says it; null where the scope rules cannot read
   * it (a campaign id that is no number, an id path ownership.campaignPaths does not list)
   * and `team` is not limited to some advertisers: those rules refuse only a scoped team's
   * call, and another's goes on naming no account the gateway knows.
   */
  namedBy(team: TeamConfig, method: string, call: { body?: CheckedBody | null; target: RequestTarget }, known?: KnownTarget): NamedInCall | null {
    return team.advertisers === null ? this.#readable(() => this.named(method, call, known)) : this.named(method, call, known)
  }

  /** `read()`, or null where it refuses what it reads (400, 403). */
  #readable<T>(read: () => T): T | null {
    try {
      return read()
    } catch (err) {
      if (err instanceof BadRequestError || err instanceof ForbiddenError) return null
      throw err
    }
  }

  /** What the call names; for a body-less call worked out once per target. */
  named(method: string, call: { body?: CheckedBody | null; target: RequestTarget }, known?: KnownTarget): NamedInCall {
    const body = call.body ?? null
    if (body === null && known && BODYLESS.has(method)) {
      known.bodyless ??= namedInCall('GET', known.target, null, this.#placements)
      return known.bodyless
    }
    return namedInCall(method, call.target, body, this.#placements)
  }
}

/** The owner, among `advertisers`, of each of `ids` (`what`s); 403 naming the first none of them owns. */
async function ownedAmong(owners: CampaignOwners, caller: Caller, advertisers: Iterable<number>, ids: readonly number[], what: string): Promise<Map<number, number>> {
  const unique = [...new Set(ids)]
  const found = await owners.ownersAmong(caller.provider, advertisers, unique, caller.team.name)
  const foreign = unique.find((id) => !found.has(id))
  // None of the team's advertisers' lists holds it: none such (deleted, mistyped) or another's,
  // which the refusal cannot tell apart without saying that another's exists.
  if (foreign !== undefined) throw new ForbiddenError(`team ${caller.team.name} may not use ${what} ${foreign}: it is none of its advertisers' ${what}s as the platform lists them (no such ${what}, or another advertiser's)`)
  return found
}

export function hasBody(headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length']
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/**
 * What a parsed body holds beside its bytes until its call ends: the text sent on, and its
 * parsed form beside its characters: 32 bytes a string, number or literal of JSON or a form
 * parameter (V8's value and its slot), 128 an object or array (an empty object parsed takes 56
 * and its slot 8, measured on Node 24; one with members more), erring high.
 */
export function heldAfterParse(body: CheckedBody): number {
  if (body.kind === 'form') return body.text.length + 32 * body.params.length
  return body.text.length + valuesHeld(body)
}

/** What a JSON body's parsed values hold, as heldAfterParse counts them: known from its scan, before the parse. */
function valuesHeld({ values, containers }: Pick<JsonScan, 'values' | 'containers'>): number {
  return 32 * (values - containers) + 128 * containers
}

/** The refusal of a body that counts `bytes` (`least`: at least), past `teamBytes`, what one team's bodies may hold. */
function pastTeamBodies(bytes: number, teamBytes: number, least: '' | 'at least '): Error {
  return new BadRequestError(
    `body: counts ${least}${bytes} bytes as read and parsed (its bytes, the text sent on, 32 bytes a value, 128 an object or array), more than one team's bodies may hold at once, a quarter of platform.bufferTotalBytes (${teamBytes} bytes); no retry makes room for it: send a smaller body`,
  )
}

// Read by hand rather than with for-await: leaving that loop early destroys the socket,
// and a caller over the limit should get its 413 rather than a reset.
// `hold` takes each chunk's bytes as it comes, or throws (the body's room is full): the
// rest of the body is read and dropped, as one past the limit is.
function readAll(stream: Readable, limit: number, hold: (bytes: number) => void): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const refuse = (err: Error) => {
      stream.off('data', onData).off('end', onEnd).off('error', onError)
      stream.resume()
      reject(err)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) return refuse(new PayloadTooLargeError(limit))
      try {
        hold(chunk.length)
      } catch (err) {
        return refuse(err as Error)
      }
      chunks.push(chunk)
    }
    const onEnd = () => resolve(Buffer.concat(chunks, size))
    const onError = (err: Error) => reject(new BadRequestError(`body: ${err.message}`, { cause: err }))
    stream.on('data', onData).once('end', onEnd).once('error', onError)
  })
}
