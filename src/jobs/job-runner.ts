import type { Logger } from 'pino'
import type { FailureLog } from '../observe/failure-log.js'
import type { Clock } from '../clock.js'
import { etagOf, type CacheEntry } from '../cache/cache-entry.js'
import { compress } from '../reports/report-fetcher.js'
import { teamTally, type CacheResult, type Forward, type ReadOptions } from '../reports/report-cache.js'
import { fillMsOf } from '../reports/fill-time.js'
import type { CanonicalReport } from '../reports/report-query.js'
import type { TokenProvider } from '../platform/tokens/token-provider.js'
import { NoIdleSeatError } from '../platform/governor/seat.js'
import { CallersGoneError } from '../platform/client/caller-group.js'
import { isTransient } from '../platform/client/transient.js'
import { pauseLength } from '../platform/pauses/pauses.js'
import { endJob, PLATFORM_ANSWER, RUN_LOST, isRun, renewJob, requeueJob, retryJob, startable, startJob, startOrder, type Job, type TeamTurn, type JobError, type Outcome, type PlatformAnswer, type Run } from './job.js'
import type { JobStore } from './job-store.js'
import { PollLoop } from './poll-loop.js'
import type { Delivery } from './delivery.js'
import { boundText, roomGrowsWith, type ResultBound } from '../redis/memory-room.js'
import { ownRequestId } from '../observe/request-id.js'
import type { TeamDirectory } from '../access/team-auth.js'
import { TeamSuspendedError } from '../errors.js'

/** The jobs' settings (config `jobs`), in milliseconds and bytes. */
export interface JobSettings {
  /** Jobs a team may have queued or running at once. */
  maxOpenPerTeam: number
  /** Jobs a team keeps at once, open and ended until dropped (jobs.ts). */
  maxKeptPerTeam: number
  /** Bytes of results a team's done jobs may keep at once. */
  resultBytesPerTeam: number
  /** How long a job's result (or failure) is kept once it ended. */
  keepMs: number
  /** How long a runner's claim on a running job holds unless renewed: a crashed replica's jobs are taken over after it. */
  leaseMs: number
  /** How often each replica looks for jobs to run. */
  pollMs: number
  /** Jobs one replica runs at once (each waits for a governor seat like any call). */
  perReplica: number
  /** How long a job that found no seat in time (or met the platform's 429) waits before it is started again; one a pause of the platform's covers waits until the pause ends, this at least. */
  retryMs: number
  /** How often a job is tried again after a try that got no answer, the platform's 5xx or no room for its answer (jobs.retries): past it, it fails. */
  retries: number
  /** platform.maxPause: the longest wait of the pauses' backoff, which spaces those tries (pauseLength). */
  maxPauseMs: number
}

/** What a job's run reads: the report cache's read (its fills, their single flight, the governor behind them). */
export interface JobReads {
  read(report: CanonicalReport, key: string, provider: TokenProvider, opts: ReadOptions): Promise<CacheResult>
}

export interface JobRunnerDeps {
  store: JobStore
  reads: JobReads
  /** The token provider of a credential. */
  provider(credential: string): TokenProvider
  settings: JobSettings
  clock: Clock
  log: Pick<Logger, 'warn' | 'info'>
  /** This replica's id: the runner named in the jobs it starts. */
  runner: string
  /** cache.maxEntryBytes: a report larger than this is not kept as a result. */
  maxEntryBytes: number
  /** Where a failure to reach the store is noted: a Redis outage is one line per interval, not one per poll. */
  failures: Pick<FailureLog, 'warn'>
  /** Each run's start and end (gateway_report_jobs_total). */
  onRun?: (outcome: RunOutcome) => void
  /** The webhook delivery of a job's end at `now` (its team's webhook), or null: the store adds it in the end's own step. */
  pushOf?: (ended: Job, now: number) => Delivery | null
  /** A job this replica's run ended (done or failed): called once, on the one replica whose end the store took. */
  onEnded?: (job: Job) => void
  /** Tells every replica's runner that a job is due (the bus): one handed back by a shutdown. */
  announce?: () => void
  /** Seconds until `team` may make platform calls again (its platform-seconds of the UTC day spent, `platformSecondsPerDay`); 0: it may. */
  spentFor?: (team: string, now: number) => number
  /** Seconds left of the suspension of `team` (a request of its held a secret of the gateway's: access/team-suspensions.ts); null: not suspended. */
  suspendedFor?: (team: string) => number | null
  /** Why the job's team, as the teams are now, may not read its report (a reload took its advertiser away, or the team; its credential acts for another account now); null: it may. */
  refusal?: (job: Job) => string | null
  /** Why the job may not keep an answer to a call sent for `account` (another account than its key's: the token changed between its start and its call's send); null: it may. */
  foreign?: (job: Job, account: string) => string | null
  /** The teams configured now: only theirs of the last starts are kept for the turns. */
  teams: Pick<TeamDirectory, 'teamOf' | 'onReplace'>
  /** A team's bound of kept results now (its part of the room in Redis); default jobs.resultBytesPerTeam. */
  bound?: () => ResultBound
}

/** What became of a run: started, then done, failed, requeued, or lost to another runner. */
export type RunOutcome = 'started' | 'done' | 'failed' | 'requeued' | 'lost'

/**
 * How a run ends: an entry to keep, the platform's answer not to store (its status and
 * headers in the job, its body kept as the entry), a failure (a refusal's body kept as
 * its entry), given back to the queue (not before `notBefore`), or given back after a try
 * that got no answer, a 5xx or no room for its answer (its failure and platform-seconds
 * kept, counted at the end).
 */
type RunEnd =
  | { kind: 'done'; entry: CacheEntry; tookSeconds: number }
  | { kind: 'answered'; answer: PlatformAnswer; entry: CacheEntry; tookSeconds: number }
  | { kind: 'failed'; error: JobError; tookSeconds: number; entry?: CacheEntry }
  | { kind: 'requeue'; notBefore: number }
  | { kind: 'retry'; notBefore: number; error: JobError; tookSeconds: number }

/**
 * Runs the jobs on one replica: every `pollMs` (and at once when a job is asked here) it
 * starts the open jobs it may, up to `perReplica`, each by a swap in the store that only
 * one replica wins. A job runs as a report read of its team at priority `job` (after its
 * callers, before its refreshes and warm-ups, within its share and ceiling; a warm-up
 * asked as a job at priority `warm`, behind every other): identical
 * jobs, and a job and a caller's fill, join one platform call, here by the read's single
 * flight and across replicas by the fill lock. While it runs, its lease is renewed every
 * third of `leaseMs`; a replica that stops renewing (stopped, crashed) loses the job to the
 * first runner that finds the lease run out, and its own end is then refused by the store.
 * A run still going at its lease's end (its renewals failed: cut off from Redis) lets go of
 * its fill then, as a caller that hangs up: one not yet sent that no caller here waits for
 * is not sent (docs/decisions/job-lease-lapse.md).
 */
export class JobRunner {
  readonly #d: JobRunnerDeps
  /** The jobs running here, each its team's. */
  readonly #running = new Map<string, string>()
  /** Each team's last start here, as a count of starts: whose turn a freed slot is (job.ts, startOrder). */
  readonly #lastStarts = new Map<string, number>()
  #starts = 0
  /**
   * Each team's last end here that keeps a result, settled or not: the next waits for it
   * (#inTurn), so that each end reads the team's held results with the ones before it in.
   */
  readonly #keeping = new Map<string, Promise<unknown>>()
  readonly #loop: PollLoop

  constructor(deps: JobRunnerDeps) {
    this.#d = deps
    const { settings, clock, teams } = deps
    // A removed team's jobs are refused, so its turn counts for no job: a reload drops it.
    teams.onReplace(() => {
      for (const team of this.#lastStarts.keys()) if (!teams.teamOf(team)) this.#lastStarts.delete(team)
    })
    // Jobs left due (no room here, or Redis failed): looked at again every jobs.poll. Else
    // every jobs.lease, which finds a stopped runner's job once its lease ran out; a job
    // asked anywhere wakes every runner at once (`wake`).
    this.#loop = new PollLoop(clock, () =>
      this.#poll()
        .catch((err: unknown) => {
          deps.failures.warn('GW_JOBS_UNAVAILABLE', { log: deps.log, msg: 'looking for report jobs to run failed', err }, 'runner')
          return true
        })
        .then((leftDue) => (leftDue ? settings.pollMs : settings.leaseMs)),
    )
  }

  start(): void {
    this.#loop.start()
  }

  /** Starts no job after this; jobs running end as their reads end (a shutdown's abort requeues them). */
  stop(): void {
    this.#loop.stop()
  }

  /** How many teams' last starts are kept for their turns. */
  get startTurns(): number {
    return this.#lastStarts.size
  }

  /** Jobs this replica runs now. */
  get running(): number {
    return this.#running.size
  }

  /** Whether it is looking for jobs now. */
  get looking(): boolean {
    return this.#loop.polling
  }

  /** Looks for jobs to start now. */
  poke(): void {
    this.#loop.poke()
  }

  /**
   * A look for jobs once the clock reads `at`: a timer may fire a millisecond before the
   * clock it is read against gets there (Node's timers run on a monotonic clock, `Date.now()`
   * in whole milliseconds), and a look that finds the job not yet due waits a whole
   * `jobs.lease` for the next; so a timer that fires early waits again for the rest.
   */
  #pokeAt(at: number): void {
    const left = at - this.#d.clock.now()
    if (left <= 0) return this.poke()
    this.#d.clock.setTimeout(() => this.#pokeAt(at), left).unref()
  }

  /** Starts the jobs due that this replica has room for; whether jobs are left due. */
  async #poll(): Promise<boolean> {
    const { store, settings, clock, runner } = this.#d
    const room = settings.perReplica - this.#running.size
    // Full: a run's end looks again.
    if (room <= 0) return false
    // Its own among them when a renewal is late, and every open job of one team: a slot
    // that frees goes to the team with the fewest running here, another team's job seen
    // behind a full queue of one team's.
    const due = await store.due(clock.now(), this.#running.size + settings.perReplica + settings.maxOpenPerTeam)
    const turns = new Map<string, TeamTurn>()
    for (const [team, lastStart] of this.#lastStarts) turns.set(team, { running: 0, lastStart })
    for (const team of this.#running.values()) {
      const turn = turns.get(team) as TeamTurn
      turns.set(team, { ...turn, running: turn.running + 1 })
    }
    for (const job of startOrder(due.filter((j) => !this.#running.has(j.id)), turns)) {
      if (this.#loop.stopped || this.#running.size >= settings.perReplica) break
      const now = clock.now()
      if (!startable(job, now)) continue
      const started = startJob(job, runner, now, settings.leaseMs)
      if (!started || !(await store.swap(job, started, now))) continue
      // Still running under a lease that ran out: its runner stopped renewing (killed, or cut
      // off from Redis) and logs nothing of it, so the one that takes it over does. This
      // replica's own run (its job no longer in #running) is one that gave up storing its
      // end before its lease ran out: it said so (`ending a report job failed`), and its
      // read's copy may still be in this replica's cache.
      if (job.state === 'running') {
        this.#d.log.warn(
          { job: job.id, team: job.team, from: job.runner, runs: started.runs },
          job.runner === runner
            ? "report job taken over from this replica's own earlier run: its lease ran out before that run's end could be stored (Redis refused it or could not be reached); run again here: a copy of its report this replica still holds answers it, else its platform call is made again"
            : "report job taken over: its runner's lease ran out (that replica was killed or cut off from Redis); run again here, its platform call made again",
        )
      }
      this.#run(started)
    }
    return due.some((job) => !this.#running.has(job.id))
  }

  #run(job: Job): void {
    const { clock, settings, log } = this.#d
    const run: Run = { runner: this.#d.runner, runs: job.runs }
    this.#running.set(job.id, job.team)
    this.#lastStarts.set(job.team, ++this.#starts)
    this.#d.onRun?.('started')
    // The lease's end as this run last stored it, on this replica's clock: past it another
    // replica may take the job over and make its call, so the run lets go of its read's fill
    // (a hang-up): a call not yet sent is then not sent, unless a caller here waits for it.
    const lapsed = new AbortController()
    let leaseUntil = job.leaseUntil
    let lapse = clock.setTimeout(() => lapsed.abort(), leaseUntil - clock.now())
    const renewed = (until: number) => {
      leaseUntil = until
      clock.clearTimeout(lapse)
      lapse = clock.setTimeout(() => lapsed.abort(), until - clock.now())
    }
    const renewal = clock.setInterval(
      () =>
        void this.#renew(job.id, run)
          .then((leaseUntil) => {
            // A renewal landing after the lapse undoes nothing: the fill was let go of.
            if (leaseUntil !== null && !lapsed.signal.aborted) renewed(leaseUntil)
          })
          .catch((err: unknown) => log.warn({ err, job: job.id }, 'renewing a report job\'s lease failed')),
      Math.max(1, Math.floor(settings.leaseMs / 3)),
    )
    this.#execute(job, lapsed.signal)
      .then((end) => {
        // No renewal starts once the read ended; one under way is met by the end's retry.
        clock.clearInterval(renewal)
        clock.clearTimeout(lapse)
        return this.#endWithin(job, run, end, leaseUntil)
      })
      // Which replica takes the job over is not known here: any whose look for jobs comes
      // first once the lease has run out, this one too (its own takeover line says so).
      .catch((err: unknown) =>
        log.warn({ err, job: job.id, team: job.team, leaseUntil: new Date(leaseUntil).toISOString() }, 'ending a report job failed: it is run again once its lease runs out, by the replica that takes it over (this one or another)'),
      )
      .finally(() => {
        clock.clearInterval(renewal)
        clock.clearTimeout(lapse)
        this.#running.delete(job.id)
        this.poke()
      })
  }

  /** The lease's new end, or null when it was not renewed (the job is no longer this run's, or another change came between). */
  async #renew(id: string, run: Run): Promise<number | null> {
    const { store, clock, settings } = this.#d
    const current = await store.get(id)
    const now = clock.now()
    const renewed = current && renewJob(current, run, now, settings.leaseMs)
    return renewed && (await store.swap(current, renewed, now)) ? renewed.leaseUntil : null
  }

  /** The job's read, and how it ends; `lapsed`: its lease ran out unrenewed, and the read lets go of its fill. */
  async #execute(job: Job, lapsed: AbortSignal): Promise<RunEnd> {
    const { reads, clock, settings, log } = this.#d
    const tally = teamTally(job.team)
    // The platform-seconds of the call its result came from (its own, one it joined, here or
    // on another replica), to the ms; 0 for a copy the cache had: as `platform-usage: fill`.
    const took = (result: CacheResult): number => Math.round(fillMsOf(result)) / 1000
    // Its runs lost past jobs.retries (each taken over counts a try: startJob; a try's 5xx
    // past them fails it as it ends, so only a takeover gets here): a copy answers it, or a
    // fill under way (a run lost after its fill stored the report), as a spent day's job is
    // answered; else it fails, no call made again.
    const lost = (job.retries ?? 0) > settings.retries
    // A suspended team's job starts no try, as every request of the team is refused: it
    // fails 403 GW_TEAM_SUSPENDED, saying until when, and its push is refused while the
    // suspension lasts (webhook-deliveries.ts). The suspension is for a secret the team
    // sent: nothing of its jobs is done for it meanwhile, and a job left waiting would
    // run once it is lifted, days on, with no one asking.
    const suspendedSec = this.#d.suspendedFor?.(job.team) ?? null
    if (suspendedSec !== null) {
      const e = Object.assign(new TeamSuspendedError(job.team, suspendedSec), { retryAfterSec: suspendedSec })
      return { kind: 'failed', error: { code: 'GW_TEAM_SUSPENDED', statusCode: 403, message: this.#told(e) }, tookSeconds: 0 }
    }
    // The team's scope is checked as the job runs, as a read of the report is: a job asked
    // before a reload took its advertiser away makes no platform call for it.
    const refusal = this.#d.refusal?.(job) ?? null
    if (refusal !== null) return { kind: 'failed', error: { code: 'GW_FORBIDDEN', statusCode: 403, message: refusal }, tookSeconds: 0 }
    try {
      // The team's day is checked as the job runs, not only when it was asked: past its bound
      // a copy (however old, to its stale-if-error end) or a fill under way answers it, no call.
      const spentFor = this.#d.spentFor
      const bound = lost ? { spentFor: () => 1 } : spentFor ? { spentFor: () => spentFor(job.team, clock.now()) } : {}
      const result = await reads.read(job.report, job.key, this.#d.provider(job.credential), { refresh: false, tally, requestId: ownRequestId('job', job.id), team: job.team, log, priority: job.priority, hangUp: lapsed, ...bound })
      const foreign = result.account === undefined ? null : (this.#d.foreign?.(job, result.account) ?? null)
      if (foreign !== null) {
        if (result.kind === 'stream') result.stream.destroy()
        return { kind: 'failed', error: { code: 'GW_FORBIDDEN', statusCode: 403, message: foreign }, tookSeconds: took(result) }
      }
      switch (result.kind) {
        case 'entry':
          return { kind: 'done', entry: result.entry, tookSeconds: took(result) }
        case 'pass':
          // The platform's 429: the job waits and tries again, as no caller waits for it.
          if (result.status === 429) return { kind: 'requeue', notBefore: clock.now() + settings.retryMs }
          return await passedEnd(result, job.report, clock.now(), took(result))
        case 'stream':
          result.stream.destroy()
          return { kind: 'failed', error: { code: 'GW_JOB_RESULT_TOO_LARGE', statusCode: 413, message: `the report is larger than cache.maxEntryBytes (${this.#d.maxEntryBytes} bytes): ask it without Prefer: respond-async` }, tookSeconds: took(result) }
      }
    } catch (err) {
      const e = err as Error & { code?: string; statusCode?: number }
      if (lost && e.code === 'GW_PLATFORM_TIME_SPENT') {
        return { kind: 'failed', error: { ...RUN_LOST, message: `its runs were lost ${job.retries ?? 0} times before they ended (each replica that ran it was killed or cut off from Redis), past jobs.retries (${settings.retries}): ask it again` }, tookSeconds: 0 }
      }
      // No seat in time (background work waits behind callers), or this replica shutting down: the job goes back to the queue.
      if (e.cause instanceof NoIdleSeatError || e instanceof NoIdleSeatError) return { kind: 'requeue', notBefore: clock.now() + settings.retryMs }
      // A shutdown, or its lease ran out and its fill, left by every caller, was not sent: due again now (refused if another replica took it over).
      if (e.code === 'GW_SHUTTING_DOWN' || (lapsed.aborted && e.cause instanceof CallersGoneError)) return { kind: 'requeue', notBefore: clock.now() }
      const wait = (e as { retryAfterSec?: unknown }).retryAfterSec
      // Refused before any seat, as a pause of the platform's (its 429, this job's own or another
      // call's) covers the call: the job waits in the queue until the pause ends, jobs.retry at least.
      if (e.code === 'GW_OVERLOADED') return { kind: 'requeue', notBefore: clock.now() + Math.max(settings.retryMs, typeof wait === 'number' ? wait * 1000 : 0) }
      const gateway = typeof e.code === 'string' && e.code.startsWith('GW_')
      const error = { code: gateway ? (e.code as string) : 'GW_UPSTREAM', statusCode: e.statusCode ?? 502, message: gateway ? this.#told(e) : 'the platform failed' }
      // Its own call failed: what that call held the platform (0 when it made none, e.g. a fill it joined failed).
      const tookSeconds = Math.round(tally.platformMs ?? 0) / 1000
      // No answer or a 5xx, or no room for the answer in platform.bufferTotalBytes: a later try
      // may not meet it (a platform deploy, a restart; readers taking their answers), so the job
      // is tried again after the pauses' backoff (or the retry-after said), jobs.retries times at
      // most. The room's refusal counts as a try, unlike a missing seat: its platform call was
      // made, and its team's slow readers, never cut off for its own answer, may hold the room on.
      // Counted, every such try keeps the outage's time bound (docs/jobs.md).
      const retries = job.retries ?? 0
      if (isTransient(e) && retries < settings.retries) {
        return { kind: 'retry', notBefore: clock.now() + pauseLength(typeof wait === 'number' ? wait * 1000 : null, retries, settings.maxPauseMs), error, tookSeconds }
      }
      return { kind: 'failed', error: typeof wait === 'number' ? { ...error, retryAt: clock.now() + wait * 1000 } : error, tookSeconds }
    }
  }

  /**
   * A gateway error's message as a job keeps it: a wait it names (`retryAfterSec`) as the
   * instant it ends, read later, to the second (a reset at midnight reads `T00:00:00.000Z`).
   */
  #told(e: Error & { retryAfterSec?: number }): string {
    if (typeof e.retryAfterSec !== 'number') return e.message
    const at = Math.floor((this.#d.clock.now() + e.retryAfterSec * 1000) / 1000) * 1000
    return `${e.message} (try again at ${new Date(at).toISOString()})`
  }

  /**
   * Stores the run's end, tried again every `pollMs` while its lease (ending `leaseUntil`)
   * still holds: no other replica may take the job before then, so a store that failed
   * for a moment (Redis restarted, its connection cut and made again) costs no second run
   * and no second platform call of the report. Past the lease the failure is thrown: the
   * job is then another replica's to take over.
   */
  async #endWithin(job: Job, run: Run, end: RunEnd, leaseUntil: number): Promise<void> {
    const { clock, settings, log } = this.#d
    for (;;) {
      try {
        // An end that keeps a result checks its team's bound against what the team holds, then
        // swaps itself in, refused if another result of the team was kept between (its mark):
        // ends of a team on this replica go one after another, so that those at once
        // (identical jobs joined one platform call) do not refuse each other's swaps.
        const keeps = end.kind !== 'requeue' && end.kind !== 'retry' && end.entry !== undefined
        const outcome = await (keeps ? this.#inTurn(job.team, () => this.#ended(job, run, end)) : this.#ended(job, run, end))
        this.#d.onRun?.(outcome)
        return
      } catch (err) {
        if (clock.now() + settings.pollMs >= leaseUntil) throw err
        log.warn({ err, job: job.id, team: job.team, leaseUntil: new Date(leaseUntil).toISOString() }, "storing a report job's end failed: tried again while its lease holds")
        await new Promise<void>((resolve) => clock.setTimeout(resolve, settings.pollMs))
      }
    }
  }

  /** `fn` once the team's ends before it that keep a result (#keeping) have settled. */
  #inTurn<T>(team: string, fn: () => Promise<T>): Promise<T> {
    const mine = (this.#keeping.get(team) ?? Promise.resolve()).then(fn)
    const settled = mine.catch(() => undefined)
    this.#keeping.set(team, settled)
    void settled.then(() => {
      if (this.#keeping.get(team) === settled) this.#keeping.delete(team)
    })
    return mine
  }

  /**
   * Stores how the run ended; `lost` when the job is no longer this run's. A swap refused
   * while the job is still this run's (a lease renewal landed between the read and the
   * swap) is tried again on the job as it is now: an end is never lost to its own renewal.
   * A job whose record is gone is no other runner's: its store lost it (a Redis emptied
   * under it), which the count of `lost` alone would blame on a late renewal.
   */
  async #ended(job: Job, run: Run, end: RunEnd): Promise<RunOutcome> {
    const { store, clock, settings, log } = this.#d
    const id = job.id
    for (;;) {
      const current = await store.get(id)
      if (current === null) {
        log.warn({ job: id, team: job.team }, 'report job gone from Redis while it ran (Redis emptied, restarted without its data, or evicting keys without an expiry): its result is dropped; the team asks again')
        return 'lost'
      }
      if (!isRun(current, run)) return 'lost'
      const now = clock.now()
      if (end.kind === 'requeue' || end.kind === 'retry') {
        const next = (end.kind === 'retry' ? retryJob(current, run, end.notBefore, end.error, end.tookSeconds) : requeueJob(current, run, end.notBefore)) as Job
        if (!(await store.swap(current, next, now))) continue
        if (end.kind === 'retry') {
          const line = end.error.code === 'GW_ANSWER_BUDGET' ? "report job's answer found no room in platform.bufferTotalBytes: tried again later" : 'report job got no answer or a 5xx from the platform: tried again later'
          log.warn({ job: id, team: job.team, code: end.error.code, error: end.error.message, tries: next.retries, nextTryAt: new Date(end.notBefore).toISOString() }, line)
        }
        // Due again at its retry time: looked for then, not a lease later; due now (a
        // shutdown), by the other replicas at once.
        if (end.notBefore > now) this.#pokeAt(end.notBefore)
        else this.#d.announce?.()
        return 'requeued'
      }
      let result = outcomeOf(end)
      // What it keeps beside the job (a report, or the body of the platform's answer it ended
      // with) counts against its team's bound, read again at each try: the swap keeps it only
      // while no other result of the team was kept since that read (its mark).
      let mark: string | null = null
      if (end.entry) {
        const bytes = end.entry.gzip.length
        const { bytes: held, mark: read } = await store.heldResults(current.team, now)
        mark = read
        const bound = this.#d.bound?.() ?? { bytes: settings.resultBytesPerTeam, room: null }
        if (held + bytes > bound.bytes) {
          const grows = roomGrowsWith(bound)
          const more = grows === null ? '' : ` (${grows})`
          const message = `the team's job results would take ${held + bytes} bytes, more than ${boundText(bound)}: a result is kept until its job's expiresAt (jobs.keep after it ended), whether it was read or not; ask again once results have expired${more}`
          result = { kind: 'failed', error: { code: 'GW_JOB_RESULT_TOO_LARGE', statusCode: 413, message }, tookSeconds: end.tookSeconds }
          end = result
        }
      }
      const next = endJob(current, run, now, result, settings.keepMs) as Job
      // The result is kept in the end's own swap: stored only while the job is still this run's.
      if (!(await store.swap(current, next, now, this.#d.pushOf?.(next, now) ?? null, end.entry ?? null, mark))) continue
      this.#d.onEnded?.(next)
      return result.kind
    }
  }
}

/** What a run's end stores in its job. */
function outcomeOf(end: Exclude<RunEnd, { kind: 'requeue' | 'retry' }>): Outcome {
  switch (end.kind) {
    case 'failed':
      return { kind: 'failed', error: end.error, tookSeconds: end.tookSeconds, ...(end.entry ? { resultBytes: end.entry.gzip.length, fetchedAt: end.entry.fetchedAt } : {}) }
    case 'answered':
      return { kind: 'done', resultBytes: end.entry.gzip.length, tookSeconds: end.tookSeconds, fetchedAt: end.entry.fetchedAt, platformAnswer: end.answer }
    case 'done':
      return { kind: 'done', resultBytes: end.entry.gzip.length, tookSeconds: end.tookSeconds, fetchedAt: end.entry.fetchedAt }
  }
}

/**
 * How a job ends whose read the platform answered with an answer passed on uncached (a
 * 2xx or 3xx but a storable 200, a 4xx but 429: report-fetcher.ts), kept to be answered
 * as the job's result as a synchronous read answers it: the same status, headers and
 * bytes, which the read's checks (platform-client.ts: the token carried back;
 * report-fetcher.ts: a body within cache.maxEntryBytes, as a report's) passed. A 2xx or
 * 3xx is what the read answers the report with (a 200 the platform said not to store,
 * `no-store`; a 201, a 204, a 302...): the job is done. Its own refusal (a 4xx; its 429
 * requeues the job) fails the job GW_PLATFORM_ANSWER with it. Either way its status and
 * headers go in the job's record and its body beside it, as a report result (`entry`,
 * never in the report cache), counted in the team's jobs.resultBytesPerTeam.
 */
async function passedEnd(pass: { status: number; headers: Record<string, string>; body: Buffer; forward?: Forward }, report: CanonicalReport, now: number, tookSeconds: number): Promise<RunEnd> {
  const { status, body } = pass
  const answer = { status, headers: pass.headers, ...(pass.forward ? { forward: pass.forward } : {}) }
  const entry: CacheEntry = { contentType: pass.headers['content-type'] ?? 'application/json', gzip: await compress(body), identity: body, fetchedAt: now, freshUntil: now, staleUntil: now, errorUntil: now, advertiserIds: report.advertiserIds, etag: etagOf(body) }
  if (status < 400) return { kind: 'answered', answer, entry, tookSeconds }
  const message = `the platform refused the report with ${status}: the job's result is its answer, as a read of the report answers it`
  return { kind: 'failed', error: { code: PLATFORM_ANSWER, statusCode: status, message, platformAnswer: answer }, tookSeconds, entry }
}
