import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'
import type { GatewayContext } from '../context.js'
import { BadQueryError } from '../errors.js'
import type { Admission, Caller } from '../routes/caller.js'
import { reportGetSchema, reportPostSchema } from '../openapi/route-schemas.js'
import { canonicalGetReport, canonicalPostReport, type CanonicalReport } from './report-query.js'
import { sendReport, wantsRefresh } from './report-reply.js'
import { hangUpSignal } from '../platform/caller-group.js'
import { entryBytes } from '../kept-bytes.js'
import { takeJoinedFill } from './joined-fills.js'
import type { FillResult, ReadOptions } from './report-cache.js'

/** A GET report's canonical form and cache key, worked out once per URL and credential. */
export interface KnownReport {
  report: CanonicalReport
  key: string
}

// Dashboards ask the same URLs again and again: the canonical form and key of a GET are
// kept, which keeps that work off the hit path. Filled only once a call passed its scope
// check (a refused call leaves nothing), and bounded by the bytes each entry keeps: a URL
// can be 16 KB and its canonical query three times that (issue 16).
export const KNOWN_REPORT_BYTES = 16 * 1024 * 1024

export class ReportForms {
  readonly #ctx: GatewayContext
  readonly #known = new LRUCache<string, KnownReport>({
    maxSize: KNOWN_REPORT_BYTES,
    sizeCalculation: entryBytes,
  })

  constructor(ctx: GatewayContext) {
    this.#ctx = ctx
  }

  /** The canonical form of an admitted caller's GET report; 400 when a parameter is invalid. */
  get(caller: Caller, url: string): KnownReport {
    const known = this.#known.get(`${caller.provider.name} ${url}`)
    if (known) return known
    const report = canonicalGetReport(caller.target.path, caller.target.search, { maxRangeDays: this.#ctx.config.cache.maxRangeDays })
    return { report, key: this.#ctx.reports.keyFor(caller.provider.name, report) }
  }

  /** Keeps the form of a call that passed its scope check. */
  remember(caller: Caller, url: string, known: KnownReport): void {
    const memo = `${caller.provider.name} ${url}`
    if (!this.#known.has(memo)) this.#known.set(memo, known)
  }

  /** Bytes the memo of forms keeps, as counted against KNOWN_REPORT_BYTES. */
  get memoBytes(): number {
    return this.#known.calculatedSize
  }

  /** Looked up only: what the fast path of hits may serve. */
  peek(credential: string, url: string): KnownReport | undefined {
    return this.#known.get(`${credential} ${url}`)
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
    // A caller whose joined fill ended in no entry (routes/fast-path.ts) was counted already.
    const joined = takeJoinedFill(request.raw)
    const caller = admission.admit(request, joined?.rate)
    const form = forms.get(caller, request.url)
    const { report, key } = form
    await admission.checkScope(request.method, caller, admission.known(request.url))
    admission.remember(request.method, request.url, caller)
    forms.remember(caller, request.url, form)
    caller.advertisers = report.advertiserIds
    const result = await ctx.reports.read(report, key, caller.provider, readOptions(request, reply, caller, joined?.flight))
    caller.upstreamMs = result.upstreamMs ?? null
    return sendReport(reply, result, request.headers, ctx.now())
  })

  app.post('/api/v1/report/:split/get', { schema: reportPostSchema(limits) }, async (request: FastifyRequest, reply: FastifyReply) => {
    const caller = admission.admit(request)
    await admission.readBody(request, caller, ctx.config.limits.reportBodyBytes)
    if (caller.body?.kind !== 'json') throw new BadQueryError('body: must be a JSON object')
    const report = canonicalPostReport(caller.target.path, caller.target.search, caller.body.value, { maxRangeDays: ctx.config.cache.maxRangeDays })
    await admission.checkScope(request.method, caller)
    const key = ctx.reports.keyFor(caller.provider.name, report)
    const indexed = indexedUnderOwners(report, caller)
    caller.advertisers = indexed.advertiserIds
    const result = await ctx.reports.read(indexed, key, caller.provider, readOptions(request, reply, caller))
    caller.upstreamMs = result.upstreamMs ?? null
    return sendReport(reply, result, request.headers, ctx.now())
  })
}

function readOptions(request: FastifyRequest, reply: FastifyReply, caller: Caller, joined?: Promise<FillResult>): ReadOptions {
  return {
    refresh: wantsRefresh(request.headers),
    requestId: request.id,
    team: caller.team.name,
    log: request.log,
    tally: caller,
    hangUp: () => hangUpSignal(reply.raw),
    ...(joined ? { joined } : {}),
  }
}

// A report by campaign ids is indexed under their owners too, so that a purge of one
// advertiser reaches it (the owners of a scoped team's campaigns are known by now).
function indexedUnderOwners(report: CanonicalReport, caller: Caller): CanonicalReport {
  const owners = [...new Set(caller.campaignOwners.values())].filter((a) => !report.advertiserIds.includes(a))
  return owners.length > 0 ? { ...report, advertiserIds: [...report.advertiserIds, ...owners] } : report
}
