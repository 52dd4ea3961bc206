import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../http/context.js'
import type { FailureLog } from '../observe/failure-log.js'
import type { Replicas } from '../observe/replicas.js'
import type { MemoryStore } from '../cache/memory-store.js'
import type { PlatformClient } from '../platform/client/platform-client.js'
import type { AuditTrail } from '../access/audit-trail.js'
import type { TeamReloader } from '../access/team-reload.js'
import { KnownUrls } from '../access/known-urls.js'
import { Admission } from '../access/admission.js'
import { buildServer } from '../http/server.js'
import { apiRoutes } from '../http/api.js'
import { healthRoutes } from '../http/health.js'
import { fastReads } from '../http/reads/fast-path.js'
import { ReadDecisions } from '../reports/read-decision.js'
import { requestObserver } from '../http/hooks/request-log.js'
import { answerHooks, callerRate } from '../http/hooks/answer-hooks.js'
import { adminRoutes } from '../http/admin/admin.js'
import { metricsRoute } from '../http/admin/metrics-route.js'
import { consoleRoutes } from '../http/admin/console-route.js'
import { describeProxy, docsUi } from '../http/openapi/document.js'
import { describeAdmin } from '../http/openapi/admin-document.js'

/** The two listeners, neither listening yet (main.ts listens). */
export interface Listeners {
  /** The teams': report reads (the fast path first), every other /api/v1 call, health. */
  proxy: FastifyInstance
  /** The operators': health, /metrics, /admin/*, the console, the API description. */
  admin: FastifyInstance
  /** Bytes kept by the memos of URLs callers sent (bounded whatever they send). */
  memoBytes(): number
}

export async function listeners(
  ctx: GatewayContext,
  o: { failures: FailureLog; client: PlatformClient; reloader: TeamReloader; l1: MemoryStore; audit: AuditTrail; replicas: Replicas; consoleScriptsDir?: string | undefined },
): Promise<Listeners> {
  const { config, log } = ctx
  const { failures, client } = o
  const knownUrls = new KnownUrls()
  const admission = new Admission(ctx, knownUrls)
  const decisions = new ReadDecisions(admission, ctx.reports, config.cache.maxRangeDays)
  const observe = requestObserver(ctx)
  const proxy = buildServer(config, log, failures, config.cache.enabled ? fastReads(ctx, decisions, observe) : null, callerRate(admission), ctx.tracing)
  // No body is parsed on the proxy listener before its handler admits the caller:
  // /api/v1 handlers read it through Admission.readBody; any other path is a 404
  // without reading a byte of it.
  proxy.removeAllContentTypeParsers()
  proxy.addContentTypeParser('*', (_request, payload, done) => done(null, payload))
  await describeProxy(proxy)
  const health = { tokens: ctx.tokens, redis: ctx.redis, breaker: ctx.breaker, lifecycle: ctx.lifecycle }
  await proxy.register(healthRoutes, health)
  await proxy.register(apiRoutes, { ctx, admission, client, decisions })
  answerHooks(proxy, { ctx, admission, observe })

  const admin = buildServer(config, log, failures, null)
  // First: its document is made from every route registered after it.
  await describeAdmin(admin)
  await admin.register(healthRoutes, health)
  metricsRoute(admin, { metrics: ctx.metrics, tokens: ctx.tokens, governors: ctx.governors, usage: ctx.usage })
  await admin.register(adminRoutes, { ctx, client, reloader: o.reloader, l1: o.l1, audit: o.audit, replicas: o.replicas })
  await admin.register(consoleRoutes, o.consoleScriptsDir ? { scriptsDir: o.consoleScriptsDir } : {})
  await docsUi(admin, proxy)
  return { proxy, admin, memoBytes: () => knownUrls.bytes }
}
