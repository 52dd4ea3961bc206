import type { components } from './schema.js'
import { GatewayError } from './errors.js'
import type { PlatformUsage } from './usage.js'
import { pause } from './pause.js'
import { timeoutOption } from './options.js'

// Report jobs (the gateway's docs/jobs.md): a report asked with `prefer: respond-async`,
// answered 202 with where its job is, read and waited for with the server's `?wait`,
// fetched as a report, cancelled while queued.

/** What `GET /api/v1/jobs/{id}` answers. */
export type JobStatus = components['schemas']['JobStatus']
export type JobState = JobStatus['state']

/** The longest the gateway holds a status call (`?wait`), in seconds. */
export const MAX_WAIT_SECONDS = 30

/** Refusals of a status call that say nothing of its job: result() asks again after their retry-after. */
const WAITED_OUT: ReadonlySet<string> = new Set(['GW_WAITS_FULL', 'GW_JOBS_UNAVAILABLE'])

export interface JobCallOptions {
  /** Ends the call (a wait included): it rejects with the signal's reason. */
  signal?: AbortSignal
}

export interface JobResultOptions extends JobCallOptions {
  /** Gives up waiting for the job after this many ms, as CLIENT_TIMEOUT (default: waits as long as the job takes). */
  timeoutMs?: number
}

/**
 * A report asked as a job. `id` is null when the gateway answered the report at once (a
 * copy answered it now): `result()` gives that answer, and there is no job to read or cancel.
 */
export interface ReportJob<A> {
  readonly id: string | null
  /** The status the gateway last gave (the 202's at first); null when answered at once. */
  readonly last: JobStatus | null
  /**
   * What the team had spent when it asked (`platform-usage`): the 202's, `fill` 0 (its call is
   * still to come: `result()`'s usage says what it held); the answer's own when answered at
   * once; null from a gateway that does not say.
   */
  readonly usage: PlatformUsage | null
  /** Its status now; `wait` (seconds, at most 30): once its state changed, or that long passed. A report answered at once (`id` null) has none: CLIENT_REFUSED, nothing sent. */
  status(options?: JobCallOptions & { wait?: number }): Promise<JobStatus>
  /**
   * Its report once done, waiting for it with the server's `wait` (a wait refused
   * GW_WAITS_FULL, the team's waits on the replica all held, or GW_JOBS_UNAVAILABLE, Redis
   * a moment out of reach, is asked again after its retry-after, until `timeoutMs`); a failed job throws the
   * GatewayError its result answers, as a synchronous read's failure (its GW_* code, status
   * and retry-after; one the platform refused, PLATFORM_ANSWER with the platform's status
   * and body), an expired one GW_JOB_EXPIRED (410).
   */
  result(options?: JobResultOptions): Promise<A>
  /** Cancels it while queued (GW_JOB_RUNNING once running); nothing when answered at once. */
  cancel(options?: JobCallOptions): Promise<void>
}

/** What a job needs of the client: its calls, sent with the key, the timeout and the retries of reads. */
export interface JobCalls<A> {
  /** `GET` of a job path; `timeoutMs` past the client's own for a held status call. */
  get(path: string, options: JobCallOptions & { extraMs?: number }): Promise<Response>
  delete(path: string, options: JobCallOptions): Promise<Response>
  /** The JSON body of an answer, thrown as GatewayError when it is not a success. */
  json(response: Response): Promise<unknown>
  /**
   * The report at a path, as the client's report reads answer it; `once`: read without
   * retries (an ended job's failure is final: a retry-after it names is for asking the
   * report again, not for reading it).
   */
  report(path: string, options: JobCallOptions, once?: boolean): Promise<A>
}

/** The job of a report asked with `prefer: respond-async`, from the gateway's answer to it: a 202, or the report now (`answered`), and that answer's `usage`. */
export function reportJob<A>(calls: JobCalls<A>, accepted: JobStatus | null, answered: A | null, usage: PlatformUsage | null): ReportJob<A> {
  let last = accepted
  const path = accepted === null ? null : `/api/v1/jobs/${encodeURIComponent(accepted.id)}`
  const status = async (options: JobCallOptions & { wait?: number } = {}): Promise<JobStatus> => {
    if (path === null) throw new GatewayError('CLIENT_REFUSED', 'not sent: the report was answered at once, there is no job')
    const wait = Math.max(0, Math.min(MAX_WAIT_SECONDS, Math.floor(options.wait ?? 0)))
    const response = await calls.get(wait > 0 ? `${path}?wait=${wait}` : path, { ...options, extraMs: wait * 1000 })
    last = (await calls.json(response)) as JobStatus
    return last
  }
  // The job once it ended, waited for with the server's `wait` (whole seconds): at
  // `timeoutMs` a status call still held is ended, so that the wait ends then, not at the
  // end of the second the gateway was asked to hold. A wait refused because the team's
  // waits on the replica are all held (GW_WAITS_FULL: its other jobs' result() among them),
  // or Redis is a moment out of reach (GW_JOBS_UNAVAILABLE), says nothing of this job: it
  // is asked again after the refusal's retry-after.
  const ended = async (options: JobResultOptions): Promise<JobStatus> => {
    const { timeoutMs, signal: own } = options
    if (timeoutMs !== undefined) timeoutOption(timeoutMs)
    const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs
    const timedOut = () => new GatewayError('CLIENT_TIMEOUT', `job ${accepted?.id ?? ''}: not ended after ${timeoutMs} ms (last seen ${last?.state ?? 'open'})`)
    const giveUp = new AbortController()
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => giveUp.abort(timedOut()), timeoutMs)
    const signal = own ? AbortSignal.any([own, giveUp.signal]) : giveUp.signal
    try {
      let seen = last ?? (await status({ signal }))
      while (seen.state === 'queued' || seen.state === 'running') {
        const left = deadline - Date.now()
        if (left <= 0) throw timedOut()
        try {
          seen = await status({ signal, wait: Math.min(MAX_WAIT_SECONDS, Math.ceil(left / 1000)) })
        } catch (err) {
          if (!(err instanceof GatewayError) || !WAITED_OUT.has(err.code)) throw err
          await pause(Math.min(left, (err.retryAfterSeconds ?? 1) * 1000), signal)
        }
      }
      return seen
    } finally {
      clearTimeout(timer)
    }
  }
  return {
    id: accepted?.id ?? null,
    usage,
    get last() {
      return last
    },
    status,
    async result(options: JobResultOptions = {}): Promise<A> {
      if (path === null) return answered as A
      const seen = await ended(options)
      // A failed or expired job's result is its failure as the gateway answers it (status,
      // code, retry-after, request id; the platform's own refusal as PLATFORM_ANSWER), thrown
      // as a synchronous read's failure is.
      return calls.report(`${path}/result`, options, seen.state !== 'done')
    },
    async cancel(options: JobCallOptions = {}): Promise<void> {
      if (path === null) return
      const response = await calls.delete(path, options)
      if (response.status !== 204) await calls.json(response)
    },
  }
}
