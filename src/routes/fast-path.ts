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
  const { reports, rateLimiter } = ctx
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    const url = req.url
    if (req.method !== 'GET' || url === undefined || !url.startsWith(prefix)) return false
    const started = performance.now()
    const headers = req.headers
    if (wantsRefresh(headers)) return false
    const known = admission.known(url)
    if (!known) return false
    let who
    try {
      who = admission.authorizeKnown('GET', known, headers)
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
    // One clock reading serves the whole hit: on some machines a reading costs as much as
    // a cache lookup.
    const now = ctx.now()
    const entry = reports.freshInMemory(form.key, now)
    if (!entry) return false
    const rate = rateLimiter.hit(team, now)
    if (!rate.allowed) return false
    const reqId = requestIdOf(headers)
    const answer = entryResponse(entry, 'HIT', now, acceptsGzip(headers['accept-encoding']), headers['if-none-match'])
    const out = answer.headers
    out['x-request-id'] = reqId
    if (answer.body) out['content-length'] = String(answer.body.length)
    const fields = rateLimitHeaders(team, rate)
    if (fields) {
      out[POLICY_HEADER] = fields[0]
      out[STATE_HEADER] = fields[1]
    }
    res.writeHead(answer.code, out)
    res.end(answer.body)
    reports.countHit(form.key, entry, form.report, team.credential, team.name, now)
    observe({
      reqId,
      team: team.name,
      keyId: key.id,
      hit: true,
      method: 'GET',
      url,
      route: 'report',
      status: answer.code,
      durationMs: performance.now() - started,
      cache: 'HIT',
      client: req.socket.remoteAddress ?? null,
      advertisers: form.report.advertiserIds,
      bytes: bytesSent(req.socket),
      upstreamMs: null,
      userAgent: headers['user-agent'] ?? null,
      at: now,
    })
    return true
  }
}
