import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { GatewayContext } from '../context.js'
import { BadQueryError, ForbiddenError } from '../errors.js'
import { pathOf } from '../routes/path-safety.js'
import { canonicalGetReport, canonicalPostReport, type CanonicalReport } from './report-query.js'

declare module 'fastify' {
  interface FastifyRequest {
    report: CanonicalReport | null
  }
}

/**
 * Report reads (contract, "Report requests"): validated and canonicalized before the
 * access rules and the rate limit of the /api/v1 scope run, then served by the cache.
 */
export async function reportRoutes(app: FastifyInstance, { ctx }: { ctx: GatewayContext }): Promise<void> {
  if (!ctx.config.cache.enabled) return
  const opts = { maxRangeDays: ctx.config.cache.maxRangeDays }
  app.decorateRequest('report', null)

  const preValidation = async (request: FastifyRequest) => {
    const url = request.url
    const q = url.indexOf('?')
    const rawQuery = q === -1 ? '' : url.slice(q + 1)
    if (request.method === 'GET') {
      request.report = canonicalGetReport(pathOf(url), rawQuery, opts)
      return
    }
    if (request.jsonBody === undefined || typeof request.jsonBody === 'symbol') throw new BadQueryError('body: must be a JSON object')
    request.report = canonicalPostReport(pathOf(url), rawQuery, request.jsonBody, opts)
    // Campaign ids alone do not say whose campaigns they are.
    if (request.report.advertiserId === null && request.team?.advertisers !== null) {
      throw new ForbiddenError(`team ${request.team?.name ?? ''} is limited to some advertisers: name advertiserId in the report request`)
    }
  }

  const handler = async (request: FastifyRequest, reply: import('fastify').FastifyReply) => {
    const team = request.team
    if (!team || !request.report) throw new BadQueryError('report: not validated')
    return ctx.reports.serve(request, reply, request.report, ctx.tokens.get(team.credential))
  }

  app.get('/api/v1/report/*', { preValidation }, handler)
  app.post('/api/v1/report/:split/get', { preValidation }, handler)
}
