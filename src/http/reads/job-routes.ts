import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Admission, Caller } from '../../access/admission.js'
import type { Clock } from '../../clock.js'
import { BadRequestError, ForbiddenError, JobNotFoundError, JobPathError } from '../../errors.js'
import type { ReportCache } from '../../reports/report-cache.js'
import { MAX_WAIT_SECONDS, type JobAsk, type Jobs } from '../../jobs/jobs.js'
import { accountRefusal, figuresAt } from '../../jobs/job.js'
import { jobCancelSchema, jobResultSchema, jobStatusSchema } from '../openapi/job-schemas.js'
import { NOT_STORED, sendReport, VARY } from './report-reply.js'
import { USAGE_HEADER, type ReportAnswerFacts } from './report-facts.js'
import type { CacheEntry } from '../../cache/cache-entry.js'
import { FORWARDED_METHODS } from '../methods.js'
import type { Pair } from '../../access/request-target.js'
import { notTaken } from '../hooks/validation-message.js'
import { hangUpSignal } from '../../platform/client/caller-group.js'
import { carries } from '../connection-teams.js'
import { assertReadsThrough } from '../../access/scope.js'
import { isSafeApiPath } from '../../access/path-safety.js'

/** What the job routes read: the jobs, the admission of callers, the clock, what a report answer says of its cost and finality, a report's cache key now. */
export interface JobRouteParts {
  jobs: Jobs
  reports: Pick<ReportCache, 'isKeyOf'>
  admission: Admission
  clock: Clock
  facts: ReportAnswerFacts
}

/**
 * The answer to a report read that preferred `respond-async` and found no copy to answer now:
 * 202 and where its job is, with the team's `platform-usage` as its asking left it (`usage`:
 * `fill=0`, the job's call still to come; no finality headers, it holds no figures).
 */
export async function acceptJob(reply: FastifyReply, jobs: Jobs, ask: JobAsk, usage: () => string): Promise<FastifyReply> {
  const status = await jobs.ask(ask)
  return reply.code(202).header('location', `/api/v1/jobs/${status.id}`).header('preference-applied', 'respond-async').header('cache-control', NOT_STORED).header('vary', VARY).header(USAGE_HEADER, usage()).send(status)
}

/**
 * The jobs of report reads asked with `Prefer: respond-async` (contract, "Report jobs"):
 * their status (waiting up to `?wait=N` seconds for a change), their result as the report
 * answer it is (the same writer as every report answer: its ETag, Cache-Status, 304), and
 * their cancel while queued. The caller is admitted by its key and counted against its
 * team's rate limit, as any call; a job of another team is 404.
 */
/**
 * The caller of a job path, admitted by its key and counted against its team's rate limit,
 * as any call. A path a decoding router or proxy could read elsewhere (an encoded `.`, `/`,
 * `\\`, `%` or NUL, a dot segment, `//`: path-safety.ts), which the routes reach with a
 * decoded `{id}` (`..%2F..%2Fadmin`) or through the catch-all, is no job path: after the
 * key, it is told the job calls (`jobsOn`) or that there are none, as every other path
 * under /api/v1/jobs no job route serves is, not the bare `not found` of the target's check.
 */
function admitter(admission: Admission, jobsOn: boolean): (request: FastifyRequest, reply: FastifyReply) => Caller {
  return (request, reply) => {
    const identity = admission.identify(request.headers)
    if (!isSafeApiPath(request.url)) {
      admission.vet(identity, request.headers, request.url)
      throw noJobPath(request.method, jobsOn)
    }
    const caller = admission.caller(identity, admission.target(request.url))
    request.caller = caller
    carries(reply.raw, caller.team.name)
    admission.vet(identity, request.headers, request.url)
    caller.rate = admission.limit(caller.team)
    return caller
  }
}

export async function jobRoutes(app: FastifyInstance, { jobs, reports, admission, clock, facts }: JobRouteParts): Promise<void> {
  const admit = admitter(admission, true)
  // An id this gateway could have made, else none (404) without a Redis read; no id at all
  // (`/api/v1/jobs/`, which the router gives the status route) is no job path.
  const own = (request: FastifyRequest): string => {
    const { id } = request.params as { id: string }
    if (id === '') throw noJobPath(request.method, true)
    if (!JOB_ID.test(id)) throw new JobNotFoundError()
    return id
  }

  app.get('/api/v1/jobs/:id', { schema: jobStatusSchema() }, async (request, reply) => {
    const caller = admit(request, reply)
    // Its key removed while it waits (?wait): the wait ends at the next look, and the call is refused as a new call with it is.
    const runs = (): boolean => admission.stillAdmits(caller)
    const status = await jobs.status(own(request), caller.team.name, waitOf(takenParams(caller.target.params, ['wait'])) * 1000, hangUpSignal(reply.raw), runs)
    // A caller that hung up while it waited has its access line (499) already: nothing to write.
    if (reply.raw.destroyed) return reply
    admission.stillAdmitted(caller)
    // The team's, and changing as the job runs.
    return reply.header('cache-control', NOT_STORED).header('vary', STATUS_VARY).send(status)
  })

  // A failed job's result is its failure as the read would have answered it, with what its own calls cost (report-facts.ts).
  const onError = (request: FastifyRequest, reply: FastifyReply, error: Error & { statusCode?: number; code?: string; platformMs?: number }, done: () => void): void => {
    const usage = request.caller && error.platformMs !== undefined ? facts.failureUsage(request.caller.team, error, error.platformMs, clock.now()) : null
    if (usage !== null) reply.header(USAGE_HEADER, usage)
    done()
  }

  app.get('/api/v1/jobs/:id/result', { schema: jobResultSchema(), onError }, async (request, reply) => {
    const caller = admit(request, reply)
    takenParams(caller.target.params, [])
    const got = await jobs.result(own(request), caller.team.name)
    const { job } = got
    // The key and the team's scope as they are now, as a read of the report is checked: a reload may have taken its advertiser away, or moved the team to another credential.
    admission.stillAdmitted(caller, job.report.advertiserIds)
    assertReadsThrough(caller.team, job.credential)
    const moved = accountRefusal(job, (key, credential, report) => reports.isKeyOf(key, credential, report))
    if (moved !== null) throw new ForbiddenError(moved)
    const now = clock.now()
    // Its fill is the job's own call: what that took, as the answer to the read it stands for
    // would have said; its finality, that of its figures' fetch, as its status says it.
    const cost = (copy: CacheEntry | null) => facts.of(caller.team, job.report, copy, (job.tookSeconds ?? 0) * 1000, now, figuresAt(job, now))
    const fields = () => ({ reqId: request.id, rate: admission.rateFields(caller) })
    if ('answer' in got) {
      // The platform's answer it kept (its refusal; its no-store 200, another 2xx, a 3xx), written as a read passes it on (BYPASS).
      const { status, headers, forward } = got.answer
      return sendReport(reply, { kind: 'pass', status, headers, body: got.body, ...(forward ? { forward } : {}) }, request.headers, now, fields, cost)
    }
    // Its copy is gone at the job's expiresAt (410 from then): no cache downstream keeps it longer.
    const { entry } = got
    return sendReport(reply, { kind: 'entry', entry, status: now < entry.freshUntil ? 'HIT' : 'STALE', ...(job.expiresAt === null ? {} : { until: job.expiresAt }) }, request.headers, now, fields, cost)
  })

  app.delete('/api/v1/jobs/:id', { schema: jobCancelSchema() }, async (request, reply) => {
    const caller = admit(request, reply)
    takenParams(caller.target.params, [])
    await jobs.cancel(own(request), caller.team.name)
    return reply.code(204).send()
  })
}

/**
 * Every path under /api/v1/jobs/, and /api/v1/jobs itself, is the gateway's, in every method, with jobs on or off
 * (the cache off): what the job routes do not serve is 404 after the key, as an unknown
 * job is, and never forwarded to the platform (the job routes, more specific, win over
 * this one). OPTIONS of a job path names the methods it serves (methods.ts).
 */
export async function jobPaths(app: FastifyInstance, { admission, jobsOn }: Pick<JobRouteParts, 'admission'> & { jobsOn: boolean }): Promise<void> {
  const admit = admitter(admission, jobsOn)
  const none = (request: FastifyRequest, reply: FastifyReply): never => {
    admit(request, reply)
    throw noJobPath(request.method, jobsOn)
  }
  // The bare /api/v1/jobs too: a slash less would otherwise send the call to the platform.
  for (const url of ['/api/v1/jobs', '/api/v1/jobs/*']) app.route({ method: FORWARDED_METHODS, url, schema: { hide: true }, handler: none })
}

/** What a call of `method` under /api/v1/jobs that no job route serves is told: the method alone of what was sent (a token: Node refuses any other), never the path, which the caller wrote. */
function noJobPath(method: string, jobsOn: boolean): Error {
  return new JobPathError(jobsOn ? `${method} ${JOB_CALLS}` : NO_JOBS)
}

/** What a call under /api/v1/jobs that no job route serves is told, after its method. */
const JOB_CALLS = "is no job call at this path: a job's status is GET (or HEAD) /api/v1/jobs/{id}, its report GET /api/v1/jobs/{id}/result, its cancel while queued DELETE /api/v1/jobs/{id}; a job is asked by a report read with prefer: respond-async; nothing under /api/v1/jobs goes to the platform"

/** What every call under /api/v1/jobs is told with the cache off (api.ts registers no job route then). */
const NO_JOBS = 'no report jobs on this gateway: they are kept beside the report cache, which is off (cache.enabled: false); a report read with prefer: respond-async is proxied as any call, no job made'

/** What a job's status varies on: the headers that carry a key (its path is the job's). */
const STATUS_VARY = 'authorization, x-api-key'

/** The ids jobs.ts makes, and the route's documented pattern. */
const JOB_ID = /^[A-Za-z0-9_-]{1,64}$/

/**
 * A job call's parameters, each by name, once every one is one the call takes (400 naming
 * the first that is not, as an admin call's): `wait[]=1` or `Wait=1` is no `wait`, and a
 * status answered at once in its place would tell the caller nothing of its mistake.
 */
function takenParams(params: readonly Pair[], takes: readonly string[]): Map<string, string[]> {
  const byName = new Map<string, string[]>()
  for (const [name, value] of params) {
    if (!takes.includes(name)) throw new BadRequestError(notTaken(name, takes))
    byName.set(name, [...(byName.get(name) ?? []), value])
  }
  return byName
}

/** `?wait=N`: whole seconds, 0 to MAX_WAIT_SECONDS (400 otherwise). */
function waitOf(params: Map<string, string[]>): number {
  const wait = params.get('wait')
  if (wait === undefined) return 0
  if (wait.length > 1) throw new BadRequestError('wait: given more than once')
  const [value] = wait as [string]
  if (!/^\d{1,2}$/.test(value) || Number(value) > MAX_WAIT_SECONDS) throw new BadRequestError(`wait: whole seconds from 0 to ${MAX_WAIT_SECONDS}`)
  return Number(value)
}
