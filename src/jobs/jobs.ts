import { randomBytes } from 'node:crypto'
import type { Clock } from '../clock.js'
import type { CacheEntry } from '../cache/cache-entry.js'
import type { CanonicalReport } from '../reports/report-query.js'
import { JobExpiredError, JobNotDoneError, JobNotFoundError, JobPurgedError, JobRunningError, JobsFullError, JobsKeptFullError, JobsUnavailableError, WaitsFullError } from '../errors.js'
import { cancellable, dropAt, figuresAt, jobStatus, keptAnswer, newJob, placeInQueue, purgeReaches, resultPurged, stateAt, type Job, type JobError, type JobFinality, type JobStatus, type PlatformAnswer, type PurgeCheck } from './job.js'
import type { JobStore } from './job-store.js'
import type { JobRunner, JobSettings } from './job-runner.js'
import type { JobWaits, WaitRefusal } from './job-waits.js'

/**
 * The most bytes of its report (its parameters, its body as sent, what its cache key is
 * made of) a job's record keeps. A record is kept without expiry until `jobs.keep` and an
 * hour after its job ended, `jobs.maxKeptPerTeam` of a team: at this bound 160 MiB of one
 * team's records at most, where a report body at its own bound (64 KiB) made a record of
 * 190 KB. A larger report is read as it asks, not as a job (report-route.ts).
 */
export const JOB_REPORT_BYTES = 16 * 1024

/** Whether `report` fits in a job's record (JOB_REPORT_BYTES). */
export function fitsJobRecord(report: CanonicalReport): boolean {
  return Buffer.byteLength(JSON.stringify(report)) <= JOB_REPORT_BYTES
}

/** The longest a status call may wait for its job to change (`?wait=N`). */
export const MAX_WAIT_SECONDS = 30

// How often a waiting status call reads its job again: a change on another replica is
// seen within this.
const WAIT_POLL_MS = 250
// When a team that keeps jobs.maxKeptPerTeam jobs may ask again: its records are swept
// (dropped past their time) about this often.
const KEPT_FULL_RETRY_SEC = 60

export interface JobsDeps {
  store: JobStore
  runner: JobRunner
  settings: Pick<JobSettings, 'maxOpenPerTeam' | 'maxKeptPerTeam'>
  /** The status calls held open (`?wait`) on this replica, bounded. */
  waits: JobWaits
  clock: Clock
  /** Tells every replica's runner that a job was asked (the bus); the runner here is poked directly. */
  announce?: () => void
  /** Platform-seconds a call of this report is expected to take for the team; null: not known yet. */
  expectedSeconds(credential: string, team: string, report: CanonicalReport): number | null
  /** Up to which day the report's figures are settled, and which of its days are provisional, for a copy fetched at `at`. */
  finality(report: CanonicalReport, at: number): JobFinality
  /** Whether a purge after a copy's fill reaches it: a purge is final. */
  purged: PurgeCheck
}

/** What a job is asked for: the caller's team and credential, and its report and cache key. */
export interface JobAsk {
  team: string
  /** A warm-up (`x-cache-warm: 1`): its call waits behind every other, as a synchronous warm-up's. */
  warm: boolean
  credential: string
  report: CanonicalReport
  key: string
}

/** A done job's report, or the platform's answer a job kept (job.ts, keptAnswer) and its body; and the job. */
export type JobResult = { entry: CacheEntry; job: Job } | { answer: PlatformAnswer; body: Buffer; job: Job }

/**
 * Report jobs as callers see them (contract, "Report jobs"): asked, read (waiting for a
 * change), cancelled, their result. A job is its team's: another team's id reads as
 * none (404), as an unknown one does.
 */
export class Jobs {
  readonly #d: JobsDeps
  /**
   * Each team's asks on this replica in the millisecond `#asksAt`, for its ids' order part:
   * ids of other milliseconds sort by their time, so only the current one's are kept.
   */
  readonly #asks = new Map<string, number>()
  #asksAt = -Infinity
  /** Aborted when the replica closes: its status calls wait no more (endWaits). */
  readonly #closing = new AbortController()

  constructor(deps: JobsDeps) {
    this.#d = deps
  }

  /** How many teams' ask orders are kept. */
  get orderedTeams(): number {
    return this.#asks.size
  }

  /** A new queued job; 429 when the team has jobs.maxOpenPerTeam open already. */
  ask(ask: JobAsk): Promise<JobStatus> {
    return shared(() => this.#ask(ask))
  }

  /**
   * The status of the team's job `id`; with `waitMs`, once its state changed or that time
   * passed (at once when it has ended), or as soon as `left` says its caller hung up, or
   * `runs`, read at each look, that its caller may no longer be answered (its key removed:
   * its place among the waits given back then); 429 GW_WAITS_FULL at once when the team's or
   * the replica's bound of waits is held.
   */
  status(id: string, team: string, waitMs = 0, left?: AbortSignal, runs: () => boolean = () => true): Promise<JobStatus> {
    return shared(() => this.#statusOf(id, team, waitMs, left, runs))
  }

  /**
   * The replica closes (its drain over): every status call waiting (`?wait`) is answered now,
   * its job as it is, and one that comes after waits no more. Its listeners close their
   * connections at the grace's end, which a wait held past it would not outlast: the caller
   * asks again, of a replica that serves.
   */
  endWaits(): void {
    this.#closing.abort()
  }

  /** Cancels the team's job `id` while it is queued (409 once running). */
  cancel(id: string, team: string): Promise<void> {
    return shared(() => this.#cancel(id, team))
  }

  /** The report the team's job `id` ended with (or the platform's answer it kept), and the job; its failure, or why there is none yet. */
  result(id: string, team: string): Promise<JobResult> {
    return shared(() => this.#result(id, team))
  }

  async #ask(ask: JobAsk): Promise<JobStatus> {
    const { store, clock, settings, runner } = this.#d
    const now = clock.now()
    const { warm, ...asked } = ask
    const job = newJob({ id: this.#newId(ask.team, now), ...asked, priority: warm ? 'warm' : 'job', expectedSeconds: this.#d.expectedSeconds(ask.credential, ask.team, ask.report) }, now)
    // Every ask leaves a record in Redis until it is dropped: a team's records are bounded too,
    // so that one team asking jobs that end at once fills no other team's room. Which bound
    // refused an ask is read after it: the kept one when the team keeps that many.
    if (!(await store.add(job, settings.maxOpenPerTeam, now, settings.maxKeptPerTeam))) {
      if ((await store.keptOfTeam(ask.team, now)) >= settings.maxKeptPerTeam) throw Object.assign(new JobsKeptFullError(ask.team, settings.maxKeptPerTeam), { retryAfterSec: KEPT_FULL_RETRY_SEC })
      throw Object.assign(new JobsFullError(ask.team, settings.maxOpenPerTeam), { retryAfterSec: 1 })
    }
    runner.poke()
    this.#d.announce?.()
    return this.#status(job, now)
  }

  async #statusOf(id: string, team: string, waitMs: number, left: AbortSignal | undefined, runs: () => boolean): Promise<JobStatus> {
    const { clock } = this.#d
    const first = await this.#own(id, team)
    const until = clock.now() + Math.min(waitMs, MAX_WAIT_SECONDS * 1000)
    const state = stateAt(first, clock.now())
    // An ended job's state changes only to expired: the caller waits for its end, not that.
    const ending = left ? AbortSignal.any([left, this.#closing.signal]) : this.#closing.signal
    if ((state !== 'queued' && state !== 'running') || clock.now() >= until || ending.aborted) return this.#status(first, clock.now())
    const wait = this.#d.waits.take(team)
    if ('full' in wait) throw Object.assign(new WaitsFullError(waitsFull(wait.full, team, this.#d.waits)), { retryAfterSec: 1 })
    let job = first
    try {
      // A run started meanwhile is a change too, though the job may be queued again by the next
      // look (a try that failed and waits for its retry, between two polls): its `retry` moved on.
      while (clock.now() < until && stateAt(job, clock.now()) === state && job.runs === first.runs && !ending.aborted && runs()) {
        await this.#sleep(Math.min(WAIT_POLL_MS, until - clock.now()), ending)
        // A job gone meanwhile (cancelled, or its record past its hour) is answered as it is now: none.
        const now = await this.#d.store.get(id)
        if (now === null) throw new JobNotFoundError()
        job = now
      }
    } finally {
      wait.release()
    }
    return this.#status(job, clock.now())
  }

  async #cancel(id: string, team: string): Promise<void> {
    // A queued job changes only when a runner starts it: a failed removal reads it again.
    for (;;) {
      const job = await this.#own(id, team)
      if (!cancellable(job)) throw new JobRunningError(id, stateAt(job, this.#d.clock.now()))
      if (await this.#d.store.remove(job)) return
    }
  }

  async #result(id: string, team: string): Promise<JobResult> {
    const { store, clock } = this.#d
    const job = await this.#own(id, team)
    const now = clock.now()
    const state = stateAt(job, now)
    if (state === 'expired') throw new JobExpiredError(id)
    if (state !== 'done' && state !== 'failed') throw new JobNotDoneError(id, state)
    const kept = keptAnswer(job)
    if (state === 'failed' && job.error && !kept) throw Object.assign(failureOf(job.error, now), { platformMs: (job.tookSeconds ?? 0) * 1000 })
    if (kept && this.#purged(job, job.startedAt ?? job.askedAt)) throw new JobPurgedError(id)
    if (kept?.body) return { answer: kept.answer, body: kept.body, job }
    const entry = await store.result(id, now)
    if (entry === null) throw new JobExpiredError(id)
    if (this.#purged(job, entry.fetchedAt)) throw new JobPurgedError(id)
    if (kept) return { answer: kept.answer, body: entry.identity ?? Buffer.alloc(0), job }
    return { entry, job }
  }

  async #own(id: string, team: string): Promise<Job> {
    const job = await this.#d.store.get(id)
    if (job === null || job.team !== team) throw new JobNotFoundError()
    // Its record's end is the same moment on every replica, whenever a replica's sweep drops it.
    const drop = dropAt(job)
    if (drop !== null && this.#d.clock.now() >= drop) throw new JobNotFoundError()
    return job
  }

  /** Whether a purge reached `job`'s result, its figures fetched at `fetchedAt` (job.ts, purgeReaches). */
  #purged(job: Job, fetchedAt: number): boolean {
    return purgeReaches(job, fetchedAt, this.#d.purged)
  }

  async #status(job: Job, now: number): Promise<JobStatus> {
    const place = job.state === 'queued' ? placeInQueue(job, await this.#d.store.openOfTeam(job.team)) : null
    return jobStatus(job, place, now, this.#d.finality(job.report, figuresAt(job, now)), resultPurged(job, this.#d.purged))
  }

  /**
   * A job's id: when it was asked and its order among its team's asks on this replica, so
   * that a team's ids sort as its asks came (its place in the queue, asks within one
   * millisecond) and tell it nothing of other teams' asks, then 96 random bits: an id is
   * not guessed, and another team's reads as none anyway.
   */
  #newId(team: string, now: number): string {
    if (now !== this.#asksAt) {
      this.#asks.clear()
      this.#asksAt = now
    }
    const order = ((this.#asks.get(team) ?? 0) + 1) % 36 ** 4
    this.#asks.set(team, order)
    return `${now.toString(36).padStart(9, '0')}${order.toString(36).padStart(4, '0')}${randomBytes(12).toString('base64url')}`
  }

  /** `ms`, or until `left` aborts. */
  #sleep(ms: number, left: AbortSignal | undefined): Promise<void> {
    const { clock } = this.#d
    return new Promise((resolve) => {
      const wake = () => {
        clock.clearTimeout(timer)
        left?.removeEventListener('abort', wake)
        resolve()
      }
      const timer = clock.setTimeout(wake, Math.max(1, ms))
      left?.addEventListener('abort', wake, { once: true })
    })
  }
}

/**
 * `fn` on the store: a failure of Redis (anything but the gateway's own answers) is 503
 * GW_JOBS_UNAVAILABLE. The caller is told when to come back, not the driver's words (which
 * may name Redis's address or topology): those are its cause, in the log line only.
 */
async function shared<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    if (typeof (err as { code?: unknown }).code === 'string' && (err as { code: string }).code.startsWith('GW_')) throw err
    throw Object.assign(new JobsUnavailableError({ cause: err }), { retryAfterSec: 1 })
  }
}

/** What a refused wait says is full: the team's own bound, or the replica's (no other team named). */
function waitsFull(full: WaitRefusal, team: string, waits: JobWaits): string {
  return full === 'team'
    ? `team ${team} has ${waits.waiting(team)} status calls waiting (?wait) on this replica, the most it may (jobs.maxWaitsPerTeam)`
    : `this replica holds ${waits.waiting()} status calls waiting (?wait), the most it may (jobs.maxWaits)`
}

/**
 * A failed job's result: its failure as a read would have answered it; a 429 or a 503 says
 * when to come back (`retry-after`), as every one of a call does: the seconds left of the
 * wait it named, else 1.
 */
function failureOf(error: JobError, now: number): Error {
  const told = { code: error.code, statusCode: error.statusCode }
  if (error.statusCode !== 429 && error.statusCode !== 503) return Object.assign(new Error(error.message), told)
  const retryAfterSec = error.retryAt === undefined ? 1 : Math.max(0, Math.ceil((error.retryAt - now) / 1000))
  return Object.assign(new Error(error.message), told, { retryAfterSec })
}
