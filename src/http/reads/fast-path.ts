import type { IncomingMessage, ServerResponse } from 'node:http'
// Imported, not the global: Node defines the global `performance` as an accessor, which
// optimized code cannot fold, so each global use is a property lookup through the IC.
import { performance } from 'node:perf_hooks'
import type { CacheEntry } from '../../cache/cache-entry.js'
import type { GatewayContext } from '../context.js'
import { hangUpSignal } from '../../platform/governor/caller-group.js'
import { handOver } from './handed-over.js'
import type { FillResult, Forward } from '../../reports/report-cache.js'
import { formFor, type KnownReport, type ReportForms } from './report-route.js'
import { acceptsGzip, answerRendered, entryResponse, wantsRefresh } from './report-reply.js'
import { assertAccounts } from '../../access/scope.js'
import type { RateDecision } from '../../access/rate-limit.js'
import { rateLimitHeaders } from '../../access/rate-limit-headers.js'
import { pushAnswerFields } from '../answer-fields.js'
import type { Identity } from '../../access/team-auth.js'
import type { Admission } from '../../access/admission.js'
import { bytesSent, requestIdOf, type ObserveRequest } from '../hooks/request-log.js'
import { traceOf, type SpanAttributes, type Trace } from '../../observe/tracing.js'

/** A caller that joined a cold fill went to the platform for want of a copy, with another read. */
const JOINED: Forward = { reason: 'uri-miss', collapsed: true }

// Attributes of the fast path's steps, made once: a traced hit adds no object of its own.
const L1_HIT: SpanAttributes = { 'gateway.cache.tier': 'l1', 'gateway.cache.result': 'hit' }
const L1_MISS: SpanAttributes = { 'gateway.cache.tier': 'l1', 'gateway.cache.result': 'miss' }
const L2_HIT: SpanAttributes = { 'gateway.cache.tier': 'l2', 'gateway.cache.result': 'hit' }
const L2_NOT_FRESH: SpanAttributes = { 'gateway.cache.tier': 'l2', 'gateway.cache.result': 'miss' }
const JOINED_FILL: SpanAttributes = { 'gateway.fill.source': 'joined' }
const TO_ROUTER: SpanAttributes = { 'gateway.handed_over': true }

/** A step of the fast path ended, with what it found. */
function ended(step: Trace | undefined, attributes: SpanAttributes): void {
  if (step === undefined) return
  step.set(attributes)
  step.end()
}

/** What Fastify does with a request: the fast path hands it anything it does not serve. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void

/**
 * Serves report reads before Fastify's router: at this rate the lifecycle
 * itself (routing, hooks, reply objects, a child logger) is most of an answer's cost.
 * - A fresh in-memory copy is answered at once (HIT).
 * - A caller arriving while a cold miss of the same report is filled in this process
 *   joins that fill, as the route would once it found no copy, and is answered from it
 *   (MISS): the callers of a stampede cost no more than hits.
 * - Otherwise the copy is looked up in Redis (L2), as the route would, and a fresh one is
 *   answered (HIT); one that is not, or none, goes on to Fastify with what was found.
 * It decides through the same Admission and access checks as the routes; anything else
 * (an error to answer, a refresh, a miss of its own, a spent rate limit, a call naming
 * campaigns, a joined fill that ended in no entry) goes on to Fastify.
 */
export function fastReads(ctx: GatewayContext, admission: Admission, forms: ReportForms, observe: ObserveRequest) {
  const prefix = '/api/v1/report/'
  const { reports, rateLimiter, tracing } = ctx

  /** Hands a request to the router; a step begun here ends, saying so (the router's own steps follow). */
  const toRouter = (req: IncomingMessage, res: ServerResponse, next: RequestHandler, step: Trace | undefined): void => {
    ended(step, TO_ROUTER)
    next(req, res)
  }

  // The answer of an entry, as the route's sendReport writes it, and its access line.
  const answer = (req: IncomingMessage, res: ServerResponse, who: Identity, form: KnownReport, entry: CacheEntry, how: { status: 'HIT' | 'MISS'; rate: RateDecision; started: number; now: number; upstreamMs: number | null }): void => {
    const { team, key } = who
    const headers = req.headers
    const reqId = requestIdOf(headers)
    const gzip = acceptsGzip(headers['accept-encoding'])
    const own = { reqId, rate: rateLimitHeaders(team, how.rate) }
    const ifNoneMatch = headers['if-none-match']
    let status = 200
    const forward = how.status === 'MISS' ? JOINED : undefined
    if (!answerRendered(res, entry, how.status, forward, how.now, gzip, ifNoneMatch, own)) {
      const reply = entryResponse(entry, how.status, forward, how.now, gzip, ifNoneMatch)
      const out = reply.headers
      if (reply.body) out.push('content-length', String(reply.body.length))
      pushAnswerFields(out, own)
      res.writeHead(reply.code, out)
      res.end(reply.body)
      status = reply.code
    }
    observe({
      reqId,
      team: team.name,
      keyId: key.id,
      // A coalesced MISS made no platform call of its own: answered by the cache (usage).
      hit: true,
      method: 'GET',
      url: req.url as string,
      route: 'report',
      status,
      durationMs: performance.now() - how.started,
      cache: how.status,
      client: req.socket.remoteAddress ?? null,
      advertisers: form.report.advertiserIds,
      bytes: bytesSent(req.socket),
      upstreamMs: how.upstreamMs,
      userAgent: headers['user-agent'] ?? null,
      at: how.now,
      trace: tracing === null ? undefined : traceOf(req),
    })
  }

  const join = (req: IncomingMessage, res: ServerResponse, next: RequestHandler, who: Identity, form: KnownReport, flight: Promise<FillResult>, started: number, now: number, trace: Trace | undefined): void => {
    const { team } = who
    const rate = rateLimiter.hit(team, now)
    if (!rate.allowed) return next(req, res)
    reports.joinCold(form.key, team.name, hangUpSignal(res))
    const waiting = trace?.step('cache.fill', JOINED_FILL)
    const handOverFill = () => {
      handOver(req, { flight, rate })
      toRouter(req, res, next, waiting)
    }
    flight
      .then((result) => {
        if (result.kind !== 'entry') return handOverFill()
        waiting?.end()
        const at = ctx.clock.now()
        reports.countJoined(form.key, result, form.report, team.credential, team.name, at)
        answer(req, res, who, form, result.entry, { status: 'MISS', rate, started, now: at, upstreamMs: result.upstreamMs ?? null })
      }, handOverFill)
      .catch((err: unknown) => {
        // Nothing above is expected to throw; should it, this caller is cut off, not the process.
        ctx.log.error({ err }, 'answering a joined report fill failed')
        res.destroy()
      })
  }

  // No fresh copy in memory and no fill to join: the copy in Redis, read as the route would.
  const shared = (req: IncomingMessage, res: ServerResponse, next: RequestHandler, who: Identity, form: KnownReport, started: number, now: number, trace: Trace | undefined): void => {
    const { team } = who
    const rate = rateLimiter.hit(team, now)
    if (!rate.allowed) return next(req, res)
    const looking = trace?.step('cache.lookup')
    reports
      .lookup(form.key)
      .then(
        (found) => {
          const at = ctx.clock.now()
          if (found === null || at >= found.entry.freshUntil) {
            handOver(req, { rate, found })
            looking?.set(L2_NOT_FRESH)
            return toRouter(req, res, next, looking)
          }
          ended(looking, L2_HIT)
          reports.countHit(form.key, found.entry, form.report, team.credential, team.name, at, found.tier)
          answer(req, res, who, form, found.entry, { status: 'HIT', rate, started, now: at, upstreamMs: null })
        },
        () => {
          handOver(req, { rate })
          toRouter(req, res, next, looking)
        },
      )
      .catch((err: unknown) => {
        ctx.log.error({ err }, 'answering a report from redis failed')
        res.destroy()
      })
  }

  return (req: IncomingMessage, res: ServerResponse, next: RequestHandler): void => {
    const url = req.url
    if (req.method !== 'GET' || url === undefined || !url.startsWith(prefix)) return next(req, res)
    const started = performance.now()
    const headers = req.headers
    if (wantsRefresh(headers)) return next(req, res)
    // One lookup by the URL: its checked target and its forms (http/reads/report-route.ts).
    const seen = forms.seen(url)
    if (!seen) return next(req, res)
    const trace = tracing === null ? undefined : traceOf(req)
    const admitting = trace?.step('admission')
    let who
    try {
      who = admission.authorizeKnown('GET', seen.known, headers)
      const team = who.team
      if (team.advertisers !== null) {
        const named = seen.known.bodyless
        // A call naming campaigns needs the ownership lookup, an async step: Fastify's.
        if (!named || !named.placed || named.campaigns.length > 0) return toRouter(req, res, next, admitting)
        assertAccounts(team, named.accounts)
      }
    } catch {
      return toRouter(req, res, next, admitting)
    }
    const form = formFor(seen, who.team.credential)
    if (!form) return toRouter(req, res, next, admitting)
    admitting?.end()
    // One clock reading serves the whole hit: on some machines a reading costs as much as
    // a cache lookup.
    const now = ctx.clock.now()
    const looking = trace?.step('cache.lookup')
    const entry = reports.freshInMemory(form.key, now)
    if (!entry) {
      ended(looking, L1_MISS)
      const flight = reports.coldFlight(form.key)
      return flight ? join(req, res, next, who, form, flight, started, now, trace) : shared(req, res, next, who, form, started, now, trace)
    }
    ended(looking, L1_HIT)
    const rate = rateLimiter.hit(who.team, now)
    if (!rate.allowed) return next(req, res)
    reports.countHit(form.key, entry, form.report, who.team.credential, who.team.name, now)
    answer(req, res, who, form, entry, { status: 'HIT', rate, started, now, upstreamMs: null })
  }
}

