import type { Logger } from 'pino'
import type { FailureLog } from '../observe/failure-log.js'
import type { Clock } from '../clock.js'
import type { JobStatus } from './job.js'
import { attempted, claimDelivery, deliveryView, newDelivery, webhookAtRest, type AttemptResult, type Delivery, type DeliveryView } from './delivery.js'
import type { DeliveryStore, DueMark } from './delivery-store.js'
import { PollLoop } from './poll-loop.js'
import type { Run } from './lease.js'
import { webhookSignature } from './webhook-signature.js'
import type { Dispatcher } from 'undici'
import { WebhookConnections, type WebhookConnectOptions } from './webhook-connections.js'
import { hostsOf, webhookRefusal } from '../config/webhook-hosts.js'
import { literalOf, PlatformAddressError, platformSockets, socketRefusal, type LookupAll } from './webhook-target.js'
import { connectionFailure } from '../platform/client/connection-failure.js'
import { retryAfterMs } from '../platform/pauses/retry-after.js'
import { buildInfo } from '../observe/build-info.js'

/** The webhooks' settings (config `jobs.webhook*`), in milliseconds and bytes. */
export interface WebhookSettings {
  /** The hosts a team's webhook may point at; empty: webhooks off. */
  hosts: readonly string[]
  /** How long one attempt may take, the receiver's answer read included. */
  timeoutMs: number
  /** How long after its first attempt a delivery is still tried again. */
  retryForMs: number
}

/** A team's webhook (team setting `webhook`). */
export interface WebhookTarget {
  url: string
  secret: string
}

/** What a push names its sender in `user-agent`: the gateway and its version (package.json's, as GET /admin/status and gateway_build_info say it). */
export const WEBHOOK_USER_AGENT = `report-gateway/${buildInfo().version}`

/** The bytes of a receiver's answer read at most: the rest is dropped with the connection. */
export const WEBHOOK_ANSWER_BYTES = 64 * 1024
/** The deliveries GET /admin/jobs lists (the latest of every team). */
export const LISTED = 200
/** Deliveries one replica attempts at once. */
const AT_ONCE = 8
/** Of those, one team's at most: a receiver that never answers holds no more, the others' deliveries take the rest. */
export const PER_TEAM_AT_ONCE = 2
/** The due deliveries' ids a pass reads at a time. */
const PAGE = 64
/**
 * The due deliveries a pass looks through, the earliest first, for teams with room: past
 * those of teams at PER_TEAM_AT_ONCE, read once (their teams kept by id), a team's due
 * delivery is found behind this many of other teams' (four teams' full backlogs at the
 * default `jobs.deliveriesPerTeam`).
 */
const LOOK_PAST = 4096

export interface WebhookDeliveriesDeps {
  store: DeliveryStore
  settings: WebhookSettings
  /** The platform's base URLs: neither their hosts nor their addresses (as resolved at each attempt) are ever a receiver. */
  platformUrls: readonly string[]
  /** How the platform's host names are resolved for that check (dns.lookup by default). */
  resolve?: LookupAll
  /** The team's webhook as the running teams say now; null: none set. */
  target(team: string): WebhookTarget | null
  /** Seconds left of the suspension of `team` (access/team-suspensions.ts); null: not suspended. */
  suspendedFor?: (team: string) => number | null
  clock: Clock
  log: Pick<Logger, 'info' | 'warn'>
  /** This replica's id: the deliverer named in the claims it makes. */
  replica: string
  /** How long a claim holds beyond an attempt's own bound (jobs.lease): a stopped replica's claim is taken over after it. */
  leaseMs: number
  /** Where a failure to reach the store is noted: a Redis outage is one line per interval. */
  failures: Pick<FailureLog, 'warn'>
  /** What the receivers' connections are opened with beyond the guarded lookup (a test's CA); none in the gateway. */
  connect?: WebhookConnectOptions
}

/**
 * Pushes ended jobs to their teams' webhooks (docs/jobs.md, "Pushed when done") through
 * an outbox: `deliveryOf` is the delivery a job's end records, which the job store adds
 * to the outbox in the same step as the end (job-store.ts, `swap`), and every replica's deliverer claims the due ones (delivery.ts, lease.ts: one claim at a
 * time), attempts and records each attempt. A claim holds for the attempt's bound
 * (`timeoutMs`) plus `leaseMs`: an attempt is over before its claim can be taken over,
 * so no two replicas attempt one delivery at once; a replica stopped mid-attempt leaves
 * it to another after the claim. At least once: an attempt whose record failed is made
 * again, with the same `webhook-id`.
 *
 * An attempt is a POST of the job's status JSON to the team's webhook URL as the teams say
 * now, signed the Standard Webhooks way with its secret as they say now. Not through the platform client (it adds the
 * platform's token): one request on the receiver's pool (undici's `request`, not `fetch`,
 * which adds a browser's headers: `sec-fetch-mode`, `accept-language`, `accept-encoding`,
 * `user-agent: undici`), carrying the headers docs/jobs.md lists and no other, that follows
 * no redirect, ends after `timeoutMs` and reads at most WEBHOOK_ANSWER_BYTES of the answer
 * as sent (no `accept-encoding`: the receiver sends it as it is). A network error, a timeout, 408, 429
 * or 5xx is tried again (delivery.ts, `attempted`); a redirect or another 4xx is final.
 */
export class WebhookDeliveries {
  readonly #d: WebhookDeliveriesDeps
  /** The deliveries under way here, by id: their teams. */
  readonly #attempting = new Map<string, string>()
  /** The team of each due delivery a pass read (a delivery's team never changes): a later pass passes it by unread while its team has no room. */
  #teamOf = new Map<string, string>()
  readonly #loop: PollLoop
  readonly #connections: WebhookConnections

  constructor(deps: WebhookDeliveriesDeps) {
    this.#d = deps
    this.#connections = new WebhookConnections(deps.connect)
    // Woken at the earliest due delivery of any replica's, looked at again at least every
    // jobs.lease: another replica's retry, or a claim run out, is found then.
    this.#loop = new PollLoop(deps.clock, () =>
      this.#poll()
        .catch((err: unknown) => {
          deps.failures.warn('GW_JOBS_UNAVAILABLE', { log: deps.log, msg: 'looking for webhook deliveries to make failed', err }, 'webhooks')
          return deps.clock.now() + deps.leaseMs
        })
        .then((next) => Math.min(deps.leaseMs, (next ?? Infinity) - deps.clock.now())),
    )
  }

  /** Looks for due deliveries from now on. */
  start(): void {
    this.#loop.start()
  }

  /** Claims no delivery after this; attempts under way end within their bound. */
  stop(): void {
    this.#loop.stop()
  }

  /** Stops, and closes the connections kept to the receivers (an attempt under way on one ends with it). */
  async close(): Promise<void> {
    this.stop()
    await this.#connections.close()
  }

  /** The latest deliveries of every team (of every replica, with Redis), newest first. */
  async list(limit = LISTED): Promise<DeliveryView[]> {
    return (await this.#d.store.latest(limit, this.#d.clock.now())).map(deliveryView)
  }

  /** The delivery of the end of a job of `team` at `now`, told by its `status`, when the team has a webhook; null when it has none. */
  deliveryOf(team: string, status: JobStatus, now: number): Delivery | null {
    const target = this.#d.target(team)
    return target === null ? null : newDelivery({ job: status.id, team, jobState: status.state, url: target.url, body: JSON.stringify(status) }, now)
  }

  /** Looks for due deliveries now. */
  poke(): void {
    this.#loop.poke()
  }

  /**
   * Claims and attempts the due deliveries it has room for, at most PER_TEAM_AT_ONCE of a
   * team at once, the earliest due first, looking past the deliveries of teams without room
   * (LOOK_PAST); when the earliest one left is due. A due delivery left for its team's room
   * is looked at again when an attempt ends (its poke), not in a loop.
   */
  async #poll(): Promise<number | null> {
    const { store, clock } = this.#d
    // Full: an attempt's end looks again.
    if (this.#attempting.size >= AT_ONCE) return null
    let waiting = false
    const seen = new Map<string, string>()
    const dueAt = clock.now()
    let after: DueMark | null = null
    let looked = 0
    let end = false
    while (!end && looked < LOOK_PAST && !this.#full()) {
      const marks: DueMark[] = await store.dueIds(dueAt, after, PAGE)
      end = marks.length < PAGE
      looked += marks.length
      after = marks.at(-1) ?? after
      const ids = marks.map((mark) => mark.id)
      const read = new Map((await store.records(ids.filter((id) => !this.#teamOf.has(id)))).map((d) => [d.id, d]))
      for (const d of read.values()) this.#teamOf.set(d.id, d.team)
      for (const id of ids) {
        const team = this.#teamOf.get(id)
        if (this.#full() || team === undefined) continue
        seen.set(id, team)
        if (this.#underWay(team) >= PER_TEAM_AT_ONCE) {
          waiting = true
          continue
        }
        const d = read.get(id) ?? (await store.records([id]))[0]
        if (d !== undefined) await this.#claim(d)
      }
    }
    // What a pass read through to the end is every due delivery's team; a pass cut short keeps the rest, a bounded number.
    if (end || this.#teamOf.size > 2 * LOOK_PAST) this.#teamOf = seen
    return this.#full() || waiting ? null : store.nextDue()
  }

  /** Whether this replica attempts as many as it may at once, or stops. */
  #full(): boolean {
    return this.#loop.stopped || this.#attempting.size >= AT_ONCE
  }

  /** Claims `d` and attempts it; false when another replica claimed it first (or it changed since read). */
  async #claim(d: Delivery): Promise<boolean> {
    const { store, clock, replica, settings, leaseMs } = this.#d
    const now = clock.now()
    const claimed = claimDelivery(d, replica, now, settings.timeoutMs + leaseMs)
    if (!claimed || !(await store.swap(d, claimed, now))) return false
    // Claimed before, its claim run out: its replica's attempt was never recorded (killed,
    // or cut off from Redis), and that replica logs nothing of it, so the one that takes it over does.
    if (d.runner !== null) {
      this.#d.log.warn(
        { delivery: d.id, job: d.job, team: d.team, from: d.runner, runs: claimed.runs },
        "webhook delivery taken over: its claim ran out with its attempt unrecorded (that replica was killed or cut off from Redis); the receiver may have had that attempt, with the same webhook-id",
      )
    }
    this.#attempt(claimed)
    return true
  }

  /** The team's attempts under way here. */
  #underWay(team: string): number {
    let n = 0
    for (const t of this.#attempting.values()) if (t === team) n++
    return n
  }

  #attempt(d: Delivery): void {
    this.#attempting.set(d.id, d.team)
    const run: Run = { runner: this.#d.replica, runs: d.runs }
    // The team's webhook as the teams say now: a reload that moved it (or changed its
    // secret) moves the deliveries still pending with it, and the record says where (as
    // kept: its origin, no path or query, which may hold the receiver's token).
    const target = this.#d.target(d.team)
    this.#send(d, target)
      .then((result) => this.#record(d, run, result, webhookAtRest(target?.url ?? d.url)))
      .catch((err: unknown) => this.#d.log.warn({ err, delivery: d.id }, 'recording a webhook attempt failed: it is made again once its claim runs out'))
      .finally(() => {
        this.#attempting.delete(d.id)
        this.poke()
      })
  }

  async #record(d: Delivery, run: Run, result: AttemptResult, url: string): Promise<void> {
    const { store, clock, settings, log } = this.#d
    const now = clock.now()
    const attempt = attempted(d, run, now, result, settings.retryForMs)
    const next = attempt === null ? null : { ...attempt, url }
    if (next === null || !(await store.swap(d, next, now))) return
    const fields = { delivery: d.id, job: d.job, team: d.team, attempts: next.tries, status: result.status }
    if (next.state === 'delivered') log.info(fields, 'report job pushed to its team\'s webhook')
    else if (next.state === 'failed') log.warn({ ...fields, reason: result.ok ? null : result.error }, 'pushing a report job to its team\'s webhook failed: given up')
    // Due again at its retry time: looked for then, here; any replica finds it by then too.
    else if (next.nextAttemptAt !== null) clock.setTimeout(() => this.poke(), Math.max(1, next.nextAttemptAt - now)).unref()
  }

  /** One POST of `d` to the team's webhook `target` as the teams say now: its URL, signed with its secret. */
  async #send(d: Delivery, target: WebhookTarget | null): Promise<AttemptResult> {
    const { settings, platformUrls, clock } = this.#d
    if (target === null) return refused('the team has no webhook now')
    // A suspended team is pushed nothing, as it is answered nothing (its request held a
    // secret of the gateway's): given up, not held for the suspension's days.
    const suspended = this.#d.suspendedFor?.(d.team) ?? null
    if (suspended !== null) return refused(`the team is suspended (GW_TEAM_SUSPENDED) for ${suspended} s more: a request of its held a secret of the gateway's`)
    const refusal = webhookRefusal(target.url, settings.hosts, hostsOf(platformUrls))
    if (refusal !== null) return refused(refusal)
    // Where the connection goes, not only the name: the platform's socket is never one.
    // The attempt's bound holds from here: a lookup that hangs holds it no longer than that.
    const signal = AbortSignal.timeout(settings.timeoutMs)
    const url = new URL(target.url)
    const isPlatform = await until(platformSockets(platformUrls, this.#d.resolve), signal).catch(() => null)
    if (isPlatform === null) return { ok: false, status: null, error: `the platform's addresses were not resolved within ${settings.timeoutMs}ms`, retry: true, made: false }
    const literal = literalOf(url)
    const direct = literal === null ? null : socketRefusal(url, literal, isPlatform)
    if (direct !== null) return refused(direct)
    // A connection kept from an earlier attempt, checked against the platform's sockets as resolved now, or a new one.
    const dispatcher = this.#connections.for(url, isPlatform)
    const timestamp = Math.floor(clock.now() / 1000)
    // Beside these, undici adds `host`, `content-length` and `connection: keep-alive`, nothing else.
    const headers = {
      'content-type': 'application/json',
      'user-agent': WEBHOOK_USER_AGENT,
      'webhook-id': d.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': webhookSignature(target.secret, d.id, timestamp, d.body),
    }
    try {
      // The pool follows no redirect: a 3xx is the answer.
      const res = await dispatcher.request({ origin: url.origin, path: `${url.pathname}${url.search}`, method: 'POST', headers, body: d.body, signal })
      // Its status says what the receiver made of the push: a body cut short (the
      // connection closed, the bound passed) changes nothing of it, and closes the connection.
      if (!(await drain(res.body, WEBHOOK_ANSWER_BYTES))) this.#connections.drop(url, dispatcher)
      const status = res.statusCode
      if (status >= 200 && status < 300) return { ok: true, status }
      if (status >= 300 && status < 400) return { ok: false, status, error: 'the receiver answered a redirect: not followed', retry: false, made: true }
      const retry = status >= 500 || status === 408 || status === 429
      const retryAfter = res.headers['retry-after']
      return { ok: false, status, error: `the receiver answered ${status}`, retry, made: true, retryAfterMs: retryAfterMs(typeof retryAfter === 'string' ? retryAfter : undefined, clock.now()) }
    } catch (err) {
      this.#connections.drop(url, dispatcher)
      if (err instanceof PlatformAddressError) return refused(err.message)
      // close() ends the connections, an attempt under way with them: the receiver was reached, this replica went.
      if (this.#loop.stopped) return { ok: false, status: null, error: STOPPED_MID_ATTEMPT, retry: true, made: true }
      return { ok: false, status: null, error: (err as Error).name === 'TimeoutError' ? `no answer within ${settings.timeoutMs}ms` : `the receiver could not be reached (${connectionFailure(err, "the receiver's address")})`, retry: true, made: true }
    } finally {
      this.#connections.done(dispatcher)
    }
  }
}

/** What an attempt its replica's stop cut off is recorded with (GET /admin/jobs `lastError`, `history[].error`). */
const STOPPED_MID_ATTEMPT = 'the attempt was cut off: this replica was stopping'

/** `promise`, or the signal's reason once it aborts first. */
function until<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason as Error)
    if (signal.aborted) return abort()
    signal.addEventListener('abort', abort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort))
  })
}

/** An attempt not made: the URL may not receive deliveries; final. */
function refused(why: string): AttemptResult {
  return { ok: false, status: null, error: `refused: ${why}`, retry: false, made: false }
}

/** Reads at most `cap` bytes of the answer, then drops the rest; whether it read the answer to its end (false too when it broke off or outlasted the attempt's bound). */
async function drain(body: Dispatcher.ResponseData['body'], cap: number): Promise<boolean> {
  let read = 0
  try {
    for await (const chunk of body) {
      read += (chunk as Buffer).byteLength
      if (read >= cap) {
        body.destroy()
        return false
      }
    }
    return true
  } catch {
    return false
  }
}
