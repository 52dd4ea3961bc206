import type { IncomingMessage, ServerResponse } from 'node:http'
import type { GatewayContext } from '../context.js'
import type { ReportForms } from '../reports/report-route.js'
import { acceptsGzip, entryResponse, wantsRefresh } from '../reports/report-reply.js'
import { assertAccounts } from '../teams/account-scope.js'
import { POLICY_HEADER, STATE_HEADER, rateLimitHeaders } from '../teams/rate-limit-headers.js'
import type { Admission } from './caller.js'
import { bytesSent, requestIdOf, type ObserveRequest } from './request-log.js'

/**
 * Serves fresh in-memory report hits before Fastify's router (issue #6): at this rate,
 * the lifecycle itself (routing, hooks, reply objects) is most of a hit's cost. It
 * decides through the same Admission and access checks as the routes, and serves only
 * what they would serve as a HIT; anything else (an error to answer, a refresh, a
 * miss, a spent rate limit, a call naming campaigns) goes on to Fastify unchanged.
 */
export function fastHits(ctx: GatewayContext, admission: Admission, forms: ReportForms, observe: ObserveRequest) {
  const prefix = '/api/v1/report/'
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    const url = req.url
    if (req.method !== 'GET' || url === undefined || !url.startsWith(prefix) || wantsRefresh(req.headers)) return false
    const started = performance.now()
    const known = admission.known(url)
    if (!known) return false
    let who
    try {
      who = admission.authorizeKnown('GET', known, req.headers)
      const team = who.team
      if (team.advertisers !== null) {
        const named = known.bodyless
        // A call naming campaigns needs the ownership lookup, an async step: Fastify's.
        if (!named || !named.placed || named.campaigns.length > 0) return false
        assertAccounts(team, named.accounts)
      }
    } catch {
      return false
    }
    const { team, key } = who
    const form = forms.peek(team.credential, url)
    if (!form) return false
    const entry = ctx.reports.freshInMemory(form.key)
    if (!entry) return false
    const rate = ctx.rateLimiter.hit(team)
    if (!rate.allowed) return false
    const reqId = requestIdOf(req.headers)
    const { code, headers, body } = entryResponse(entry, 'HIT', ctx.now(), acceptsGzip(req.headers['accept-encoding']), req.headers['if-none-match'])
    headers['x-request-id'] = reqId
    if (body) headers['content-length'] = String(body.length)
    const fields = rateLimitHeaders(team, rate)
    if (fields) {
      headers[POLICY_HEADER] = fields[0]
      headers[STATE_HEADER] = fields[1]
    }
    res.writeHead(code, headers)
    res.end(body)
    ctx.reports.countHit(form.key, entry, form.report, team.credential, team.name)
    observe({
      reqId,
      team: team.name,
      keyId: key.id,
      hit: true,
      method: 'GET',
      url,
      route: 'report',
      status: code,
      durationMs: performance.now() - started,
      cache: 'HIT',
      client: req.socket.remoteAddress ?? null,
      advertisers: form.report.advertiserIds,
      bytes: bytesSent(req.socket),
      upstreamMs: null,
      userAgent: req.headers['user-agent'] ?? null,
    })
    return true
  }
}
