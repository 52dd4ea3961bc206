import type { FastifyInstance } from 'fastify'
import type { TokenShares } from '../../platform/tokens/token-store.js'
import type { GatewayContext } from '../context.js'
import type { TeamReloader } from '../../access/team-reload.js'
import type { PlatformClient } from '../../platform/client/platform-client.js'
import type { Replicas } from '../../observe/replicas.js'
import type { LogLevel } from '../../observe/log-level.js'
import { adminAccess, UNSERVED } from './admin-access.js'
import { adminStatusRoutes, type AdminStatusParts } from './admin-status.js'
import { adminUsageRoutes } from './admin-usage.js'
import { adminTokenRoutes } from './admin-token.js'
import { adminCacheRoutes } from './admin-cache.js'
import { adminKeysRoutes } from './admin-keys.js'
import { adminSuspensionRoutes } from './admin-suspensions.js'
import { cacheEntryRoutes } from './cache-entry-route.js'
import { adminConfigRoutes } from './admin-config.js'
import { ADMIN_BODY_LIMIT, adminSchema, answer, reloadSchema } from './admin-schemas.js'
import { clusterRoutes } from './cluster-route.js'
import { adminJobsRoutes } from './admin-jobs.js'
import type { WebhookDeliveries } from '../../jobs/webhook-deliveries.js'
import { NotFoundError } from '../../errors.js'
import { writtenOnce } from '../openapi/written-once.js'
import { atPort, listenerPort } from '../openapi/document.js'
import { SERVES_NONE } from '../route-allow.js'

/**
 * What the /admin/* calls read: what the status view reads, and the parts the other calls
 * read besides. The log level comes as `runtimeLevel`: Fastify reads a plugin's `logLevel`
 * option as the level of the plugin's own logger.
 */
export type AdminParts = AdminStatusParts &
  Pick<GatewayContext, 'auditLog' | 'adminAuth' | 'reports' | 'bus' | 'usage' | 'keyUse' | 'suspensions' | 'secrets'> & {
    runtimeLevel: LogLevel
    client: PlatformClient
    reloader: TeamReloader
    replicas: Replicas
    webhooks: WebhookDeliveries
    tokenShares: TokenShares
  }

/** Admin answers name tokens' fingerprints, teams and keys: no cache keeps them, no page frames them. */
export const ADMIN_ANSWER_HEADERS: Readonly<Record<string, string>> = { 'cache-control': 'no-store', 'x-frame-options': 'DENY', 'x-content-type-options': 'nosniff' }

/** The admin listener's /admin/* calls (contract, "Admin listener"). */
export async function adminRoutes(app: FastifyInstance, parts: AdminParts): Promise<void> {
  // Each part below gets the parts it reads.
  const { config, auditLog, clock, adminAuth, tokens, reports, breaker, bus, teams, usage, keyUse, runtimeLevel, client, reloader, replicas, webhooks, tokenShares } = parts
  adminAccess(app, { adminAuth, auditLog, clock })
  // An admin call's body is a platform token (8192 characters at most, 48 KiB written all
  // in JSON escapes) or a log level: no call takes more than ADMIN_BODY_LIMIT, which bounds
  // what a token's holder can make the replica parse (a megabyte of nested JSON, as
  // bodyLimit lets the proxy listener's calls have, held it 100 to 500 ms a call).
  app.addHook('onRoute', (route) => {
    route.bodyLimit ??= ADMIN_BODY_LIMIT
  })

  app.addHook('onSend', async (_request, reply, payload) => {
    reply.headers(ADMIN_ANSWER_HEADERS)
    return payload
  })

  const reload = adminSchema({
    tag: 'teams',
    operationId: 'reloadTeams',
    summary: 'Reload the teams on every replica',
    description: 'Reads `TEAMS_FILE` or `CONFIG_FILE` again; a file that does not validate is refused whole and the running teams stay.',
    response: { 200: answer(reloadSchema, 'The teams now in use, and the keys added and removed.') },
    errors: {
      GW_RELOAD_UNAVAILABLE: 'Neither `CONFIG_FILE` nor `TEAMS_FILE` is set, or the gateway runs in demo mode (`teamsReload` in `GET /admin/status` says so beforehand).',
      GW_CONFIG_INVALID: 'A file does not validate, or both declare teams; the running teams stay. The message names the file variables, then the problems, each setting written in a file followed by its line there (`; line 7 of TEAMS_FILE (/etc/gateway/teams.yaml)`); `errors` lists the problems each apart, with its setting (`path`), `variable`, `file` and `line`.',
    },
  })
  app.post('/admin/reload', { schema: reload }, async (request) => reloader.reloadEverywhere(request.adminActor))

  // Behind the admin token like every /admin/* call: it describes the operators' calls to operators.
  const document = adminSchema({
    tag: 'description',
    operationId: 'getAdminDocument',
    summary: 'This document',
    response: { 200: { type: 'object', additionalProperties: true, description: 'This document: an OpenAPI 3.1 document.' } },
  })
  const written = writtenOnce(() => JSON.stringify(atPort(app.swagger(), listenerPort(app.server, config.admin.port))))
  app.get('/admin/openapi.json', { schema: document }, async (request, reply) => {
    reply.type('application/json; charset=utf-8')
    return written(request, reply)
  })

  await app.register(adminTokenRoutes, { tokens, auditLog, adminAuth, teams, config, client, tokenShares })
  await app.register(adminCacheRoutes, { reports, auditLog })
  await app.register(adminSuspensionRoutes, { suspensions: parts.suspensions, auditLog, secrets: parts.secrets })
  await app.register(cacheEntryRoutes, { config, teams, tokens, reports, breaker, clock, auditLog })
  // What only the status view reads.
  const { metrics, lifecycle, build, redis, governors, rateLimiter, l1, audit } = parts
  await app.register(adminStatusRoutes, { config, clock, metrics, lifecycle, build, tokens, governors, redis, breaker, teams, rateLimiter, suspensions: parts.suspensions, secrets: parts.secrets, l1, audit, reloader })
  await app.register(adminUsageRoutes, { clock, usage, teams })
  await app.register(adminKeysRoutes, { teams, keyUse, clock })
  await app.register(clusterRoutes, { clock, replicas })
  await app.register(adminJobsRoutes, { webhooks })
  await app.register(adminConfigRoutes, { config, runtimeLevel, bus, clock, replicas })

  // A path under /admin/ that no call above serves, in any method, is 404 here, inside this
  // plugin: behind the admin token and with the admin answers' headers, as every /admin/* answer
  // (adminAccess answers it once the token is known, its body unread).
  // It serves no method there: the `allow` of a 405 (route-allow.ts) names none of its methods.
  app.all(UNSERVED, { schema: { hide: true }, config: SERVES_NONE }, async () => {
    throw new NotFoundError()
  })
}
