import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { GatewayContext } from '../context.js'
import type { Admission } from '../../access/admission.js'
import { answeredByCache } from '../../observe/usage.js'
import { bytesSent, routeKind, type ObserveRequest } from './request-log.js'
import { auditWrite } from './write-audit.js'
import { traceOf } from '../../observe/tracing.js'

/** The rate-limit fields of an answer the router writes: its admitted caller's team's standing. */
export function callerRate(admission: Admission): (request: FastifyRequest) => [policy: string, state: string] | null {
  return (request) => (request.caller ? admission.rateFields(request.caller) : null)
}

/** What every answer of the proxy's router leaves behind: its access line and usage (`observe`) and, for a write, its audit line. */
export function answerHooks(proxy: FastifyInstance, { ctx, admission, observe }: { ctx: GatewayContext; admission: Admission; observe: ObserveRequest }): void {
  proxy.addHook('onResponse', (request, reply, done) => {
    const cache = (reply.getHeader('x-cache') as string | undefined) ?? null
    observe({
      reqId: request.id,
      team: request.caller?.team.name ?? null,
      keyId: request.caller?.keyId ?? null,
      hit: request.caller ? answeredByCache(reply.statusCode, cache, request.caller.platformCalls) : false,
      method: request.method,
      url: request.url,
      route: routeKind(request.routeOptions.url ?? 'unmatched'),
      status: reply.statusCode,
      durationMs: reply.elapsedTime,
      cache,
      client: request.ip ?? null,
      advertisers: request.caller?.advertisers ?? null,
      bytes: bytesSent(request.raw.socket),
      upstreamMs: request.caller?.upstreamMs ?? null,
      userAgent: request.headers['user-agent'] ?? null,
      trace: ctx.tracing === null ? undefined : traceOf(request.raw),
    })
    auditWrite(ctx, admission, request, reply.statusCode)
    done()
  })
}
