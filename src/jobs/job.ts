import { holdsFigures } from '../reports/finality.js'
import type { CanonicalReport } from '../reports/report-query.js'
import type { Forward } from '../reports/report-cache.js'
import { claim, extended, holds, released, type Leased, type Run } from './lease.js'

export type { Run } from './lease.js'

/**
 * A report job (docs/jobs.md): a report read asked with `Prefer: respond-async`, run
 * later as background work of its team. Pure: every transition is a plain function of a
 * job and the time, each returning the next job or null when the transition is not
 * allowed from where the job is; the stores (memory, Redis) keep jobs and swap one for
 * its next only if nobody changed it meanwhile.
 *
 *   queued ──start──► running ──end──► done | failed ──(expiresAt)──► expired ──► dropped
 *     ▲  └─cancel─► (removed)  │
 *     └───────requeue──────────┘   (no seat in time, the platform's 429 or its pause, a shutdown;
 *                                   retried: no answer, a 5xx or no room for the answer, jobs.retries times at most)
 *
 * A running job's runner holds a lease (lease.ts) it renews; once the lease has run out
 * (its replica stopped or crashed) any runner may start the job again: `runs` counts the
 * starts, and only the run that started it last may renew, end or requeue it.
 */

/** What a job's status says it is: the stored states, and `expired` once its result's time has passed. */
export type JobState = 'queued' | 'running' | 'done' | 'failed' | 'expired'
type StoredState = Exclude<JobState, 'expired'>

/**
 * Why a job failed: the GW_* error a synchronous read would have answered; or, with
 * `platformAnswer` (code GW_PLATFORM_ANSWER), the platform's own refusal of the report (a
 * 4xx but 429), which a synchronous read passes on as it is and the job's result answers so.
 */
export interface JobError {
  code: string
  message: string
  statusCode: number
  /** When the wait it named ends (epoch ms), for a failure that says when to come back (a 429, a 503). */
  retryAt?: number
  platformAnswer?: PlatformAnswer
  /** The refusal as a record of the release before holds it (InlineAnswer): read, never written. */
  answer?: InlineAnswer
}

/**
 * The platform's answer a job keeps to answer as its result, as a read passes it on
 * uncached: its refusal (a failed job's JobError.platformAnswer), or its 2xx or 3xx the
 * read answers as it is (a done job's `platformAnswer`: a 200 it said not to store, a 201,
 * a 204, a 302...). Its status, the headers a read passes on (reports/report-fetcher.ts),
 * and why the read went to the platform (its `cache-status`) are in the job's record; its
 * body is kept beside the record as a report result is (with its end: JobStore.swap), bounded as
 * one (cache.maxEntryBytes) and counted in `resultBytes`.
 */
export interface PlatformAnswer {
  status: number
  headers: Record<string, string>
  forward?: Forward
}

/**
 * The platform's answer as a record of the release before (acbf44e) holds it, under
 * `answer`: its body in the record, in base64 (64 KiB at most). A replica of that release
 * answers a kept `answer` from its body alone, so a record of this one never holds one
 * (docs/operations/upgrade.md): it reads a done job without one as a report (its
 * result kept beside it) and a failed one as its GW_* error. Read, never written.
 */
export interface InlineAnswer extends PlatformAnswer {
  body: string
}

/** The code of a job that failed with the platform's own refusal of its report (JobError.platformAnswer). */
export const PLATFORM_ANSWER = 'GW_PLATFORM_ANSWER'

export interface Job extends Leased {
  id: string
  team: string
  /** The credential its platform call is made with (the team's). */
  credential: string
  /** The report's cache key: identical jobs, and a job and a fill, share one platform call by it. */
  key: string
  report: CanonicalReport
  /** Its platform call's place in its team's queue: `job`, or `warm` for a warm-up asked as a job (`x-cache-warm: 1`). */
  priority: 'job' | 'warm'
  state: StoredState
  askedAt: number
  startedAt: number | null
  endedAt: number | null
  /** Platform-seconds a call of its kind takes, learned from the team's own calls of its kind when the job was asked; null: none had ended. */
  expectedSeconds: number | null
  /** Platform-seconds its own call took: 0 when a copy or another call answered it. */
  tookSeconds: number | null
  /**
   * When the figures its result answers were fetched from the platform (the copy's fill, or
   * the platform's answer it kept): its finality is judged at this instant (figuresAt).
   * Absent until it ended, for a failure with no answer kept, and in a record of the
   * release before.
   */
  fetchedAt?: number
  error: JobError | null
  /** When its result (or failure) expires: set when it ends. */
  expiresAt: number | null
  /** A requeued job is not started again before this (epoch ms). */
  notBefore: number
  /** The bytes of its result (a report, or the body of the platform's answer it ended with), kept beside it until `expiresAt`. */
  resultBytes: number
  /** A done job's result when the platform's answer is passed on uncached (a no-store 200, another 2xx, a 3xx): its status and headers here, its body beside (never in the report cache). */
  platformAnswer?: PlatformAnswer
  /** The same in a record of the release before (InlineAnswer): read, never written. */
  answer?: InlineAnswer
  /** Tries given back after no answer, the platform's 5xx or no room for the answer (retryJob); absent: none. */
  retries?: number
  /** The platform-seconds those tries took, counted in its `tookSeconds` at its end; absent: none. */
  triedSeconds?: number
  /** The failure of the last try given back, which its status says while it waits; absent: none. */
  lastError?: JobError
}

/** How a run ended: its result kept (its bytes: a report, or the body of the platform's answer not to store), or a failure (the bytes of the refusal it kept, if any). */
export type Outcome = { kind: 'done'; resultBytes: number; tookSeconds: number; fetchedAt: number; platformAnswer?: PlatformAnswer } | { kind: 'failed'; error: JobError; tookSeconds: number; resultBytes?: number; fetchedAt?: number }

/**
 * Why `job`'s credential may no longer read its report, its token acting for another
 * platform account now (a PUT /admin/token, a rollout of another customer's token) than
 * when the job was asked: its key holds that account, and `isKeyOf` tells whether it is the
 * key the credential makes as it acts now (ReportCache.isKeyOf; a key of the release before,
 * which held no account, is any account's: a job asked before the upgrade). A job is its team's
 * and its credential's as that account: the figures of one account are no team's once the
 * credential acts for another. Null: the same account.
 */
export function accountRefusal(job: Pick<Job, 'id' | 'credential' | 'report' | 'key'>, isKeyOf: (key: string, credential: string, report: CanonicalReport) => boolean): string | null {
  return isKeyOf(job.key, job.credential, job.report) ? null : `credential ${job.credential} acts for another platform account than the one job ${job.id} was asked for`
}

/** An expired job's record stays this long after its result expired, so that its status says `expired` rather than 404. */
export const EXPIRED_KEPT_MS = 60 * 60_000

export function newJob(fields: Pick<Job, 'id' | 'team' | 'credential' | 'key' | 'report' | 'expectedSeconds'> & Partial<Pick<Job, 'priority'>>, now: number): Job {
  return { ...fields, priority: fields.priority ?? 'job', state: 'queued', askedAt: now, startedAt: null, endedAt: null, tookSeconds: null, error: null, expiresAt: null, runner: null, leaseUntil: 0, runs: 0, notBefore: now, resultBytes: 0 }
}

/** Whether a runner may start `job` at `now`: it is queued and due, or its last run's lease ran out. */
export function startable(job: Job, now: number): boolean {
  if (job.state === 'queued') return now >= job.notBefore
  return job.state === 'running' && now >= job.leaseUntil
}

/** From when a runner may start `job`: a queued job's `notBefore`, a running one's lease end; null once ended. */
export function dueAt(job: Job): number | null {
  if (job.state === 'queued') return job.notBefore
  return job.state === 'running' ? job.leaseUntil : null
}

/** What a runner has started of a team: its jobs running there, and when it last started one (a count of starts; absent: never). */
export interface TeamTurn {
  running: number
  lastStart: number
}

/**
 * The order a runner starts due jobs in (earliest due first): each next one is the
 * earliest of the team with the fewest jobs running on the replica, then of the team it
 * started one for longest ago (never first), those it starts before counted: one team's
 * queue holds no other team's jobs back, while a team alone takes every slot.
 */
export function startOrder(due: readonly Job[], turns: ReadonlyMap<string, TeamTurn>): Job[] {
  const now = new Map(turns)
  const turn = (job: Job): TeamTurn => now.get(job.team) ?? { running: 0, lastStart: -Infinity }
  const before = (a: Job, b: Job): boolean => turn(a).running < turn(b).running || (turn(a).running === turn(b).running && turn(a).lastStart < turn(b).lastStart)
  const left = [...due]
  const order: Job[] = []
  let starts = Math.max(0, ...[...turns.values()].map((t) => t.lastStart))
  while (left.length > 0) {
    let next = 0
    for (let i = 1; i < left.length; i++) if (before(left[i] as Job, left[next] as Job)) next = i
    const [job] = left.splice(next, 1) as [Job]
    order.push(job)
    now.set(job.team, { running: turn(job).running + 1, lastStart: ++starts })
  }
  return order
}

/** What a run lost with its runner leaves as the job's last failure (takenOver). */
export const RUN_LOST: JobError = { code: 'GW_UPSTREAM', statusCode: 502, message: 'its run was lost before it ended (its replica was killed or cut off from Redis), its platform call with it' }

/**
 * `job` started by `runner` at `now`, its lease held for `leaseMs`. One still running, its
 * lease run out (taken over: its runner was lost), counts that run as a try that got no
 * answer (retries, lastError): a report whose run kills its replica is not run for ever.
 */
export function startJob(job: Job, runner: string, now: number, leaseMs: number): Job | null {
  if (!startable(job, now)) return null
  const lost = job.state === 'running' ? { retries: (job.retries ?? 0) + 1, lastError: RUN_LOST } : {}
  return { ...claim(job, runner, now, leaseMs), state: 'running', startedAt: now, ...lost }
}

/** Whether `run` is the job's current run, still running. */
export function isRun(job: Job, run: Run): boolean {
  return job.state === 'running' && holds(job, run)
}

/** The lease of `run` renewed at `now`; null when the run is no longer the job's (another runner took it). */
export function renewJob(job: Job, run: Run, now: number, leaseMs: number): Job | null {
  return isRun(job, run) ? extended(job, now, leaseMs) : null
}

/** `run` ended at `now` with `outcome`, its result (or failure) kept `keepMs`. */
export function endJob(job: Job, run: Run, now: number, outcome: Outcome, keepMs: number): Job | null {
  if (!isRun(job, run)) return null
  // Every try's platform-seconds: those given back after no answer, a 5xx or no room for the answer, and this one's.
  const tookSeconds = Math.round(((job.triedSeconds ?? 0) + outcome.tookSeconds) * 1000) / 1000
  const ended = { ...released(job), endedAt: now, expiresAt: now + keepMs, tookSeconds, ...(outcome.fetchedAt === undefined ? {} : { fetchedAt: outcome.fetchedAt }) }
  if (outcome.kind === 'failed') return { ...ended, state: 'failed', error: outcome.error, resultBytes: outcome.resultBytes ?? 0 }
  return { ...ended, state: 'done', resultBytes: outcome.resultBytes, ...(outcome.platformAnswer ? { platformAnswer: outcome.platformAnswer } : {}) }
}

/**
 * The platform's answer an ended `job` answers as its result (its refusal when it failed),
 * with its body when the record holds it (a record of the release before: InlineAnswer),
 * else null (the body is kept beside the record); null when it ended otherwise.
 */
export function keptAnswer(job: Job): { answer: PlatformAnswer; body: Buffer | null } | null {
  const kept = job.state === 'failed' ? (job.error?.platformAnswer ?? job.error?.answer) : job.state === 'done' ? (job.platformAnswer ?? job.answer) : undefined
  if (kept === undefined) return null
  const { body, ...answer } = kept as PlatformAnswer & { body?: string }
  return { answer, body: body === undefined ? null : Buffer.from(body, 'base64') }
}

/** `run` given back unfinished, not to start again before `notBefore`. */
export function requeueJob(job: Job, run: Run, notBefore: number): Job | null {
  if (!isRun(job, run)) return null
  return { ...released(job), state: 'queued', startedAt: null, notBefore }
}

/**
 * `run` given back after a try that got no answer, the platform's 5xx or no room for its
 * answer (`error`, its platform-seconds `tookSeconds`), to be tried again from `notBefore`:
 * the tries and their seconds are kept, counted at its end.
 */
export function retryJob(job: Job, run: Run, notBefore: number, error: JobError, tookSeconds: number): Job | null {
  const next = requeueJob(job, run, notBefore)
  if (next === null) return null
  return { ...next, retries: (job.retries ?? 0) + 1, triedSeconds: Math.round(((job.triedSeconds ?? 0) + tookSeconds) * 1000) / 1000, lastError: error }
}

/** A job may be cancelled while it waits: once running, its platform call may be shared by others. */
export function cancellable(job: Job): boolean {
  return job.state === 'queued'
}

/** Whether `job` has ended (done or failed, expired or not). */
export function ended(job: Job): boolean {
  return job.state === 'done' || job.state === 'failed'
}

/** What its status says at `now`. */
export function stateAt(job: Job, now: number): JobState {
  return ended(job) && job.expiresAt !== null && now >= job.expiresAt ? 'expired' : job.state
}

/**
 * The instant `job`'s finality is judged at (finality.ts), in its status, its webhook push
 * and its result alike: when its result's figures were fetched, which may be before it
 * ended (a copy filled before it ran); when it ended, in a record that says no fetch (the
 * release before's); now while it is open, as a read now would fetch them. A result that
 * holds no figures says none (resultHoldsFigures).
 */
export function figuresAt(job: Job, now: number): number {
  return job.fetchedAt ?? job.endedAt ?? now
}

/**
 * Whether `job`'s result holds a report's figures, so that its status says their finality
 * as its result's headers do: open (a read now would fetch them), or done with a report or
 * a 2xx the platform answered. A failure (its own, or the platform's refusal kept) and a
 * redirect kept hold none.
 */
export function resultHoldsFigures(job: Job): boolean {
  if (job.state === 'failed') return false
  if (job.state !== 'done') return true
  const kept = keptAnswer(job)
  return kept === null || holdsFigures(kept.answer.status)
}

/** Whether a purge after a copy's fill reaches it (the report cache's purges, under its cache key `key`). */
export type PurgeCheck = (copy: { fetchedAt: number; advertiserIds: number[] }, key: string) => boolean

/**
 * Whether a purge reached `job`'s result, its figures fetched at `fetchedAt`: a purge is
 * final for a result as for the entry it copies. A result is as old as its run's start, or
 * as the copy it took when that was filled before: a purge made while the run's call was at
 * the platform reaches it (the platform may have read its figures before).
 */
export function purgeReaches(job: Job, fetchedAt: number, purged: PurgeCheck): boolean {
  return purged({ fetchedAt: Math.min(fetchedAt, job.startedAt ?? job.askedAt), advertiserIds: job.report.advertiserIds }, job.key)
}

/** Whether a purge reached the result `job` ended with: gone as an expired one is (its status says expired, its result is 410). */
export function resultPurged(job: Job, purged: PurgeCheck): boolean {
  return (job.state === 'done' || keptAnswer(job) !== null) && purgeReaches(job, job.fetchedAt ?? job.startedAt ?? job.askedAt, purged)
}

/** When its record goes: an hour after its result expired; never while it is open. */
export function dropAt(job: Job): number | null {
  return job.expiresAt === null ? null : job.expiresAt + EXPIRED_KEPT_MS
}

/** The result bytes `jobs` hold at `now`: those of ended jobs not yet expired (a kept platform answer's too). */
export function heldResultBytes(jobs: Iterable<Job>, now: number): number {
  let bytes = 0
  for (const j of jobs) if (stateAt(j, now) !== 'expired' && ended(j)) bytes += j.resultBytes
  return bytes
}

/** The place of `job` in its team's queue (1: next), among the team's `jobs`; null when it is not queued. */
export function placeInQueue(job: Job, jobs: Iterable<Job>): number | null {
  if (job.state !== 'queued') return null
  let ahead = 0
  for (const j of jobs) if (j.id !== job.id && j.state === 'queued' && (j.askedAt < job.askedAt || (j.askedAt === job.askedAt && j.id < job.id))) ahead += 1
  return ahead + 1
}

/** The status a caller reads (GET /api/v1/jobs/{id}). */
export interface JobStatus {
  id: string
  state: JobState
  askedAt: string
  startedAt: string | null
  endedAt: string | null
  placeInQueue: number | null
  expectedSeconds: number | null
  tookSeconds: number | null
  error: { code: string; message: string; statusCode: number } | null
  /** While it waits to be tried again after no answer, the platform's 5xx or no room for the answer: the tries given back, the next one's time, the last one's failure; else null. */
  retry: { tries: number; nextTryAt: string; lastError: { code: string; message: string; statusCode: number } } | null
  expiresAt: string | null
  result: string | null
  /** Null once it ended with a result that holds no figures (resultHoldsFigures). */
  settledThrough: string | null
  provisionalDays: string | null
}

/** What a report answer's `report-settled-through` and `report-provisional-days` say. */
export interface JobFinality {
  settledThrough: string
  provisionalDays: string
}

const NO_FINALITY = { settledThrough: null, provisionalDays: null }

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString())

const errorOf = (e: JobError) => ({ code: e.code, message: e.message, statusCode: e.statusCode })

/**
 * The status of `job` at `now`; `finality`, that of its figures' fetch (figuresAt), said while
 * its result holds figures; `purged`: a purge reached its result, which is gone as an expired one is.
 */
export function jobStatus(job: Job, place: number | null, now: number, finality: JobFinality, purged = false): JobStatus {
  const state = purged ? 'expired' : stateAt(job, now)
  return {
    id: job.id,
    state,
    askedAt: iso(job.askedAt) as string,
    startedAt: iso(job.startedAt),
    endedAt: iso(job.endedAt),
    placeInQueue: place,
    expectedSeconds: job.expectedSeconds,
    tookSeconds: job.tookSeconds,
    error: job.error && errorOf(job.error),
    retry: state === 'queued' && job.lastError ? { tries: job.retries ?? 0, nextTryAt: iso(job.notBefore) as string, lastError: errorOf(job.lastError) } : null,
    expiresAt: iso(job.expiresAt),
    // Once ended, done or failed, its result is there to read: the report, or why it failed.
    result: state === 'done' || state === 'failed' ? `/api/v1/jobs/${job.id}/result` : null,
    ...(resultHoldsFigures(job) ? finality : NO_FINALITY),
  }
}
