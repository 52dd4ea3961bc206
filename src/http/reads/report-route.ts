import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { GatewayContext } from '../context.js'
import { BadQueryError } from '../../errors.js'
import type { Admission, Caller } from '../../access/admission.js'
import type { KnownUrl, KnownUrls } from '../../access/known-urls.js'
import { reportGetSchema, reportPostSchema } from '../openapi/route-schemas.js'
import { canonicalGetReport, canonicalPostReport, type CanonicalReport } from '../../reports/report-query.js'
import { isWarmUp, sendReport, wantsRefresh } from './report-reply.js'
import { hangUpSignal } from '../../platform/governor/caller-group.js'
import { takeHandedOver, type HandedOver } from './handed-over.js'
import type { ReadOptions } from '../../reports/report-cache.js'
import { traceOf, type Trace } from '../../observe/tracing.js'

/** A GET report's canonical form and cache key, worked out once per URL and credential. */
export interface KnownReport {
  report: CanonicalReport
  key: string
}

/** A report URL seen before: its checked target and its form for each credential that asked it. */
export type SeenReport = KnownUrl<KnownReport>

/** The form `seen` keeps for `credential`, if any. */
export function formFor(seen: SeenReport, credential: string): KnownReport | undefined {
  for (const kept of seen.forms) if (kept.credential === credential) return kept.form
  return undefined
}

/**
 * The canonical forms and cache keys of GET reports, kept in the one memo by URL
 * (access/known-urls.ts) beside their checked targets: one lookup by the URL gives the
 * fast path of hits all it needs, with no key built per hit.
 */
export class ReportForms {
  readonly #ctx: GatewayContext
  readonly #memo: KnownUrls<KnownReport>

  constructor(ctx: GatewayContext, memo: KnownUrls<KnownReport>) {
    this.#ctx = ctx
    this.#memo = memo
  }

  /** The canonical form of an admitted caller's GET report; 400 when a parameter is invalid. */
  get(caller: Caller, url: string): KnownReport {
    const seen = this.#memo.get(url)
    const known = seen && formFor(seen, caller.provider.name)
    if (known) return known
    const report = canonicalGetReport(caller.target.path, caller.target.search, { maxRangeDays: this.#ctx.config.cache.maxRangeDays })
    return { report, key: this.#ctx.reports.keyFor(caller.provider.name, report) }
  }

  /** Keeps the form of a call that passed its scope check (its target is kept by Admission.remember). */
  remember(caller: Caller, url: string, form: KnownReport): void {
    this.#memo.keepForm(url, caller.provider.name, form)
  }

  /** Looked up only: what the fast path of hits may serve. */
  seen(url: string): SeenReport | undefined {
    return this.#memo.get(url)
  }
}

/**
 * Report reads (contract, "Report requests"), each top to bottom: admit the caller (key,
 * rate limit), canonicalize (400), check its scope (403), read the cache, send.
 */
export async function reportReads(
  app: FastifyInstance,
  { ctx, admission, forms }: { ctx: GatewayContext; admission: Admission; forms: ReportForms },
): Promise<void> {
  if (!ctx.config.cache.enabled) return

  const limits = { maxRangeDays: ctx.config.cache.maxRangeDays, reportBodyBytes: ctx.config.limits.reportBodyBytes }
  app.get('/api/v1/report/*', { schema: reportGetSchema(limits) }, async (request: FastifyRequest, reply: FastifyReply) => {
    // A caller the fast path handed over (http/reads/fast-path.ts) was counted already.
    const handed = takeHandedOver(request.raw)
    const trace = ctx.tracing === null ? undefined : traceOf(request.raw)
    // A refusal thrown here leaves the step open: the request's span ends it, failed.
    const admitting = trace?.step('admission')
    const caller = admission.admit(request, handed?.rate)
    const form = forms.get(caller, request.url)
    const { report, key } = form
    await admission.checkScope(request.method, caller, admission.known(request.url))
    admitting?.end()
    admission.remember(request.method, request.url, caller)
    forms.remember(caller, request.url, form)
    caller.advertisers = report.advertiserIds
    const result = await ctx.reports.read(report, key, caller.provider, readOptions(request, reply, caller, trace, handed))
    caller.upstreamMs = result.upstreamMs ?? null
    return sendReport(reply, result, request.headers, ctx.clock.now(), () => ({ reqId: request.id, rate: admission.rateFields(caller) }))
  })

  const postReport = async (request: FastifyRequest, reply: FastifyReply) => {
    const trace = ctx.tracing === null ? undefined : traceOf(request.raw)
    const admitting = trace?.step('admission')
    const caller = admission.admit(request)
    await admission.readBody(request, caller, ctx.config.limits.reportBodyBytes)
    if (caller.body?.kind !== 'json') throw new BadQueryError('body: must be a JSON object')
    const report = canonicalPostReport(caller.target.path, caller.target.search, caller.body.value, { maxRangeDays: ctx.config.cache.maxRangeDays })
    await admission.checkScope(request.method, caller)
    admitting?.end()
    const key = ctx.reports.keyFor(caller.provider.name, report)
    const indexed = indexedUnderOwners(report, caller)
    caller.advertisers = indexed.advertiserIds
    const result = await ctx.reports.read(indexed, key, caller.provider, readOptions(request, reply, caller, trace))
    caller.upstreamMs = result.upstreamMs ?? null
    return sendReport(reply, result, request.headers, ctx.clock.now(), () => ({ reqId: request.id, rate: admission.rateFields(caller) }))
  }
  app.post('/api/v1/report/:split/get', { schema: reportPostSchema(limits) }, postReport)
  // The same report with a trailing slash (canonical-path.ts): one cache entry, one call.
  app.post('/api/v1/report/:split/get/', { schema: { ...reportPostSchema(limits), hide: true } }, postReport)
}

function readOptions(request: FastifyRequest, reply: FastifyReply, caller: Caller, trace: Trace | undefined, handed?: HandedOver): ReadOptions {
  return {
    refresh: wantsRefresh(request.headers),
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
