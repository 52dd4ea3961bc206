import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'
import type { GatewayContext } from '../context.js'
import { BadQueryError } from '../errors.js'
import { canonicalGetReport, canonicalPostReport, type CanonicalReport } from './report-query.js'

declare module 'fastify' {
  interface FastifyRequest {
    report: CanonicalReport | null
    reportKey: string | null
  }
}

// Dashboards ask the same URLs again and again: a GET's canonical form and cache key are
// worked out once per URL and credential, which keeps that work off the hit path. Only
// admitted callers fill it, and it is bounded in bytes (a URL can be 16 KB).
const GET_MEMO_BYTES = 16 * 1024 * 1024
const MEMO_ENTRY_OVERHEAD = 512

/**
 * Report reads (contract, "Report requests"): validated and canonicalized after the
 * caller is admitted and before the access rules of the /api/v1 scope run, then served
 * by the cache.
 */
export async function reportRoutes(app: FastifyInstance, { ctx }: { ctx: GatewayContext }): Promise<void> {
  if (!ctx.config.cache.enabled) return
  const opts = { maxRangeDays: ctx.config.cache.maxRangeDays }
  app.decorateRequest('report', null)
  app.decorateRequest('reportKey', null)
  const getMemo = new LRUCache<string, { report: CanonicalReport; key: string }>({
    maxSize: GET_MEMO_BYTES,
    sizeCalculation: (_value, memoKey) => memoKey.length * 2 + MEMO_ENTRY_OVERHEAD,
  })

  const preValidation = async (request: FastifyRequest) => {
    const call = request.call
    if (!call) throw new BadQueryError('report: not admitted')
    const { path, search } = call.target
    if (request.method === 'GET' || request.method === 'HEAD') {
      const credential = request.team?.credential ?? ''
      const memoKey = `${credential} ${path}?${search}`
      let memo = getMemo.get(memoKey)
      if (!memo) {
        const report = canonicalGetReport(path, search, opts)
        memo = { report, key: ctx.reports.keyFor(credential, report) }
        getMemo.set(memoKey, memo)
      }
      request.report = memo.report
      request.reportKey = memo.key
      return
    }
    if (call.body?.kind !== 'json') throw new BadQueryError('body: must be a JSON object')
    request.report = canonicalPostReport(path, search, call.body.value, opts)
  }

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const team = request.team
    const report = request.report
    if (!team || !report || !request.call) throw new BadQueryError('report: not validated')
    const provider = ctx.tokens.get(team.credential)
    // A report by campaign ids is indexed under their owners too, so that a purge of one
    // advertiser reaches it (the owners of a scoped team's campaigns are known by now).
    const owners = [...new Set(request.call.campaignOwners.values())].filter((a) => !report.advertiserIds.includes(a))
    const indexed = owners.length > 0 ? { ...report, advertiserIds: [...report.advertiserIds, ...owners] } : report
    return ctx.reports.serve(request, reply, indexed, provider, request.reportKey ?? ctx.reports.keyFor(provider.name, report))
  }

  app.get('/api/v1/report/*', { preValidation }, handler)
  app.post('/api/v1/report/:split/get', { preValidation, bodyLimit: ctx.config.limits.reportBodyBytes }, handler)
}
