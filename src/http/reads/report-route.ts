import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { GatewayContext } from '../context.js'
import { BadQueryError, JobsUnavailableError } from '../../errors.js'
import type { Admission, Caller } from '../../access/admission.js'
import { reportGetSchema, reportPostSchema } from '../openapi/route-schemas.js'
import { canonicalPostReport, type CanonicalReport } from '../../reports/report-query.js'
import type { ReadDecisions } from '../../reports/read-decision.js'
import { isWarmUp, sendReport } from './report-reply.js'
import { forcesRefresh } from '../../reports/forced-refresh.js'
import { hangUpOf } from '../../platform/client/caller-group.js'
import { takeHandedOver, type HandedOver } from './handed-over.js'
import type { CacheResult, CallTally, ReadOptions } from '../../reports/report-cache.js'
import { traceOf, type Trace } from '../../observe/tracing.js'
import { L1_HIT } from './step-attributes.js'
import type { Lookup } from '../../reports/report-cache.js'
import { prefersAsync } from './prefer.js'
import type { FailureLog } from '../../observe/failure-log.js'
import { acceptJob } from './job-routes.js'
import { fitsJobRecord } from '../../jobs/jobs.js'
import { ANY_ADVERTISER, type CacheEntry } from '../../cache/cache-entry.js'
import { USAGE_HEADER, type ReportAnswerFacts, type ReportDays } from './report-facts.js'
import { carries } from '../connection-teams.js'
import { newRequestId } from '../../observe/request-id.js'
import { answering } from '../hooks/answer-hooks.js'

/** What the report routes read: the configuration, the report cache, the clock and traces, the admission of callers, the one decision of report reads and what an answer says of its cost and finality. */
export type ReportReadParts = Pick<GatewayContext, 'config' | 'reports' | 'jobs' | 'clock' | 'tracing'> & { admission: Admission; decisions: ReadDecisions; failures: Pick<FailureLog, 'warn'>; facts: ReportAnswerFacts }

/**
 * Report reads (contract, "Report requests"), each top to bottom: admit the caller (key,
 * rate limit), canonicalize (400), check its scope (403), read the cache, send. A GET is
 * decided by the one decision of report reads (reports/read-decision.ts), as the
 * entrance before the router decides it, which hands over what it learned.
 */
export async function reportReads(app: FastifyInstance, { config, reports, jobs, clock, tracing, admission, decisions, failures, facts }: ReportReadParts): Promise<void> {
  if (!config.cache.enabled) return
  // An answer's cost and finality, for the caller's team and the report's days.
  const factsFor = (caller: Caller, days: ReportDays, now: number) => (entry: CacheEntry | null, fillMs: number) => facts.of(caller.team, days, entry, fillMs, now)
  // A read's answer after its wait (a copy in Redis, a fill, the platform): to a key still running, within its team's scope as it is now.
  const answerRead = (request: FastifyRequest, reply: FastifyReply, caller: Caller, report: CanonicalReport, result: CacheResult) => {
    try {
      admission.stillAdmitted(caller, report.advertiserIds)
    } catch (refused) {
      // A report past the cache's bound is held for its caller alone: its bytes go back to the answers' budget.
      if (result.kind === 'stream') result.stream.destroy()
      throw refused
    }
    const at = clock.now()
    return sendReport(reply, result, request.headers, at, () => ({ reqId: request.id, rate: admission.rateFields(caller) }), factsFor(caller, report, at))
  }
  const readOptions = (request: FastifyRequest, reply: FastifyReply, caller: Caller, report: CanonicalReport, refresh: boolean, trace: Trace | undefined, handed?: Pick<HandedOver, 'flight' | 'found'>): ReadOptions => ({
    ...optionsOf(request, reply, caller, refresh, trace, handed),
    spentFor: () => facts.spentFor(caller.team, clock.now()),
    // A fill no caller may still be answered by is not sent.
    admitted: () => admission.stillAdmitted(caller, report.advertiserIds),
  })

  /**
   * A read that prefers `respond-async` (and forces no refresh): the copy that answers it
   * now (fresh, or stale within its stale-while-revalidate, as `read` answers at once), to
   * read; else its job is asked and answered 202 (null). A job that cannot be kept (Redis
   * cannot be reached) leaves the read to go on as if it preferred nothing.
   */
  const copyOrJob = async (reply: FastifyReply, caller: Caller, report: CanonicalReport, key: string, found?: Lookup | null): Promise<{ found: Lookup | null } | null> => {
    const looked = found !== undefined ? found : await reports.lookup(key, caller.team.name)
    const copy = looked !== null && !reports.purgedFor(looked.entry, report, key) ? looked : null
    if (copy !== null && clock.now() < copy.entry.staleUntil) return { found: copy }
    // A job makes a platform call: none for a team that spent its day's. Its read is then
    // answered as a read without the preference is: from the cache only (a copy past its
    // stale-while-revalidate STALE, to its stale-if-error end), a fill under way joined,
    // else 429 GW_PLATFORM_TIME_SPENT, as a miss is.
    if (facts.spentFor(caller.team, clock.now()) > 0) return { found: copy }
    // A preference (RFC 7240) may go unheeded: a report too large for a job's record is read now.
    if (!fitsJobRecord(report)) return { found: copy }
    try {
      await acceptJob(reply, jobs, { team: caller.team.name, credential: caller.provider.name, report, key, warm: isWarmUp(reply.request.headers) }, () => facts.usage(caller.team, 0, clock.now()))
      return null
    } catch (err) {
      // A preference (RFC 7240) may go unheeded: without Redis to keep the job, the read is answered now.
      if (!(err instanceof JobsUnavailableError)) throw err
      failures.warn(err.code, { log: reply.log, msg: 'a report job could not be kept: the read is answered now', err }, 'read answered now')
      return { found: copy }
    }
  }

  // What a failed read cost (report-facts.ts): its own calls' platform-seconds as `fill`.
  const onError = (request: FastifyRequest, reply: FastifyReply, error: Error & { statusCode?: number; code?: string }, done: () => void): void => {
    const caller = request.caller
    const usage = caller ? facts.failureUsage(caller.team, error, caller.platformMs ?? 0, clock.now()) : null
    if (usage !== null) reply.header(USAGE_HEADER, usage)
    done()
  }

  const limits = { maxRangeDays: config.cache.maxRangeDays, reportBodyBytes: config.limits.reportBodyBytes }
  const getReport = async (request: FastifyRequest, reply: FastifyReply) => {
    // A caller the fast path handed over (http/reads/fast-path.ts) was counted already.
    const handed = takeHandedOver(request.raw)
    const trace = tracing === null ? undefined : traceOf(request.raw)
    const now = clock.now()
    const decided = decisions.decide(request.method, request.url, request.headers, now, { counted: handed?.rate, into: request }, trace)
    // Set by the decision once the key named it.
    const caller = request.caller as Caller
    if (request.caller !== null) carries(reply.raw, caller.team.name)
    // Refused before the router: that refusal is the answer (the decision above names the caller for its line).
    if (handed?.refused !== undefined) throw handed.refused
    // The calls of the fill it joined before the router that were sent for it are its own (what a failure says it cost).
    if (handed?.charged !== undefined && request.caller !== null) chargeTo(caller, handed.charged)
    if ('answer' in decided) {
      decided.admitting?.end()
      trace?.step('cache.lookup', L1_HIT).end()
      caller.advertisers = decided.form.report.advertiserIds
      return sendReport(reply, { kind: 'entry', entry: decided.answer, status: 'HIT' }, request.headers, now, () => ({ reqId: request.id, rate: admission.rateFields(caller) }), factsFor(caller, decided.form.report, now))
    }
    const { admitted, refused, admitting } = decided.goOn
    // A refusal thrown here leaves the step open: the request's span ends it, failed.
    if (admitted === undefined) throw refused
    const { key } = admitted.form
    if (admitted.scopePending) {
      await admission.checkScope(request.method, caller, admitted.known)
      decisions.remember(request.method, request.url, admitted)
    }
    admitting?.end()
    const report = indexedUnderOwners(admitted.form.report, caller, admission.namedBy(caller.team, request.method, caller, admitted.known)?.campaigns ?? null)
    caller.advertisers = report.advertiserIds
    // A cold fill under way here is joined, as the entrance before the router joins it.
    if (prefersAsync(request.headers.prefer) && !admitted.refresh) {
      const now = await copyOrJob(reply, caller, report, key, handed?.found)
      if (now === null) return reply
      return answerRead(request, reply, caller, report, await reports.read(report, key, caller.provider, readOptions(request, reply, caller, report, false, trace, now)))
    }
    // The fill its decision found, joined unless it was dropped since (then this read fills
    // anew), or the one the entrance before the router joined for it.
    const found = handed?.flight === undefined ? decided.goOn.flight : undefined
    const joined = found !== undefined && reports.joinCold(key, found, caller.team.name, hangUpOf(reply.raw), isWarmUp(request.headers) ? 'warm' : 'caller', () => decisions.stillAdmitted(admitted), caller)
    const flight = handed?.flight ?? (joined ? found : undefined)
    const result = await reports.read(report, key, caller.provider, readOptions(request, reply, caller, report, admitted.refresh, trace, { ...handed, ...(flight ? { flight } : {}) }))
    caller.upstreamMs = result.upstreamMs ?? null
    return answerRead(request, reply, caller, report, result)
  }
  app.get('/api/v1/report/*', { schema: reportGetSchema(limits), onError }, (request, reply) => answering(reply, getReport(request, reply)))

  const postReport = async (request: FastifyRequest, reply: FastifyReply) => {
    const trace = tracing === null ? undefined : traceOf(request.raw)
    const admitting = trace?.step('admission')
    const caller = admission.admit(request)
    carries(reply.raw, caller.team.name)
    // JSON only: a body of another type is refused as such (400 GW_BAD_REQUEST); none, or an empty one, is no JSON object.
    await admission.readBody(request, caller, config.limits.reportBodyBytes, reply.raw, true)
    if (caller.body?.kind !== 'json') throw new BadQueryError('body: must be a JSON object')
    const report = canonicalPostReport(caller.target.path, caller.target.search, caller.body.value, { maxRangeDays: config.cache.maxRangeDays })
    await admission.checkScope(request.method, caller)
    admitting?.end()
    const key = reports.keyFor(caller.provider.name, report)
    const indexed = indexedUnderOwners(report, caller, admission.namedBy(caller.team, request.method, caller)?.campaigns ?? null)
    caller.advertisers = indexed.advertiserIds
    const refresh = forcesRefresh(request.headers, caller.team)
    const now = prefersAsync(request.headers.prefer) && !refresh ? await copyOrJob(reply, caller, indexed, key) : {}
    if (now === null) return reply
    const result = await reports.read(indexed, key, caller.provider, readOptions(request, reply, caller, indexed, refresh, trace, now))
    caller.upstreamMs = result.upstreamMs ?? null
    return answerRead(request, reply, caller, indexed, result)
  }
  const postAnswering = (request: FastifyRequest, reply: FastifyReply) => answering(reply, postReport(request, reply))
  app.post('/api/v1/report/:split/get', { schema: reportPostSchema(limits), onError }, postAnswering)
  // The same report with a trailing slash (canonical-path.ts): one cache entry, one call.
  app.post('/api/v1/report/:split/get/', { schema: { ...reportPostSchema(limits), hide: true }, onError }, postAnswering)
}

/** `caller` charged the platform calls of `tally` (a read's calls counted before the route took it). */
function chargeTo(caller: Caller, tally: CallTally): void {
  caller.platformCalls += tally.platformCalls
  if (tally.platformMs !== undefined) caller.platformMs = (caller.platformMs ?? 0) + tally.platformMs
}

/**
 * The x-request-id a read's platform call carries: the read's own id when the gateway made
 * it, a new one when the caller named its call. The call fills the copy every team of the
 * credential reads, so nothing of the caller's shapes it (a platform that writes the id
 * into its answer would put one team's text in every team's copy); the caller's id comes
 * back to the caller and names the read in the gateway's log.
 */
function fillRequestId(request: FastifyRequest): string {
  return request.headers['x-request-id'] === request.id ? newRequestId() : request.id
}

function optionsOf(request: FastifyRequest, reply: FastifyReply, caller: Caller, refresh: boolean, trace: Trace | undefined, handed?: Pick<HandedOver, 'flight' | 'found'>): ReadOptions {
  return {
    refresh,
    requestId: fillRequestId(request),
    team: caller.team.name,
    log: request.log,
    tally: caller,
    hangUp: hangUpOf(reply.raw),
    ...(isWarmUp(request.headers) ? { priority: 'warm' as const } : {}),
    ...(handed?.flight ? { joined: handed.flight } : {}),
    ...(handed?.found !== undefined ? { found: handed.found } : {}),
    ...(trace ? { trace } : {}),
  }
}

// A report by campaign ids (a POST's `campaignIds`, a GET's `filter[campaignIds]` or any
// key scope.ts reads campaigns from) is indexed under their owners too, so that a purge of
// one advertiser reaches it and a copy filled before one is not served (purgedFor); the
// owners of a scoped team's campaigns are known by now. When a lookup told not all of
// their owners (an unrestricted team's read looks none up), it is indexed under
// ANY_ADVERTISER as well, which every advertiser's purge reaches: a platform reading a
// query-builder filter reports on the campaigns whatever `advertiserId` a GET names, and a
// POST report is the platform's report of its campaigns (it reads no account field of
// it), so is one naming none (every campaign of the token, on a platform that reads so),
// and one whose campaigns the scope rules cannot read (`campaigns` null: an unrestricted
// team's comma list, say).
function indexedUnderOwners(report: CanonicalReport, caller: Caller, campaigns: readonly number[] | null): CanonicalReport {
  const owners = [...new Set(caller.campaignOwners.values())].filter((a) => !report.advertiserIds.includes(a))
  const known = campaigns !== null && campaigns.length > 0 && campaigns.every((id) => caller.campaignOwners.has(id))
  if (!known && (report.method === 'POST' || campaigns === null || campaigns.length > 0)) owners.push(ANY_ADVERTISER)
  return owners.length > 0 ? { ...report, advertiserIds: [...report.advertiserIds, ...owners] } : report
}
