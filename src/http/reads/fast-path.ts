import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
// Imported, not the global: Node defines the global `performance` as an accessor, which
// optimized code cannot fold, so each global use is a property lookup through the IC.
import { performance } from 'node:perf_hooks'
import type { CacheEntry } from '../../cache/cache-entry.js'
import type { GatewayContext } from '../context.js'
import { hangUpOf } from '../../platform/client/caller-group.js'
import { handOver, type HandedOver } from './handed-over.js'
import { teamTally, type FillResult, type Forward } from '../../reports/report-cache.js'
import type { AdmittedRead, DecideHow, ReadDecision, ReadDecisions } from '../../reports/read-decision.js'
import { plainAnswer, writeEntry } from './report-reply.js'
import { rateLimitHeaders } from '../../access/rate-limit-headers.js'
import { accessFacts, bytesOf, bytesSince, CALLER_LEFT, requestIdFor, requestIdOf, type AnsweredCaller, type ObserveRequest, type RequestSeen } from '../hooks/request-log.js'
import type { AnswerFields } from '../answer-fields.js'
import { carryTrace, traceOf, type SpanAttributes, type Trace, type TracedRequest } from '../../observe/tracing.js'
import { isHostValue } from '../request-target.js'
import type { ServePlain } from '../socket-entrance.js'
import type { ReportAnswerFacts } from './report-facts.js'
import { JOINED_FILL, L1_HIT, L1_MISS, L2_HIT, L2_NOT_FRESH, TO_ROUTER } from './step-attributes.js'
import { carries } from '../connection-teams.js'
import { answeredByCache } from '../../observe/usage.js'

/** A caller that joined a cold fill went to the platform for want of a copy, with another read. */
const JOINED: Forward = { reason: 'uri-miss', collapsed: true }

/** A step of the fast path ended, with what it found. */
function ended(step: Trace | undefined, attributes: SpanAttributes): void {
  if (step === undefined) return
  step.set(attributes)
  step.end()
}

/** The caller facts of a read's access line: its team, key and advertisers, and how long its platform call took (null without one). */
function callerOf(read: AdmittedRead, upstreamMs: number | null): AnsweredCaller {
  const { team, key } = read.identity
  return { team, keyId: key.id, advertisers: read.form.report.advertiserIds, upstreamMs }
}

/** A read decided on its connection, left to Node's parser: what `request` goes on with. */
interface DecidedOnSocket {
  url: string
  decided: ReadDecision
  started: number
  now: number
}

// Kept on the connection until Node reads that request from it, and taken then (once).
const DECIDED = Symbol('a read decided on its connection')
type DecidingSocket = Socket & { [DECIDED]?: DecidedOnSocket | undefined }

/** What Fastify does with a request: the fast path hands it anything it does not serve. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void

// How the entrance decides: only URLs seen before (a first call goes to the router whole).
const BEFORE_ROUTER: DecideHow = { seenOnly: true }

/** What the fast path reads: the report cache, the clock, traces and the log, the one decision of report reads, where access lines go, what an answer says of its cost and finality. */
export type FastReadParts = Pick<GatewayContext, 'reports' | 'tracing' | 'clock' | 'log'> & { decisions: ReadDecisions; observe: ObserveRequest; facts: ReportAnswerFacts }

/**
 * Serves report reads before Fastify's router: at this rate the lifecycle
 * itself (routing, hooks, reply objects, a child logger) is most of an answer's cost.
 * Each read of a URL seen before is decided by the one decision of report reads
 * (reports/read-decision.ts), as the route decides it:
 * - a fresh in-memory copy is answered at once (HIT);
 * - a caller arriving while a cold miss of the same report is filled in this process
 *   joins that fill and is answered from it (MISS): the callers of a stampede cost no
 *   more than hits;
 * - otherwise the copy is looked up in Redis (L2), as the route would, and a fresh one is
 *   answered (HIT).
 * Anything else (a refusal to answer, a forced refresh, a miss of its own, a call naming
 * campaigns, a joined fill that ended in no entry, a read with a `Prefer` header) goes on to Fastify with what was
 * learned (handed-over.ts), which the route does not learn again.
 */
export function fastReads({ reports, tracing, clock, log, decisions, observe, facts }: FastReadParts) {
  const prefix = '/api/v1/report/'
  const traced = tracing !== null

  /** Hands a request to the router with what was learned; a step begun here ends, saying so (the router's own steps follow). */
  const toRouter = (req: IncomingMessage, res: ServerResponse, next: RequestHandler, step: Trace | undefined, learned?: HandedOver): void => {
    if (learned !== undefined) handOver(req, learned)
    ended(step, TO_ROUTER)
    next(req, res)
  }

  // What an entry's answer to `read` carries of its own: its request id, its team's rate standing, the report's cost and finality.
  const ownFields = (read: AdmittedRead, entry: CacheEntry, status: 'HIT' | 'MISS', now: number, reqId: string): AnswerFields & { reqId: string } => {
    const team = read.identity.team
    const report = facts.of(team, read.form.report, entry, status === 'MISS' ? (entry.fillMs ?? 0) : 0, now)
    return { reqId, rate: rateLimitHeaders(team, read.rate), report }
  }

  // The access line of an answer written from the cache: a platform call saved (usage), unless the joined fill was charged to it (`platformCalls`).
  const served = (req: RequestSeen, bytes: number | null, read: AdmittedRead, reqId: string, status: 'HIT' | 'MISS', code: number, started: number, now: number, upstreamMs: number | null, client: string | null, trace: Trace | undefined, platformCalls = 0): void => {
    observe(accessFacts(req, bytes, callerOf(read, upstreamMs), { reqId, route: 'report', status: code, durationMs: performance.now() - started, cache: status, client, hit: answeredByCache(code, status, platformCalls), at: now }, trace))
  }

  // The answer of an entry, written as the route writes it, and its access line; `platformCalls`: those charged to it (a joined fill sent for it).
  const answer = (req: IncomingMessage, res: ServerResponse, read: AdmittedRead, entry: CacheEntry, status: 'HIT' | 'MISS', started: number, now: number, upstreamMs: number | null, client: string | null, platformCalls = 0): void => {
    const own = ownFields(read, entry, status, now, requestIdOf(req))
    const code = writeEntry(res, entry, status, status === 'MISS' ? JOINED : undefined, now, req.headers, own)
    served(req, bytesOf(res), read, own.reqId, status, code, started, now, upstreamMs, client, traced ? traceOf(req) : undefined, platformCalls)
  }

  // A caller that closed its connection while its read waited: no answer to write, its access
  // line says so (499), and what the fill it joined did with the cache (`MISS`: it stored the copy).
  const left = (req: IncomingMessage, res: ServerResponse, read: AdmittedRead, started: number, upstreamMs: number | null, client: string | null, cache: 'MISS' | null = null): boolean => {
    if (!res.destroyed) return false
    observe(accessFacts(req, bytesOf(res), callerOf(read, upstreamMs), { reqId: requestIdOf(req), route: 'report', status: CALLER_LEFT, durationMs: performance.now() - started, cache, client, hit: false }, traced ? traceOf(req) : undefined))
    return true
  }

  const join = (req: IncomingMessage, res: ServerResponse, next: RequestHandler, read: AdmittedRead, flight: Promise<FillResult>, started: number, trace: Trace | undefined): void => {
    const { team } = read.identity
    // Read now: a closed connection no longer has its peer's address.
    const client = req.socket.remoteAddress ?? null
    // The fill's call is charged to this read when it is sent for it (its first caller left, or it is sent on this team's seat).
    const tally = teamTally(team.name)
    // The fill was dropped since the decision found it (its callers all left): the read goes on as one that found none.
    if (!reports.joinCold(read.form.key, flight, team.name, hangUpOf(res), 'caller', () => decisions.stillAdmitted(read), tally)) return shared(req, res, next, read, started, trace)
    const waiting = trace?.step('cache.fill', JOINED_FILL)
    if (waiting) reports.linkFill(read.form.key, waiting)
    const handOverFill = () => {
      if (!left(req, res, read, started, null, client)) toRouter(req, res, next, waiting, { rate: read.rate, flight, charged: tally })
    }
    flight
      .then((result) => {
        if (result.kind !== 'entry') return handOverFill()
        waiting?.end()
        if (left(req, res, read, started, result.upstreamMs ?? null, client, 'MISS')) return
        // A key removed, or an account taken out of its team's scope, while it waited: the route decides it again, and refuses it.
        if (!decisions.stillAdmitted(read)) return toRouter(req, res, next, undefined, { rate: read.rate })
        const at = clock.now()
        reports.countServed(read.form.key, result.entry, 'MISS', result.fromPeer ? 'l2' : 'platform', read.form.report, team.credential, team.name, at)
        answer(req, res, read, result.entry, 'MISS', started, at, result.upstreamMs ?? null, client, tally.platformCalls)
      }, handOverFill)
      .catch((err: unknown) => {
        // Nothing above is expected to throw; should it, this caller is cut off, not the process.
        log.error({ err }, 'answering a joined report fill failed')
        res.destroy()
      })
  }

  // No fresh copy in memory and no fill to join: the copy in Redis, read as the route would.
  const shared = (req: IncomingMessage, res: ServerResponse, next: RequestHandler, read: AdmittedRead, started: number, trace: Trace | undefined): void => {
    const { team } = read.identity
    const rate = read.rate
    const looking = trace?.step('cache.lookup')
    // Read now: a closed connection no longer has its peer's address.
    const client = req.socket.remoteAddress ?? null
    reports
      .lookup(read.form.key, team.name)
      .then(
        (found) => {
          if (left(req, res, read, started, null, client)) return
          const at = clock.now()
          if (found === null || at >= found.entry.freshUntil) {
            looking?.set(L2_NOT_FRESH)
            return toRouter(req, res, next, looking, { rate, found })
          }
          if (!decisions.stillAdmitted(read)) return toRouter(req, res, next, looking, { rate })
          ended(looking, L2_HIT)
          reports.countServed(read.form.key, found.entry, 'HIT', found.tier, read.form.report, team.credential, team.name, at)
          answer(req, res, read, found.entry, 'HIT', started, at, null, client)
        },
        () => {
          if (!left(req, res, read, started, null, client)) toRouter(req, res, next, looking, { rate })
        },
      )
      .catch((err: unknown) => {
        log.error({ err }, 'answering a report from redis failed')
        res.destroy()
      })
  }

  const request = (req: IncomingMessage, res: ServerResponse, next: RequestHandler): void => {
    const url = req.url
    // A read with a preference (`Prefer: respond-async`) is the route's: it may be answered with a job.
    if (req.method !== 'GET' || url === undefined || !url.startsWith(prefix) || req.headers.prefer !== undefined) return next(req, res)
    const socket = req.socket as DecidingSocket
    const pending = socket[DECIDED]
    if (pending !== undefined) socket[DECIDED] = undefined
    // Decided on its connection, where Node's parser was handed it (plain, below): not decided again.
    const before = pending?.url === url ? pending : undefined
    const headers = req.headers
    const trace = traced ? traceOf(req) : undefined
    const started = before?.started ?? performance.now()
    // One clock reading serves the whole hit: on some machines a reading costs as much as
    // a cache lookup.
    const now = before?.now ?? clock.now()
    const decided = before?.decided ?? decisions.decide('GET', url, headers, now, BEFORE_ROUTER, trace)
    if ('answer' in decided) {
      decided.admitting?.end()
      ended(trace?.step('cache.lookup'), L1_HIT)
      carries(res, decided.identity.team.name)
      return answer(req, res, decided, decided.answer, 'HIT', started, now, null, req.socket.remoteAddress ?? null)
    }
    const { admitted, rate, flight, admitting, refused } = decided.goOn
    // A URL not seen before, a refusal, a call naming campaigns, a forced refresh: the route's, with what was learned.
    if (admitted === undefined || admitted.scopePending || admitted.refresh) return toRouter(req, res, next, admitting, rate === undefined && refused === undefined ? undefined : { rate, refused })
    admitting?.end()
    ended(trace?.step('cache.lookup'), L1_MISS)
    carries(res, admitted.identity.team.name)
    if (flight !== undefined) return join(req, res, next, admitted, flight, started, trace)
    shared(req, res, next, admitted, started, trace)
  }

  /**
   * A plain GET read on its connection (http/socket-entrance.ts): a fresh copy in memory
   * is answered there, as `request` answers it; any other read of a report is decided
   * once and left to Node with its decision (and its span), which `request` goes on with.
   */
  const plain: ServePlain = (head, socket, send) => {
    const { url, headers } = head
    // Host as headFault (http/server.ts) asks it; a read with a preference or a tag to compare is Node's whole.
    if (!url.startsWith(prefix) || headers.host === undefined || !isHostValue(headers.host) || headers.prefer !== undefined || headers['if-none-match'] !== undefined) return false
    const started = performance.now()
    const seen: TracedRequest | undefined = traced ? { method: 'GET', url, headers, httpVersion: '1.1', socket } : undefined
    if (seen !== undefined) tracing?.begin(seen)
    const trace = seen && traceOf(seen)
    const now = clock.now()
    const decided = decisions.decide('GET', url, headers, now, BEFORE_ROUTER, trace)
    if ('answer' in decided) {
      const own = ownFields(decided, decided.answer, 'HIT', now, requestIdFor(headers))
      const text = plainAnswer(decided.answer, 'HIT', undefined, now, headers, own)
      if (text !== null) {
        decided.admitting?.end()
        ended(trace?.step('cache.lookup'), L1_HIT)
        carries(socket, decided.identity.team.name)
        send(socket, text.lines, text.body)
        served(seen ?? { method: 'GET', url, headers }, bytesSince(socket), decided, own.reqId, 'HIT', 200, started, now, null, socket.remoteAddress ?? null, trace)
        return true
      }
    }
    const deciding: DecidingSocket = socket
    deciding[DECIDED] = { url, decided, started, now }
    if (seen !== undefined) carryTrace(seen)
    return false
  }

  return { request, plain }
}
