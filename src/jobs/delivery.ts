import { claim, holds, released, type Leased, type Run } from './lease.js'

/**
 * A webhook delivery in the outbox (docs/jobs.md, "Pushed when done"): the push of one
 * ended job to its team's webhook, recorded in the shared store by the replica whose end
 * of the job the store took, then attempted by whichever replica's deliverer claims it
 * when it is due (lease.ts: one claim at a time, taken over once its lease ran out).
 * At least once, never exactly once over HTTP: every attempt carries the same
 * `webhook-id` and body, and the receiver drops a repeat. Pure: each transition returns
 * the next delivery or null when it is not allowed, the stores swap it in.
 *
 *   pending ──claim──► pending (claimed) ──attempt──► delivered | failed
 *      ▲                                     │
 *      └────────── a retry, not before nextAttemptAt ┘
 */

/** One attempt as recorded: when, by which replica, the receiver's status or why none, when the next is due. */
export interface DeliveryAttempt {
  at: number
  replica: string
  /** The receiver's HTTP status; null: no answer (refused, a network error, the timeout). */
  status: number | null
  error: string | null
  /** When it is tried again; null once delivered or given up. */
  nextAttemptAt: number | null
}

export interface Delivery extends Leased {
  /** The `webhook-id` of every attempt: `msg_` and the job's id. */
  id: string
  job: string
  team: string
  /** The job's state it tells: `done` or `failed`. */
  jobState: string
  /**
   * Where the delivery goes as kept (webhookAtRest: its origin, never the URL's user, path,
   * query or fragment, which may carry the receiver's own token): the team's webhook when
   * it was recorded, then where its latest attempt went. Each attempt goes to the team's
   * webhook as the teams say then, whole. A record of a build before this rule holds the
   * whole URL until a replica of this one claims it.
   */
  url: string
  /** The job's status JSON, POSTed as it is on every attempt. */
  body: string
  state: 'pending' | 'delivered' | 'failed'
  createdAt: number
  /** When it may be attempted next; null once delivered or given up. */
  nextAttemptAt: number | null
  /** Requests made (a refused URL makes none). */
  tries: number
  /** The latest attempts, oldest first: at most ATTEMPTS_KEPT. */
  attempts: DeliveryAttempt[]
}

/** What one attempt came to. */
export type AttemptResult = { ok: true; status: number } | { ok: false; status: number | null; error: string; retry: boolean; made: boolean; retryAfterMs?: number | null }

/** The attempts a record keeps (its latest): a delivery tried for jobs.webhookRetryFor makes about 20 at most with the default hour. */
export const ATTEMPTS_KEPT = 30
/** The wait before the first retry, doubled each time up to MAX_BACKOFF_MS. */
export const FIRST_BACKOFF_MS = 1000
export const MAX_BACKOFF_MS = 5 * 60_000

/**
 * A webhook URL as a delivery keeps it and an operator reads it: its origin (scheme, host,
 * port), never its user, path, query or fragment. A receiver's own token rides in its
 * query (`?tok=…`) or in its path (Slack's `/services/T…/B…/<token>`, Discord's
 * `/api/webhooks/<id>/<token>`, Zapier's and n8n's hooks), and Redis is shared, not
 * trusted, and a viewer's token reads no secret; the team's config names the whole URL.
 */
export function webhookAtRest(url: string): string {
  return URL.parse(url)?.origin ?? ''
}

/** The delivery of a job's end at `now` to the webhook at `url`, due at once. */
export function newDelivery(fields: Pick<Delivery, 'job' | 'team' | 'jobState' | 'url' | 'body'>, now: number): Delivery {
  return { ...fields, url: webhookAtRest(fields.url), id: `msg_${fields.job}`, state: 'pending', createdAt: now, nextAttemptAt: now, tries: 0, attempts: [], runner: null, leaseUntil: 0, runs: 0 }
}

/** From when a deliverer may claim it: its next attempt's time, or its claim's end while claimed; null once settled. */
export function deliveryDueAt(d: Delivery): number | null {
  if (d.state !== 'pending') return null
  return d.runner === null ? d.nextAttemptAt : d.leaseUntil
}

/** `d` claimed by `runner` at `now` for `leaseMs`, its URL as kept (a record of an earlier build holds it whole); null when it is not due. */
export function claimDelivery(d: Delivery, runner: string, now: number, leaseMs: number): Delivery | null {
  const due = deliveryDueAt(d)
  return due !== null && now >= due ? claim({ ...d, url: webhookAtRest(d.url) }, runner, now, leaseMs) : null
}

/**
 * `d` after the attempt of `run` ended at `now` with `result`: delivered on 2xx; tried again
 * after 1 s, 2 s, 4 s… (at most 5 min) on a retryable failure while `retryForMs` has not
 * passed since the first attempt, or after the receiver's `retry-after` when it asks longer
 * (at most 5 min too: a receiver that asks an hour is still tried within `retryForMs`);
 * else given up. Null when `run` no longer holds it.
 */
export function attempted(d: Delivery, run: Run, now: number, result: AttemptResult, retryForMs: number): Delivery | null {
  if (d.state !== 'pending' || !holds(d, run)) return null
  const tries = d.tries + (result.ok || result.made ? 1 : 0)
  const first = d.attempts[0]?.at ?? now
  const asked = result.ok ? 0 : (result.retryAfterMs ?? 0)
  const at = now + Math.min(MAX_BACKOFF_MS, Math.max(asked, FIRST_BACKOFF_MS * 2 ** Math.max(0, tries - 1)))
  const next = result.ok || !result.retry || at > first + retryForMs ? null : at
  const state = result.ok ? 'delivered' : next === null ? 'failed' : 'pending'
  const attempt: DeliveryAttempt = { at: now, replica: run.runner, status: result.status, error: result.ok ? null : result.error, nextAttemptAt: next }
  return { ...released(d), state, tries, nextAttemptAt: next, attempts: [...d.attempts, attempt].slice(-ATTEMPTS_KEPT) }
}

/** The delivery as GET /admin/jobs lists it: never a secret, nor its body. */
export interface DeliveryView {
  id: string
  job: string
  team: string
  state: Delivery['state']
  jobState: string
  /** Where it is POSTed: the URL's origin, without its user, path, query and fragment (webhookAtRest). */
  url: string
  /** Requests made. */
  attempts: number
  lastStatus: number | null
  lastError: string | null
  createdAt: string
  nextAttemptAt: string | null
  /** The latest attempts, oldest first. */
  history: { at: string; replica: string; status: number | null; error: string | null; nextAttemptAt: string | null }[]
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())

export function deliveryView(d: Delivery): DeliveryView {
  const last = d.attempts.at(-1)
  return {
    id: d.id,
    job: d.job,
    team: d.team,
    state: d.state,
    jobState: d.jobState,
    url: webhookAtRest(d.url),
    attempts: d.tries,
    lastStatus: last?.status ?? null,
    lastError: last?.error ?? null,
    createdAt: iso(d.createdAt) as string,
    nextAttemptAt: iso(d.nextAttemptAt),
    history: d.attempts.map((a) => ({ at: iso(a.at) as string, replica: a.replica, status: a.status, error: a.error, nextAttemptAt: iso(a.nextAttemptAt) })),
  }
}
