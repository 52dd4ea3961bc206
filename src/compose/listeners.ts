import type { FastifyInstance } from 'fastify'
import type { TokenShares } from '../platform/tokens/token-store.js'
import type { GatewayContext } from '../http/context.js'
import type { FailureLog } from '../observe/failure-log.js'
import type { Replicas } from '../observe/replicas.js'
import type { MemoryStore } from '../cache/memory-store.js'
import type { PlatformClient } from '../platform/client/platform-client.js'
import type { AuditTrail } from '../access/audit-trail.js'
import type { TeamReloader } from '../access/team-reload.js'
import { KnownUrls } from '../access/known-urls.js'
import { pathOf } from '../access/path-safety.js'
import { afterEmptySegments, HEALTH_PATHS, servedByAdminListener, servedByProxyListener } from '../http/listener-paths.js'
import { jsonRefusal } from '../access/request-body.js'
import { AdminListenerPathError, BadRequestError, LeadingSlashesError, NotFoundError, ProxyListenerPathError, ProxyUnservedPathError } from '../errors.js'
import { Admission } from '../access/admission.js'
import { ADMIN_CHALLENGE, buildServer, PROXY_CHALLENGE, refusalsObservedOn } from '../http/server.js'
import { allowOf, methodRefusal } from '../http/methods.js'
import { CLOSED_AT_BOUND, type ListenerBound } from '../http/connection-bound.js'
import { apiRoutes } from '../http/api.js'
import { healthRoutes } from '../http/health.js'
import { fastReads } from '../http/reads/fast-path.js'
import { reportAnswerFacts } from '../http/reads/report-facts.js'
import { ReadDecisions } from '../reports/read-decision.js'
import { refusalObserver, requestObserver, type TakesRequestId } from '../http/hooks/request-log.js'
import { answerHooks, callerRate } from '../http/hooks/answer-hooks.js'
import { PROXY_ANSWER_HEADERS } from '../http/answer-fields.js'
import { ADMIN_ANSWER_HEADERS, adminRoutes } from '../http/admin/admin.js'
import type { WebhookDeliveries } from '../jobs/webhook-deliveries.js'
import { metricsRoute } from '../http/admin/metrics-route.js'
import { consoleRoutes } from '../http/admin/console-route.js'
import { adminHostCheck } from '../http/admin/admin-host-check.js'
import { describeProxy, docsUi, listenerPort } from '../http/openapi/document.js'
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

/** What the listeners are built from: the context their routes share, and the parts a few of them read besides. */
export interface ListenerParts extends GatewayContext {
  /** Handled failures, summed up: each listener's error writer notes the answers it writes. */
  failures: FailureLog
  /** The one place that calls the platform: proxied calls and the token probe of PUT /admin/token. */
  client: PlatformClient
  /** The teams' reload (POST /admin/reload). */
  reloader: TeamReloader
  /** The report cache's tier in memory (the status view's figures). */
  l1: MemoryStore
  /** The last audit lines (GET /admin/audit). */
  audit: AuditTrail
  /** The replicas of the deployment (GET /admin/cluster, PUT /admin/log-level of another). */
  replicas: Replicas
  /** This replica's pushes of ended jobs to webhooks (GET /admin/jobs). */
  webhooks: WebhookDeliveries
  /** Whether a token change reached the other replicas (PUT /admin/token). */
  tokenShares: TokenShares
  /** Where the console's compiled scripts are; default: dist/console, beside the built gateway. */
  consoleScriptsDir?: string | undefined
}

/** Both listeners, each route module handed the parts it reads. */
export async function listeners(parts: ListenerParts): Promise<Listeners> {
  const { config, log, auditLog, clock, tracing, metrics, tokens, governors, usage, keyUse, history, answers, reports, jobs, redis, breaker, lifecycle, failures, client } = parts
  const knownUrls = new KnownUrls({ teams: () => parts.teams.teams.length, configured: (team) => parts.teams.teamOf(team) !== undefined })
  const admission = new Admission(parts, knownUrls)
  const decisions = new ReadDecisions(admission, reports, config.cache.maxRangeDays)
  // A caller's x-request-id names its request on the proxy listener when its team key is
  // one the gateway knows, its team is not suspended, and the id holds no secret of the
  // gateway's (with one, the team is suspended and a searched call refused 400:
  // Admission.takesRequestId). A caller without such a key gets an id of the gateway's
  // whatever its id holds, so that the echo answers no guess at a secret; the admin listener
  // names every request by an id of its own, so that neither a viewer's token nor none
  // learns it there (decisions/secret-guesses.md).
  const takesId: TakesRequestId = (given, headers) => admission.takesRequestId(given, headers)
  const observe = requestObserver({ metrics, usage, keyUse, clock, history, log })
  const facts = reportAnswerFacts(config, usage, governors, parts.teams)
  const fast = config.cache.enabled ? fastReads({ reports, tracing, clock, log, decisions, observe, facts }) : null
  // Its handlers read a body once they have admitted its caller (Admission.readBody), and invite it then.
  // Each listener's counts show from the start (0), so that a rate over them has a series to read.
  const bound = (listener: 'proxy' | 'admin', setting: string, max: number): ListenerBound => {
    for (const which of CLOSED_AT_BOUND) metrics.connectionsClosedAtBound.inc({ listener, which }, 0)
    return { listener, setting, max, closed: (which, count) => metrics.connectionsClosedAtBound.inc({ listener, which }, count), inForce: (n) => metrics.connectionsBound.set({ listener }, n) }
  }
  // What an answer names of a secret (SecretSet.scrubAnswer): a team's webhook secret by its form alone, never by value.
  const scrub = (text: string): string => parts.secrets.scrubAnswer(text)
  // An admin call sent here (the console's address typed with PORT for ADMIN_PORT) is told where it goes.
  // A call of its own after a base URL ending in / (//api/v1/…) is told so too, and any other
  // path what the listener serves.
  const proxyNotFound = (url: string) => {
    const path = pathOf(url)
    if (servedByAdminListener(path)) return new ProxyListenerPathError()
    return servedByProxyListener(afterEmptySegments(path) ?? '') ? new LeadingSlashesError() : new ProxyUnservedPathError()
  }
  const proxy = buildServer(config, log, failures, fast, { scrub, challenge: PROXY_CHALLENGE, notFound: proxyNotFound, connections: bound('proxy', 'server.maxConnections', config.server.maxConnections), rateOf: callerRate(admission), keyTeam: (headers) => parts.teams.runningTeam(headers), tracing, allow: (target) => allowOf(target, config.cache.enabled), refuseMethod: methodRefusal, bodyReader: 'handler', takesId, refusalHeaders: PROXY_ANSWER_HEADERS })
  // Every answer its router writes, the platform's passed on included, over their own. A
  // callback, not an async function: Fastify then makes no promise an answer for it.
  proxy.addHook('onSend', (_request, reply, payload, done) => {
    reply.headers(PROXY_ANSWER_HEADERS)
    done(null, payload)
  })
  refusalsObservedOn(proxy, refusalObserver(observe, tracing !== null))
  // No body is parsed on the proxy listener before its handler admits the caller:
  // /api/v1 handlers read it through Admission.readBody; any other path is a 404
  // without reading a byte of it.
  proxy.removeAllContentTypeParsers()
  proxy.addContentTypeParser('*', (_request, payload, done) => done(null, payload))
  await describeProxy(proxy, { ...config.ownership, reportFields: config.cache.reportFields }, () => listenerPort(proxy.server, config.port))
  const health = { tokens, redis, breaker, lifecycle, reloader: parts.reloader, platformFailing: parts.platformFailing, clock }
  await proxy.register(healthRoutes, { ...health, detail: false })
  await proxy.register(apiRoutes, { config, reports, jobs, clock, tracing, usage, answers, metrics, admission, client, decisions, failures, facts })
  answerHooks(proxy, { tracing, auditLog, audit: parts.audit, admission, observe })

  // A call of the proxy listener sent here (ADMIN_PORT given for PORT) is told where it goes:
  // the port the proxy listener is bound to (PORT=0 has it choose one), else the setting's.
  const proxyPort = () => listenerPort(proxy.server, config.port)
  const notFound = (url: string) => {
    const path = pathOf(url)
    if (servedByProxyListener(path)) return new AdminListenerPathError(proxyPort())
    // A call of its own after a base URL ending in / (//admin/status) is told so.
    const rest = afterEmptySegments(path)
    return rest !== null && (servedByAdminListener(rest) || HEALTH_PATHS.has(rest)) ? new LeadingSlashesError() : new NotFoundError()
  }
  const admin = buildServer(config, log, failures, null, { scrub, challenge: ADMIN_CHALLENGE, connections: bound('admin', 'admin.maxConnections', config.admin.maxConnections), refusalHeaders: ADMIN_ANSWER_HEADERS, notFound })
  // Every admin call's body is JSON: a text/plain one is refused as any other type is
  // (`body: must be application/json`), not read as a string its schema then refuses.
  admin.removeContentTypeParser('text/plain')
  // Fastify's JSON parser (secure-json-parse) reads every admin call's body; a body it
  // refuses says why: a prototype's key it holds is named (jsonRefusal), JSON as it is.
  const secureJson = admin.getDefaultJsonParser('error', 'error')
  admin.addContentTypeParser<string>('application/json', { parseAs: 'string' }, (request, text, done) => {
    secureJson(request, text, (err, value) => (err ? done(new BadRequestError(jsonRefusal(text))) : done(null, value)))
  })
  // QUERY, which no admin call takes, is bodyless to the router as WebDAV's methods are:
  // a 404 as theirs, not a 400 asking its content-type in Fastify's words.
  admin.addHttpMethod('QUERY', { hasBody: false, overrideExisting: true })
  // Before every route: a Host the listener does not answer to reads nothing of it.
  adminHostCheck(admin, { config, auditLog, clock }, (text) => admission.holdsSecret(text))
  // First: its document is made from every route registered after it.
  await describeAdmin(admin)
  await admin.register(healthRoutes, { ...health, detail: true })
  metricsRoute(admin, { metrics, tokens, governors, answers, usage })
  const { adminAuth, bus, teams, build, rateLimiter, logLevel, reloader, l1, audit, replicas, webhooks, tokenShares, consoleScriptsDir } = parts
  await admin.register(adminRoutes, {
    config, auditLog, clock, adminAuth, tokens, reports, redis, breaker, bus, teams, usage, keyUse, metrics, lifecycle, build, governors, rateLimiter, suspensions: parts.suspensions, secrets: parts.secrets,
    runtimeLevel: logLevel, client, reloader, l1, audit, replicas, webhooks, tokenShares,
  })
  await admin.register(consoleRoutes, consoleScriptsDir ? { scriptsDir: consoleScriptsDir } : {})
  await docsUi(admin, proxy, proxyPort)
  return { proxy, admin, memoBytes: () => knownUrls.bytes }
}
