import type { IncomingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { request, type Dispatcher } from 'undici'
import { PlatformAuthError, PlatformRefusedError, ShuttingDownError, UpstreamError, UpstreamTimeoutError, type GatewayError } from '../../errors.js'
import type { TokenProvider, TokenState } from '../tokens/token-provider.js'
import type { PausedSeat, PlatformGovernors } from '../governor/platform-governors.js'
import type { Priority, Seat, SeatOutcome } from '../governor/seat.js'
import type { TokenVerdicts, Verdict } from '../tokens/token-verdict.js'
import type { RefusalLog } from './refusal-log.js'
import type { TeamUsage } from '../../observe/usage.js'
import type { History } from '../../observe/history.js'
import { GATEWAY_TEAM } from '../gateway-team.js'
import { routeTemplate } from '../route-template.js'
import { seatFollowing, type QueueTeam } from './caller-group.js'
import { backoffMs, fitsBudget, isRetryable, type Attempt } from './retry-policy.js'
import { isTransient, transient } from './transient.js'
import { connectionFailure } from './connection-failure.js'
import { systemClock, type Clock } from '../../clock.js'
import { traced, tracedCall, type Trace } from '../../observe/tracing.js'
import { withoutKeys } from '../../observe/key-shape.js'
import { ATTRIBUTE_VALUE_LIMIT } from '../../observe/trace.js'
import { withoutToken } from './token-echo.js'
import { ShutdownWatch } from './shutdown-watch.js'
import { waitSignal } from './wait-signal.js'
import { retryAfterMs, withBoundedRetryAfter } from '../pauses/retry-after.js'
import { platformCount } from '../pauses/count-shares.js'
import type { PlatformFailing } from './platform-failing.js'

export interface PlatformCall {
  method: string
  /** Path and query, as the gateway serialized them. */
  url: string
  /** Request headers besides authorization and x-request-id (the caller's allowlisted ones, or the gateway's). */
  headers?: Record<string, string>
  /** A string or buffer can be sent again after a re-login; a stream cannot. */
  body?: string | Buffer | Readable | null
  requestId: string
  /** A read: after a 401 the probe confirms, retried once with a new token, and after a 502/503/504 or a reset (a write never is). */
  read: boolean
  /** Whose call it is: the governor serves the teams' queued calls in turn. */
  team: string
  /** The work the call asks of the platform (reports/work-class.ts): what its latency is compared with. Default its route. */
  workClass?: string
  /** The whole call's budget when shorter than platform.timeout (a report waiter's remaining time). */
  timeoutMs?: number
  /** The probe call testing a credential pause: it goes through the pause, without a seat (one call per probe interval). */
  trial?: boolean
  /** The probe call (`platform.probe`, team GATEWAY_TEAM): its 429 pauses the whole credential. */
  probe?: boolean
  /** Set by send(): aborts the call at its deadline or at shutdown; the governor's queue honours it too. */
  signal?: AbortSignal
  /** Ends the call's wait for a seat once its callers have all hung up; a call already sent goes on. */
  hangUp?: AbortSignal
  /**
   * Throws when the call may no longer be sent (its caller's key was removed meanwhile):
   * asked before each try's wait for a seat and once it has the seat (`seatedOn`: the team
   * whose seat it is), so that nothing is sent for a caller refused meanwhile (its seat
   * then free at once).
   */
  admitted?: (seatedOn?: string) => void
  /** The callers of a shared call (a report fill): it waits in the queue of each of their teams, and takes the first seat given. */
  queue?: QueueTeam
  /** Who waits for the call: a caller (default), or background work, which waits behind every caller's call. */
  priority?: Priority
  /** A refresh ahead's urgency now (larger goes first among refreshes ahead). */
  urgency?: () => number
  /** The span the call is a step of (tracing on): its wait in the governor's queue and each try at the platform are spans within it. */
  trace?: Trace
  /** Each try's seat-time at the platform (from its sending to its answer's headers, or to its failure) is added here, in ms. */
  spent?: { ms: number }
  /** Called as each try is sent, once it holds its seat and its caller is still admitted: a call never sent reached no platform. */
  sending?: () => void
}

export interface PlatformResponse {
  status: number
  headers: IncomingHttpHeaders
  body: Readable
}

/** A call's answer as `send` gives it, with the account the call was sent for. */
export interface SentResponse extends PlatformResponse {
  /** The account of the token the answer is to (TokenProvider.accountOf): the one a copy of it is kept for. */
  account: string
}

export interface PlatformJson {
  status: number
  json: unknown
}

interface Deadline {
  signal: AbortSignal
  /** Epoch ms at which the signal aborts. */
  at: number
  done: () => void
}

const JSON_HEADERS = { accept: 'application/json', 'content-type': 'application/json' }
// Lookup replies (campaign lists) are small; a larger one is refused rather than buffered.
const MAX_JSON_REPLY_BYTES = 16 * 1024 * 1024

/**
 * The one place that calls the platform: the proxy, the report fill, the ownership
 * lookups and the admin probe. It injects the credential's token and passes on no answer
 * that carries it back (token-echo.ts), waits for a seat of the credential's governor,
 * bounds the whole call by one deadline, does the shared re-login plus one retry for
 * reads on a 401 that the probe call confirms, the bounded read retries, and maps
 * failures to GW_* errors.
 */
export class PlatformClient {
  readonly #dispatcher: Dispatcher
  readonly #timeoutMs: number
  readonly #defaultBase: string
  readonly #governors: PlatformGovernors
  readonly #verdicts: TokenVerdicts
  readonly #refusals: RefusalLog
  readonly #usage: Pick<TeamUsage, 'platformCall' | 'platformSpent'>
  readonly #history: Pick<History, 'platformCall'> | null
  readonly #onRetried: (credential: string) => void
  readonly #clock: Clock
  readonly #maxPauseMs: number
  readonly #failing: PlatformFailing | null
  readonly #maxDecodedBytes: number
  readonly #holdsScrubbed: (text: string) => boolean
  readonly #shutdown = new ShutdownWatch()

  constructor(opts: {
    dispatcher: Dispatcher
    timeoutMs: number
    defaultBaseUrl: string | null
    governors: PlatformGovernors
    verdicts: TokenVerdicts
    refusals: RefusalLog
    /** Counts the gateway's own calls (json, probe) under GATEWAY_TEAM, a team's json() under the team; the teams' other calls are counted where they are made. */
    usage: Pick<TeamUsage, 'platformCall' | 'platformSpent'>
    /** Counts every call sent, with its latency, in this replica's last hour. */
    history?: Pick<History, 'platformCall'>
    /** A read is sent again after a 502/503/504 or a reset (the retries' counter). */
    onRetried?: (credential: string) => void
    /** The deadlines' time and timers; the governors' clock. Default systemClock. */
    clock?: Clock
    /** platform.maxPause: the longest `retry-after` an answer is handed on with (withBoundedRetryAfter). */
    maxPauseMs: number
    /** Told of each try's end: answered, or failed (no answer, or a 5xx). */
    failing?: PlatformFailing
    /** platform.bufferTotalBytes: the most a coded answer decodes to (token-echo.ts, EncodedScan). */
    maxDecodedBytes: number
    /** Whether a text holds a value the log scrubs (SecretSet.holdsScrubbed): a call's span then carries its path `[REDACTED]` whole. Default none. */
    holdsScrubbed?: (text: string) => boolean
  }) {
    this.#dispatcher = opts.dispatcher
    this.#timeoutMs = opts.timeoutMs
    this.#defaultBase = opts.defaultBaseUrl ?? ''
    this.#governors = opts.governors
    this.#verdicts = opts.verdicts
    this.#refusals = opts.refusals
    this.#usage = opts.usage
    this.#history = opts.history ?? null
    this.#onRetried = opts.onRetried ?? (() => undefined)
    this.#clock = opts.clock ?? systemClock
    this.#maxPauseMs = opts.maxPauseMs
    this.#failing = opts.failing ?? null
    this.#maxDecodedBytes = opts.maxDecodedBytes
    this.#holdsScrubbed = opts.holdsScrubbed ?? (() => false)
  }

  /** The platform has paused the credential or the route of `url` (a 429): a cached copy is better than a wait. */
  paused(credential: string, url: string): boolean {
    return this.#governors.paused(credential, url)
  }

  /**
   * One call with the provider's current token. Any status but 401 is the caller's to
   * read (its body must be consumed or destroyed), and fails GW_UPSTREAM where it carries
   * that token back (token-echo.ts). A 401 the probe call does not confirm
   * is GW_PLATFORM_REFUSED; a confirmed one on a write, or again after the re-login, is
   * GW_PLATFORM_AUTH.
   */
  async send(provider: TokenProvider, platformCall: PlatformCall): Promise<SentResponse> {
    // One async frame for the whole call (its wait for a seat, its tries, a re-login), not
    // one calling another: each frame is kept, with its registers, while the call waits.
    const deadline = this.#deadline(platformCall.timeoutMs)
    try {
      const call: PlatformCall = { ...platformCall, signal: deadline.signal }
      if (!provider.usable()) await abortable(provider.started, call.signal)
      if (!provider.usable()) await abortable(provider.loginAfterBusy(), call.signal)
      const first = provider.usable() ? provider.current() : null
      if (!first) throw untilOperatorsAct(withLoginFault(provider, new PlatformAuthError(`credential ${provider.name} has no usable token`), this.#clock.now()))
      const base = this.baseOf(provider)
      let sent = first
      let res = await this.#once(provider.name, base, call, sent.token, deadline.at)
      if (res.status !== 401) return forCaller(res, provider, sent, deadline, this.#maxDecodedBytes)
      res.body.resume()
      // The token was replaced while the call was out (a login here or on another replica,
      // an operator's PUT): its 401 says nothing of the token in use now. A read goes
      // again with that one, without asking the probe about a token no longer used.
      const current = provider.usable() ? provider.current() : null
      if (current && current.token !== sent.token && call.read && isReplayable(call.body)) {
        sent = current
        res = await this.#once(provider.name, base, call, sent.token, deadline.at)
        if (res.status !== 401) return forCaller(res, provider, sent, deadline, this.#maxDecodedBytes)
        res.body.resume()
      }
      const { renewed, verdict } = await abortable(this.#renewal(provider, call, sent.token), call.signal)
      if (!call.read || !isReplayable(call.body)) {
        // Its 401 says the platform did not carry it out, and #renewal holds a new token: its caller may send it again.
        throw verdict === 'confirmed' ? new PlatformAuthError('the write was not carried out, nor sent again; the gateway holds a new token now: send it again') : refusedCall(verdict)
      }
      const again = await this.#once(provider.name, base, call, renewed.token, deadline.at)
      if (again.status !== 401) return forCaller(again, provider, renewed, deadline, this.#maxDecodedBytes)
      again.body.resume()
      const retried = await abortable(this.#verdict(provider, renewed.token, call), call.signal)
      if (retried !== 'confirmed') throw refusedCall(retried)
      provider.condemn(renewed.token)
      throw untilOperatorsAct(new PlatformAuthError('a token obtained just now was refused too'))
    } catch (err) {
      deadline.done()
      throw err
    }
  }

  /**
   * Aborts every call still at the platform (the end of the shutdown grace): their callers
   * get 503 GW_SHUTTING_DOWN with `retry-after: 0`, as another replica answers a retry now.
   */
  abortAll(): void {
    this.#shutdown.shutDown(Object.assign(new ShuttingDownError(), { retryAfterSec: 0 }))
  }

  // One deadline per caller: queue wait, connect, headers, a re-login, the
  // read retries and the complete body are all bounded by one timer, not each by its own.
  #deadline(timeoutMs = this.#timeoutMs): Deadline {
    const controller = new AbortController()
    let unwatch = (): unknown => undefined
    const done = () => {
      this.#clock.clearTimeout(timer)
      unwatch()
    }
    const budget = Math.min(timeoutMs, this.#timeoutMs)
    // Also ends a call whose body nobody reads or drops (its 'close' never comes).
    const timer = this.#clock.setTimeout(() => {
      controller.abort(transient(new UpstreamTimeoutError()))
      done()
    }, budget)
    timer.unref()
    unwatch = this.#shutdown.watch((reason) => controller.abort(reason))
    return { signal: controller.signal, at: this.#clock.now() + budget, done }
  }

  /** The platform address a credential's calls go to. */
  baseOf(provider: TokenProvider): string {
    return provider.credential.baseUrl ?? this.#defaultBase
  }

  /**
   * The token to send a call again with after its 401: only once the probe call
   * confirms that the token itself is refused, or (no probe configured) from a re-login
   * loginMinInterval allows. Anything else is that call's refusal alone: GW_PLATFORM_REFUSED,
   * the token stays, no login and no retry.
   */
  async #renewal(provider: TokenProvider, call: PlatformCall, token: string): Promise<{ renewed: TokenState; verdict: 'confirmed' | 'no_probe' }> {
    const verdict = await this.#verdict(provider, token, call)
    if (verdict === 'unconfirmed' || verdict === 'probe_failed') throw refusedCall(verdict)
    const renewed = await provider.recover(token, verdict === 'confirmed')
    if (renewed) return { renewed, verdict }
    throw untilOperatorsAct(withLoginFault(provider, verdict === 'confirmed' ? new PlatformAuthError('no new token could be had') : refusedCall(verdict), this.#clock.now()))
  }

  async #verdict(provider: TokenProvider, token: string, call: PlatformCall): Promise<Verdict> {
    const verdict = await this.#verdicts.judge(provider, token, routeTemplate(call.url))
    this.#refusals.note(provider.name, verdict, call)
    return verdict
  }

  /**
   * A read whose JSON answer the gateway itself needs (ownership lookups): a call of
   * `team` in usage and in the governor, GATEWAY_TEAM unless a team's own call made it (a
   * team's seat-time counts in its day, as its other calls' does).
   */
  async json(provider: TokenProvider, call: Omit<PlatformCall, 'read' | 'headers' | 'team'>, team = GATEWAY_TEAM): Promise<PlatformJson> {
    this.#usage.platformCall(team)
    const spent = { ms: 0 }
    const res = await this.send(provider, { ...call, read: true, headers: JSON_HEADERS, team, spent }).finally(() => {
      if (team !== GATEWAY_TEAM) this.#usage.platformSpent(team, spent.ms)
    })
    if (res.status >= 500 || res.status === 429) {
      res.body.resume()
      throw new UpstreamError(`status ${res.status}`)
    }
    const text = await readText(res.body, MAX_JSON_REPLY_BYTES)
    let json: unknown = null
    try {
      json = text ? JSON.parse(text) : null
    } catch {
      // a non-JSON reply (an HTML error page, say): the caller sees the status only
    }
    return { status: res.status, json }
  }

  /** The status the probe call (`platform.probe`) gets with `token`: a call of GATEWAY_TEAM, as json()'s. */
  async probe(credential: string, baseUrl: string, token: string, call: Omit<PlatformCall, 'read' | 'team' | 'probe'>): Promise<number> {
    this.#usage.platformCall(GATEWAY_TEAM)
    const deadline = this.#deadline()
    try {
      const res = await this.#once(credential, baseUrl, { ...call, read: true, team: GATEWAY_TEAM, probe: true, signal: deadline.signal }, token, deadline.at)
      res.body.resume()
      return res.status
    } finally {
      deadline.done()
    }
  }

  /**
   * One call through the credential's governor: it waits for a seat, and the seat goes
   * back with the call's outcome once its answer is in, its body received whole (or with
   * none: its deadline, a broken connection, the gateway's own stop); a read is sent again
   * (with a seat of its own) after a 502/503/504 or a reset while the deadline allows.
   */
  async #once(credential: string, baseUrl: string, call: PlatformCall, token: string, deadline: number): Promise<PlatformResponse> {
    const replayable = isReplayable(call.body)
    for (let retries = 0; ; retries++) {
      call.admitted?.()
      // A shared call's wait follows its callers' queue with one signal of its own (caller-group.ts).
      const wait = !call.queue && call.hangUp && call.signal ? waitSignal([call.signal, call.hangUp]) : null
      const waitOn = wait?.signal ?? call.signal
      // Each seat's team: a shared call waits in the queues of several, and is sent for the one whose seat it takes.
      const seatOwners = new WeakMap<Seat, string>()
      const ask = (team: string, signal: AbortSignal | undefined, priority: Priority) =>
        this.#governors.seat(credential, {
          team,
          url: call.url,
          ...(call.workClass === undefined ? {} : { workClass: call.workClass }),
          priority,
          deadline,
          ...(signal ? { signal } : {}),
          ...(call.urgency ? { urgency: call.urgency } : {}),
          ...(call.probe ? { probe: true } : {}),
          ...(call.trial ? { trial: true } : {}),
        }).then((seat) => (seatOwners.set(seat, team), seat))
      let seat: PausedSeat
      try {
        seat = await traced(call.trace, 'governor.queue', () => ({ 'gateway.credential': credential, 'gateway.team': call.team, 'gateway.priority': call.priority ?? 'caller' }), () =>
          call.queue ? seatFollowing(call.team, call.queue, [call.signal, call.hangUp], ask) : ask(call.team, waitOn, call.priority ?? 'caller'),
        )
      } finally {
        wait?.done()
      }
      try {
        call.admitted?.(seatOwners.get(seat) ?? call.team)
        // A seat given in the turn the call's deadline passed, or the shutdown came: the call is past sending.
        if (call.signal?.aborted) throw call.signal.reason as Error
      } catch (refused) {
        // Never sent: nothing reached the platform, so the seat is free at once, its team charged nothing.
        seat.end({ kind: 'unsent' })
        throw refused
      }
      call.sending?.()
      const started = this.#clock.now()
      // The call's latency, for the governor: a duration, measured on the monotonic clock.
      const sent = performance.now()
      let delay: number | null
      // The request's own end: the shutdown, or a watch past the caller's deadline (below).
      const upstream = new AbortController()
      const release = this.#shutdown.watch((reason) => upstream.abort(reason))
      // With tracing on, the platform is sent the gateway's own traceparent (the span of this try), never a caller's.
      const response = tracedCall(call.trace, () => platformCallSpan(baseUrl, call, retries, this.#holdsScrubbed), (tracing) =>
        request(`${baseUrl}${call.url}`, {
          method: call.method as Dispatcher.HttpMethod,
          dispatcher: this.#dispatcher,
          headers: { ...call.headers, ...tracing, authorization: `Bearer ${token}`, 'x-request-id': call.requestId },
          body: call.body ?? undefined,
          signal: upstream.signal,
        }),
      )
      try {
        const res = await abortable(response, call.signal)
        release()
        // A body still coming at the deadline is cut there.
        call.signal?.addEventListener('abort', () => upstream.abort(call.signal?.reason), { once: true })
        const retryAfter = res.headers['retry-after']
        const latencyMs = performance.now() - sent
        if (call.spent) call.spent.ms += latencyMs
        this.#history?.platformCall(latencyMs)
        endWithAnswer(seat, res, { kind: 'answer', status: res.statusCode, latencyMs, count: platformCount(res.headers), ...(typeof retryAfter === 'string' ? { retryAfter } : {}) })
        if (res.statusCode >= 500) this.#failing?.failed(credential, started)
        else this.#failing?.answered(credential)
        // A retry-after that says no time (unreadable, two lines) is none: one reader, for the retry as for the pauses.
        const saysWhen = retryAfterMs(retryAfter, this.#clock.now()) !== null
        delay = this.#retryDelay(credential, { read: call.read, replayable, retries, outcome: { status: res.statusCode, retryAfter: saysWhen } }, started, deadline)
        // Its retry-after as the gateway's word: the pause it draws, in seconds (the pauses read the platform's own, above);
        // a 429's is the pause it draws for its call even without one (1 s doubling with each 429 in a row).
        if (delay === null) return { status: res.statusCode, headers: this.#passedHeaders(res, seat), body: res.body }
        res.body.resume()
      } catch (err) {
        const timedOut = call.signal?.aborted === true && call.signal.reason instanceof UpstreamTimeoutError
        const latencyMs = performance.now() - sent
        if (call.spent) call.spent.ms += latencyMs
        // The gateway's own stop says nothing of the platform; no answer by the deadline does.
        const platformsFault = !call.signal?.aborted
        if (timedOut || platformsFault) this.#failing?.failed(credential, started)
        if (timedOut) {
          // The caller is answered at its deadline; the platform works on, and its answer is
          // still awaited, for as long again as a call's budget: the seat goes back when the
          // platform's work ends, and the work estimates learn what such a call takes.
          this.#history?.platformCall(latencyMs)
          this.#watch(response, upstream, release, seat, sent)
        } else {
          upstream.abort(err)
          release()
          this.#history?.platformCall(platformsFault ? latencyMs : null)
          seat.end(platformsFault ? { kind: 'none', latencyMs, timedOut: false } : { kind: 'dropped' })
        }
        delay = this.#retryDelay(credential, { read: call.read, replayable, retries, outcome: { error: err } }, started, deadline)
        if (delay === null) throw upstreamError(err)
      }
      await abortable(sleep(delay, undefined, { ref: false }), call.signal)
    }
  }

  /**
   * A call past its caller's deadline: its answer's headers end its seat (the body is
   * dropped), or, none within another `platform.timeout`, the request is cut and the seat
   * held to the call's expected end.
   */
  #watch(response: Promise<Dispatcher.ResponseData>, upstream: AbortController, release: () => void, seat: Seat, sent: number): void {
    const timer = this.#clock.setTimeout(() => upstream.abort(transient(new UpstreamTimeoutError())), this.#timeoutMs)
    timer.unref()
    response.then(
      (res) => {
        const retryAfter = res.headers['retry-after']
        seat.end({ kind: 'answer', status: res.statusCode, latencyMs: performance.now() - sent, count: platformCount(res.headers), ...(typeof retryAfter === 'string' ? { retryAfter } : {}) })
        res.body.on('error', () => undefined)
        res.body.destroy()
      },
      () => seat.end({ kind: 'none', latencyMs: performance.now() - sent, timedOut: true }),
    ).finally(() => {
      this.#clock.clearTimeout(timer)
      release()
    })
  }

  /** The platform answer's headers as handed on: its `retry-after` the pause it draws, in whole seconds rounded up (a 429's even without one). */
  #passedHeaders(res: Dispatcher.ResponseData, seat: PausedSeat): IncomingHttpHeaders {
    const headers = res.headers as IncomingHttpHeaders
    if (res.statusCode !== 429) return withBoundedRetryAfter(headers, this.#clock.now(), this.#maxPauseMs)
    const retryAfter = headers['retry-after']
    return { ...headers, 'retry-after': String(Math.ceil(seat.pauseMs(typeof retryAfter === 'string' ? retryAfter : undefined) / 1000)) }
  }

  /** How long to wait before sending the call again; null: it is not sent again. */
  #retryDelay(credential: string, attempt: Attempt, started: number, deadline: number): number | null {
    if (!isRetryable(attempt)) return null
    const now = this.#clock.now()
    const delay = backoffMs(attempt.retries)
    if (!fitsBudget(now, delay, now - started, deadline)) return null
    this.#onRetried(credential)
    return delay
  }
}

const REFUSAL_REASONS: Record<Exclude<Verdict, 'confirmed'>, string> = {
  unconfirmed: 'the token check call accepts the token, so the platform refused this call only',
  probe_failed: 'the token check call failed, so the token is kept',
  no_probe: 'no token check call is configured (platform.probe), so one 401 does not condemn the token',
}

function refusedCall(verdict: Exclude<Verdict, 'confirmed'>): GatewayError {
  return new PlatformRefusedError(REFUSAL_REASONS[verdict])
}

// What a caller of a credential can do once the platform refuses its token and no later
// try may pass (no login, or one the platform refused): nothing but wait for the operators,
// whom /readyz and the log's error line tell.
const OPERATORS_ACT = "the gateway's operators must give it a token the platform accepts (its /readyz names the credential under degraded): retry once they have"

/** `err` ending with what its caller can do, when it is GW_PLATFORM_AUTH and not transient (a login the platform did not answer, or answered 429, is tried again by itself). */
export function untilOperatorsAct(err: GatewayError): GatewayError {
  if (err.code === 'GW_PLATFORM_AUTH' && !isTransient(err)) err.message = `${err.message}; ${OPERATORS_ACT}`
  return err
}

/**
 * `err` of a call that has no token to send, ending with why when the credential's last
 * password login failed (TokenProvider.loginFault): it got no answer or a 5xx (the platform
 * down), or a 429 (the platform busy, with the seconds left of its retry-after:
 * `retryAfterSec`), which a later try may not meet (transient.ts); or the platform refused
 * it (a 4xx but 429), named by its status alone: its answer may quote the login's secrets.
 */
function withLoginFault(provider: TokenProvider, err: GatewayError, now: number): GatewayError {
  const fault = provider.loginFault
  if (fault === null) return err
  if (fault.kind === 'refused') {
    err.message = `${err.message}: its password login was refused by the platform (${fault.status})`
    return err
  }
  if (fault.kind === 'down') {
    err.message = `${err.message}: its password login got no answer or a 5xx from the platform`
    return transient(err)
  }
  err.message = `${err.message}: its password login was answered 429 (the platform busy)`
  const left = provider.loginBusySec(now)
  return transient(left !== null ? Object.assign(err, { retryAfterSec: left }) : err)
}

/**
 * The span of a try at the platform, by the HTTP semantic conventions: its method, the
 * route template (numeric segments as `{id}`) and the platform's address, never the query
 * nor a header (the token is in one). The path is the caller's text: `[REDACTED]` whole
 * where it holds a value the log scrubs (`holdsScrubbed`: a short login password a team
 * wrote), as in the request's own span; else anything shaped like a team key in it is
 * `[REDACTED]`, and it is cut at ATTRIBUTE_VALUE_LIMIT, the name too.
 */
function platformCallSpan(baseUrl: string, call: PlatformCall, retries: number, holdsScrubbed: (text: string) => boolean): { name: string; attributes: Record<string, string | number> } {
  const url = new URL(baseUrl)
  const given = call.url.split('?', 1)[0] as string
  const path = holdsScrubbed(given) ? '[REDACTED]' : spanText(given)
  const template = spanText(routeTemplate(path))
  const attributes: Record<string, string | number> = {
    'http.request.method': call.method,
    'server.address': url.hostname,
    'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
    'url.full': `${url.origin}${path}`,
    'url.template': template,
    'gateway.team': call.team,
  }
  if (retries > 0) attributes['http.request.resend_count'] = retries
  return { name: `${call.method} ${template}`, attributes }
}

const spanText = (text: string): string => withoutKeys(text).slice(0, ATTRIBUTE_VALUE_LIMIT)

/**
 * Ends `seat` with `outcome` once the platform's answer is in: its body received whole, or
 * ended by the gateway (a deadline, a refusal for want of room). The platform works on a
 * call until it has sent its answer, and every answer is received at the platform's pace
 * (answer-buffer.ts): the seat is held, and charged, that long, never for a caller's pace.
 * The latency the limit rule and the work estimates learn from stays the headers' (a body
 * cut off at the gateway's deadline says nothing of the platform's work).
 */
function endWithAnswer(seat: Seat, res: Dispatcher.ResponseData, outcome: SeatOutcome): void {
  if (res.body.closed || res.body.readableEnded) return seat.end(outcome)
  // A body received whole emits 'end' and then 'close'; one cut off, 'close' alone: the seat
  // ends at the first, once (the pauses count each end of a 429 as a strike).
  let ended = false
  const end = () => {
    if (ended) return
    ended = true
    res.body.off('end', end)
    res.body.off('close', end)
    seat.end(outcome)
  }
  res.body.once('end', end)
  res.body.once('close', end)
}

/**
 * `res` with the call's deadline still armed until its body is read whole (or dropped): a
 * platform trickling its body is cut off at the deadline too.
 */
function armed(res: PlatformResponse, deadline: Deadline): PlatformResponse {
  res.body.once('close', deadline.done)
  return res
}

/**
 * `res`, the answer to a call sent with `sent`'s token, as a caller may read it: with the
 * account that token acts for (a copy of it is kept for that account), failing where it
 * carries the token back or, coded, decodes to more than `maxDecodedBytes` (token-echo.ts),
 * and a 407 is no answer to the caller. A 407 is a proxy between the gateway and the
 * platform asking the gateway for credentials of its own (RFC 9110, 15.5.8): the way to
 * the platform is the gateway's, and its `proxy-authenticate` would have a caller's client
 * or browser offer the credentials of the caller's own proxy. It fails the call (GW_UPSTREAM).
 * So does an answer in a transfer coding other than `chunked` alone (RFC 9112, 6.1): the
 * HTTP client removes the chunks and hands on the bytes still in the coding before them,
 * which no scan of the answer reads as a caller's client would.
 */
const CHUNKED_ALONE = /^ *chunked *$/i

function forCaller(res: PlatformResponse, provider: TokenProvider, sent: TokenState, deadline: Deadline, maxDecodedBytes: number): SentResponse {
  if (res.status === 407) {
    res.body.resume()
    throw new UpstreamError('the platform answered 407: a proxy before it asks for credentials')
  }
  const transfer = res.headers['transfer-encoding']
  // Spaces alone around it: a tab or another blank after it is no chunked coding to the HTTP client, which reads the answer to the connection's end.
  if (transfer !== undefined && (typeof transfer !== 'string' || !CHUNKED_ALONE.test(transfer))) {
    res.body.resume()
    throw new UpstreamError('the platform answered in a transfer coding other than chunked')
  }
  return { ...armed({ ...res, body: withoutToken(res.headers, res.body, sent.token, maxDecodedBytes) }, deadline), account: provider.accountOf(sent) }
}

function isReplayable(body: PlatformCall['body']): boolean {
  return body === undefined || body === null || typeof body === 'string' || Buffer.isBuffer(body)
}

/** `work`, or the signal's reason once it aborts first. */
function abortable<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work
  if (signal.aborted) return Promise.reject(signal.reason as Error)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error)
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

async function readText(body: AsyncIterable<Buffer> & { destroy(): void }, limit: number): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of body) {
      size += chunk.length
      if (size > limit) throw new UpstreamError(`a reply larger than ${limit} bytes`)
      chunks.push(chunk)
    }
  } catch (err) {
    body.destroy()
    throw upstreamError(err)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** A failed call's error: no answer (the connection failed, or the platform's timeout) is marked transient, a later try may not meet it. */
export function upstreamError(err: unknown): GatewayError {
  if ((err as { code?: string }).code?.startsWith('GW_')) return err as GatewayError
  const code = (err as { code?: string }).code ?? ''
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || (err as Error).name === 'TimeoutError') {
    return transient(new UpstreamTimeoutError({ cause: err }))
  }
  return transient(new UpstreamError(connectionFailure(err), { cause: err }))
}

