import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { JobStatus } from './job.js'
import { webhookSignature } from './webhook-signature.js'
import { webhookRefusal } from './webhook-target.js'

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

/** One delivery of a job's end, as `GET /admin/jobs` lists it: never its secret, nor its body. */
export interface Delivery {
  /** The `webhook-id` of every attempt: the receiver's key to drop a repeated one. */
  id: string
  job: string
  team: string
  state: 'pending' | 'delivered' | 'failed'
  /** The job's state it tells: `done` or `failed`. */
  jobState: string
  url: string
  attempts: number
  /** The receiver's last HTTP status; null: no answer (refused, a network error, the timeout). */
  lastStatus: number | null
  lastError: string | null
  createdAt: string
  /** When it is tried again; null once delivered or given up. */
  nextAttemptAt: string | null
}

/** The bytes of a receiver's answer read at most: the rest is dropped with the connection. */
export const WEBHOOK_ANSWER_BYTES = 64 * 1024
/** The deliveries one replica lists (its latest). */
const LISTED = 200
/** The wait before the first retry, doubled each time up to MAX_BACKOFF_MS. */
const FIRST_BACKOFF_MS = 1000
const MAX_BACKOFF_MS = 5 * 60_000

export interface WebhookDeliveriesDeps {
  settings: WebhookSettings
  /** The platform's hosts: never a receiver. */
  platformHosts: readonly string[]
  /** The team's webhook as the running teams say now; null: none set. */
  target(team: string): WebhookTarget | null
  clock: Clock
  log: Pick<Logger, 'info' | 'warn'>
}

/** What one attempt came to. */
type Attempt = { ok: true; status: number } | { ok: false; status: number | null; error: string; retry: boolean }

/**
 * Pushes a job's end to its team's webhook (docs/jobs.md, "Pushed when done"): a POST of
 * the job's status JSON, signed the Standard Webhooks way with the team's secret. Not
 * through the platform client (it adds the platform's token): a plain fetch that follows
 * no redirect, ends after `timeoutMs` and reads at most WEBHOOK_ANSWER_BYTES of the
 * answer. A network error, a timeout, 408, 429 or 5xx is tried again after 1 s, 2 s,
 * 4 s… (at most 5 min) while `retryForMs` has not passed since the first attempt; a
 * redirect or another 4xx is final. The replica whose run ended the job delivers it.
 */
export class WebhookDeliveries {
  readonly #d: WebhookDeliveriesDeps
  readonly #listed: Delivery[] = []

  constructor(deps: WebhookDeliveriesDeps) {
    this.#d = deps
  }

  /** This replica's latest deliveries, newest first. */
  list(): Delivery[] {
    return [...this.#listed].reverse()
  }

  /** Delivers the end of a job of `team` when the team has a webhook; returns at once. */
  deliver(team: string, status: JobStatus): void {
    const target = this.#d.target(team)
    if (target === null) return
    const { clock, settings, platformHosts } = this.#d
    const now = clock.now()
    const delivery: Delivery = { id: `msg_${status.id}`, job: status.id, team, state: 'pending', jobState: status.state, url: target.url, attempts: 0, lastStatus: null, lastError: null, createdAt: new Date(now).toISOString(), nextAttemptAt: new Date(now).toISOString() }
    this.#listed.push(delivery)
    if (this.#listed.length > LISTED) this.#listed.shift()
    const refusal = webhookRefusal(target.url, settings.hosts, platformHosts)
    if (refusal !== null) {
      this.#settle(delivery, { ok: false, status: null, error: `refused: ${refusal}`, retry: false })
      return
    }
    const body = JSON.stringify(status)
    const until = now + settings.retryForMs
    const attempt = (): void => {
      void this.#attempt(target, delivery, body).then((result) => {
        const backoff = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (delivery.attempts - 1))
        const at = clock.now() + backoff
        if (result.ok || !result.retry || at > until) {
          this.#settle(delivery, result)
          return
        }
        Object.assign(delivery, { lastStatus: result.status, lastError: result.error, nextAttemptAt: new Date(at).toISOString() })
        clock.setTimeout(attempt, backoff).unref()
      })
    }
    attempt()
  }

  async #attempt(target: WebhookTarget, delivery: Delivery, body: string): Promise<Attempt> {
    delivery.attempts += 1
    const timestamp = Math.floor(this.#d.clock.now() / 1000)
    const headers = {
      'content-type': 'application/json',
      'webhook-id': delivery.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': webhookSignature(target.secret, delivery.id, timestamp, body),
    }
    try {
      const res = await fetch(target.url, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.timeout(this.#d.settings.timeoutMs) })
      await drain(res, WEBHOOK_ANSWER_BYTES)
      if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status }
      if (res.status >= 300 && res.status < 400) return { ok: false, status: res.status, error: 'the receiver answered a redirect: not followed', retry: false }
      return { ok: false, status: res.status, error: `the receiver answered ${res.status}`, retry: res.status >= 500 || res.status === 408 || res.status === 429 }
    } catch (err) {
      const e = err as Error
      return { ok: false, status: null, error: e.name === 'TimeoutError' ? `no answer within ${this.#d.settings.timeoutMs}ms` : `the receiver could not be reached (${e.message})`, retry: true }
    }
  }

  #settle(delivery: Delivery, result: Attempt): void {
    Object.assign(delivery, { state: result.ok ? 'delivered' : 'failed', lastStatus: result.status, lastError: result.ok ? null : result.error, nextAttemptAt: null })
    const fields = { delivery: delivery.id, job: delivery.job, team: delivery.team, attempts: delivery.attempts, status: result.status }
    if (result.ok) this.#d.log.info(fields, 'report job pushed to its team\'s webhook')
    else this.#d.log.warn({ ...fields, reason: result.error }, 'pushing a report job to its team\'s webhook failed: given up')
  }
}

/** Reads at most `cap` bytes of the answer, then drops the rest (and its connection). */
async function drain(res: Response, cap: number): Promise<void> {
  if (res.body === null) return
  const reader = res.body.getReader()
  let read = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return
    read += value.byteLength
    if (read >= cap) {
      await reader.cancel()
      return
    }
  }
}
