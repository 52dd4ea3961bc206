import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { GatewayContext } from '../context.js'
import { BadQueryError } from '../../errors.js'
import type { Admission, Caller } from '../../access/admission.js'
import { reportGetSchema, reportPostSchema } from '../openapi/route-schemas.js'
import { canonicalPostReport, type CanonicalReport } from '../../reports/report-query.js'
import type { ReadDecisions } from '../../reports/read-decision.js'
import { isWarmUp, sendReport } from './report-reply.js'
import { forcesRefresh } from '../../reports/forced-refresh.js'
import { hangUpSignal } from '../../platform/client/caller-group.js'
import { takeHandedOver, type HandedOver } from './handed-over.js'
import type { ReadOptions } from '../../reports/report-cache.js'
import { traceOf, type Trace } from '../../observe/tracing.js'
import { L1_HIT } from './step-attributes.js'

/** What the report routes read: the configuration, the report cache, the clock and traces, the admission of callers and the one decision of report reads. */
export type ReportReadParts = Pick<GatewayContext, 'config' | 'reports' | 'clock' | 'tracing'> & { admission: Admission; decisions: ReadDecisions }

/**
 * Report reads (contract, "Report requests"), each top to bottom: admit the caller (key,
 * rate limit), canonicalize (400), check its scope (403), read the cache, send. A GET is
 * decided by the one decision of report reads (reports/read-decision.ts), as the
 * entrance before the router decides it, which hands over what it learned.
 */
export async function reportReads(app: FastifyInstance, { config, reports, clock, tracing, admission, decisions }: ReportReadParts): Promise<void> {
  if (!config.cache.enabled) return

  const limits = { maxRangeDays: config.cache.maxRangeDays, reportBodyBytes: config.limits.reportBodyBytes }
  app.get('/api/v1/report/*', { schema: reportGetSchema(limits) }, async (request: FastifyRequest, reply: FastifyReply) => {
    // A caller the fast path handed over (http/reads/fast-path.ts) was counted already.
    const handed = takeHandedOver(request.raw)
    const trace = tracing === null ? undefined : traceOf(request.raw)
    const now = clock.now()
    const decided = decisions.decide(request.method, request.url, request.headers, now, { counted: handed?.rate, into: request }, trace)
    // Set by the decision once the key named it.
    const caller = request.caller as Caller
    if ('answer' in decided) {
      decided.admitting?.end()
      trace?.step('cache.lookup', L1_HIT).end()
      caller.advertisers = decided.form.report.advertiserIds
      return sendReport(reply, { kind: 'entry', entry: decided.answer, status: 'HIT' }, request.headers, now, () => ({ reqId: request.id, rate: admission.rateFields(caller) }))
    }
    const { admitted, refused, admitting } = decided.goOn
    // A refusal thrown here leaves the step open: the request's span ends it, failed.
    if (admitted === undefined) throw refused
    const { report, key } = admitted.form
    if (admitted.scopePending) {
      await admission.checkScope(request.method, caller, admitted.known)
      decisions.remember(request.method, request.url, admitted)
    }
    admitting?.end()
    caller.advertisers = report.advertiserIds
    // A cold fill under way here is joined, as the entrance before the router joins it.
    const flight = handed?.flight ?? decided.goOn.flight
    if (flight !== undefined && handed?.flight === undefined) reports.joinCold(key, caller.team.name, hangUpSignal(reply.raw), isWarmUp(request.headers) ? 'warm' : 'caller')
    const result = await reports.read(report, key, caller.provider, readOptions(request, reply, caller, admitted.refresh, trace, { ...handed, ...(flight ? { flight } : {}) }))
    caller.upstreamMs = result.upstreamMs ?? null
    return sendReport(reply, result, request.headers, clock.now(), () => ({ reqId: request.id, rate: admission.rateFields(caller) }))
  })

  const postReport = async (request: FastifyRequest, reply: FastifyReply) => {
    const trace = tracing === null ? undefined : traceOf(request.raw)
    const admitting = trace?.step('admission')
    const caller = admission.admit(request)
    await admission.readBody(request, caller, config.limits.reportBodyBytes)
    if (caller.body?.kind !== 'json') throw new BadQueryError('body: must be a JSON object')
    const report = canonicalPostReport(caller.target.path, caller.target.search, caller.body.value, { maxRangeDays: config.cache.maxRangeDays })
    await admission.checkScope(request.method, caller)
    admitting?.end()
    const key = reports.keyFor(caller.provider.name, report)
    const indexed = indexedUnderOwners(report, caller)
    caller.advertisers = indexed.advertiserIds
    const result = await reports.read(indexed, key, caller.provider, readOptions(request, reply, caller, forcesRefresh(request.headers, caller.team), trace))
    caller.upstreamMs = result.upstreamMs ?? null
    return sendReport(reply, result, request.headers, clock.now(), () => ({ reqId: request.id, rate: admission.rateFields(caller) }))
  }
  app.post('/api/v1/report/:split/get', { schema: reportPostSchema(limits) }, postReport)
  // The same report with a trailing slash (canonical-path.ts): one cache entry, one call.
  app.post('/api/v1/report/:split/get/', { schema: { ...reportPostSchema(limits), hide: true } }, postReport)
}

function readOptions(request: FastifyRequest, reply: FastifyReply, caller: Caller, refresh: boolean, trace: Trace | undefined, handed?: Pick<HandedOver, 'flight' | 'found'>): ReadOptions {
  return {
    refresh,
    requestId: request.id,
    team: caller.team.name,
    log: request.log,
    tally: caller,
    hangUp: () => hangUpSignal(reply.raw),
    ...(isWarmUp(request.headers) ? { priority: 'warm' as const } : {}),
    ...(handed?.flight ? { joined: handed.flight } : {}),
    ...(handed?.found !== undefined ? { found: handed.found } : {}),
    ...(trace ? { trace } : {}),
  }
}

// A report by campaign ids is indexed under their owners too, so that a purge of one
// advertiser reaches it (the owners of a scoped team's campaigns are known by now).
function indexedUnderOwners(report: CanonicalReport, caller: Caller): CanonicalReport {
  const owners = [...new Set(caller.campaignOwners.values())].filter((a) => !report.advertiserIds.includes(a))
  return owners.length > 0 ? { ...report, advertiserIds: [...report.advertiserIds, ...owners] } : report
}
