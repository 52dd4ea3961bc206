import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { GatewayContext } from '../context.js'
import type { Admission } from '../../access/admission.js'
import { answeredByCache } from '../../observe/usage.js'
import { accessFacts, bytesOf, CALLER_LEFT, countBytesWhenWritten, gatewayCodeOf, routeKind, type Answered, type ObserveRequest } from './request-log.js'
import { traceOf } from '../../observe/tracing.js'
import { auditWrite, type WriteAuditParts } from './write-audit.js'

/** The rate-limit fields of an answer the router writes: its admitted caller's team's standing. */
export function callerRate(admission: Admission): (request: FastifyRequest) => [policy: string, state: string] | null {
  return (request) => (request.caller ? admission.rateFields(request.caller) : null)
}

/** What the answer hooks read: whether traces are on, where the access line goes (`observe`), and what the audit line reads. */
export type AnswerHookParts = Pick<GatewayContext, 'tracing'> & WriteAuditParts & { observe: ObserveRequest }

/** The answers being made whose caller may leave before them: each one's work, until it ends (answering). */
const underWay = new WeakMap<FastifyReply, Promise<unknown>>()

/**
 * `work`, the making of `reply`'s answer (a report read: its lookup and fill), marked as
 * under way until it ends: a caller who leaves meanwhile has its 499 line once it has,
 * saying what the work did with the cache (`MISS`: its fill stored the copy), as the
 * answer would have.
 */
export function answering<T>(reply: FastifyReply, work: Promise<T>): Promise<T> {
  underWay.set(reply, work)
  return work
}

/**
 * What every request of the proxy's router leaves behind: its access line and usage
 * (`observe`) and, for a write, its audit line. A caller that leaves before its answer
 * gets none and no onResponse runs for it: its lines are written with status 499 as its
 * connection closes, or, where its answer was under way (answering), once that work ends,
 * with the time the caller waited. Either way once.
 */
export function answerHooks(proxy: FastifyInstance, parts: AnswerHookParts): void {
  const { tracing, observe } = parts
  const observed = new WeakSet<FastifyRequest>()
  const leaveBehind = (request: FastifyRequest, reply: FastifyReply, status: number, client: string | null, durationMs = reply.elapsedTime): void => {
    if (observed.has(request)) return
    observed.add(request)
    const cache = (reply.getHeader('x-cache') as string | undefined) ?? null
    // Undefined outside the /api/v1 routes (an unmatched path): their plugin decorates it.
    const caller = request.caller ?? null
    const answered: Answered = {
      reqId: request.id,
      route: routeKind(request.routeOptions.url ?? 'unmatched'),
      status,
      code: gatewayCodeOf(reply.raw),
      durationMs,
      cache,
      client,
      hit: caller ? answeredByCache(status, cache, caller.platformCalls) : false,
    }
    observe(accessFacts(request.raw, bytesOf(reply.raw), caller, answered, tracing === null ? undefined : traceOf(request.raw)))
    auditWrite(parts, request, status)
  }
  proxy.addHook('onRequest', (request, reply, done) => {
    // Read now: a closed connection no longer has its peer's address.
    const client = request.ip ?? null
    countBytesWhenWritten(reply.raw)
    // `on`: a response closes once, and `once` keeps a wrapper and its context per request.
    reply.raw.on('close', () => {
      if (reply.raw.writableFinished) return
      const waited = reply.elapsedTime
      const work = underWay.get(reply)
      if (work === undefined) return leaveBehind(request, reply, CALLER_LEFT, client, waited)
      const left = () => leaveBehind(request, reply, CALLER_LEFT, client, waited)
      work.then(left, left)
    })
    done()
  })
  proxy.addHook('onResponse', (request, reply, done) => {
    leaveBehind(request, reply, reply.statusCode, request.ip ?? null)
    done()
  })
}
