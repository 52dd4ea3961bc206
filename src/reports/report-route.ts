import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { LRUCache } from 'lru-cache'
import type { GatewayContext } from '../context.js'
import { BadQueryError, ForbiddenError } from '../errors.js'
import { pathOf } from '../routes/path-safety.js'
import { canonicalGetReport, canonicalPostReport, type CanonicalReport } from './report-query.js'

declare module 'fastify' {
  interface FastifyRequest {
    report: CanonicalReport | null
    reportKey: string | null
  }
}

// Dashboards ask the same URLs again and again: a GET's canonical form and cache key are
// worked out once per URL and credential, which keeps that work off the hit path.
const GET_MEMO_ENTRIES = 10_000

/**
 * Report reads (contract, "Report requests"): validated and canonicalized before the
 * access rules and the rate limit of the /api/v1 scope run, then served by the cache.
 */
export async function reportRoutes(app: FastifyInstance, { ctx }: { ctx: GatewayContext }): Promise<void> {
  if (!ctx.config.cache.enabled) return
  const opts = { maxRangeDays: ctx.config.cache.maxRangeDays }
  app.decorateRequest('report', null)
  app.decorateRequest('reportKey', null)
  const getMemo = new LRUCache<string, { report: CanonicalReport; key: string }>({ max: GET_MEMO_ENTRIES })

  const preValidation = async (request: FastifyRequest) => {
    const url = request.url
    const q = url.indexOf('?')
    const rawQuery = q === -1 ? '' : url.slice(q + 1)
    if (request.method === 'GET' || request.method === 'HEAD') {
      const credential = request.team?.credential ?? ''
      const memoKey = `${credential} ${url}`
      let memo = getMemo.get(memoKey)
      if (!memo) {
        const report = canonicalGetReport(pathOf(url), rawQuery, opts)
        memo = { report, key: ctx.reports.keyFor(credential, report) }
        getMemo.set(memoKey, memo)
      }
      request.report = memo.report
      request.reportKey = memo.key
      return
    }
    if (request.jsonBody === undefined || typeof request.jsonBody === 'symbol') throw new BadQueryError('body: must be a JSON object')
    request.report = canonicalPostReport(pathOf(url), rawQuery, request.jsonBody, opts)
    // Campaign ids alone do not say whose campaigns they are.
    if (request.report.advertiserId === null && request.team?.advertisers !== null) {
      throw new ForbiddenError(`team ${request.team?.name ?? ''} is limited to some advertisers: name advertiserId in the report request`)
    }
  }

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const team = request.team
    if (!team || !request.report) throw new BadQueryError('report: not validated')
    const provider = ctx.tokens.get(team.credential)
    return ctx.reports.serve(request, reply, request.report, provider, request.reportKey ?? ctx.reports.keyFor(provider.name, request.report))
  }

  app.get('/api/v1/report/*', { preValidation }, handler)
  app.post('/api/v1/report/:split/get', { preValidation }, handler)
}
