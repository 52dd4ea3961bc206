import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../context.js'
import type { TeamReloader } from '../../access/team-reload.js'
import type { PlatformClient } from '../../platform/client/platform-client.js'
import type { MemoryStore } from '../../cache/memory-store.js'
import type { AuditTrail } from '../../access/audit-trail.js'
import type { Replicas } from '../../observe/replicas.js'
import { adminAccess } from './admin-access.js'
import { adminStatusRoutes } from './admin-status.js'
import { adminUsageRoutes } from './admin-usage.js'
import { adminTokenRoutes } from './admin-token.js'
import { adminCacheRoutes } from './admin-cache.js'
import { adminKeysRoutes } from './admin-keys.js'
import { cacheEntryRoutes } from './cache-entry-route.js'
import { adminConfigRoutes } from './admin-config.js'
import { adminSchema, answer, reloadSchema } from './admin-schemas.js'
import { clusterRoutes } from './cluster-route.js'

/** The admin listener's /admin/* calls (contract, "Admin listener"). */
export async function adminRoutes(
  app: FastifyInstance,
  { ctx, client, reloader, l1, audit, replicas }: { ctx: GatewayContext; client: PlatformClient; reloader: TeamReloader; l1: MemoryStore; audit: AuditTrail; replicas: Replicas },
): Promise<void> {
  // Each part below gets the parts of the context it reads; the status view reads most of it.
  const { config, auditLog, clock, tokens, reports, breaker, teams } = ctx
  adminAccess(app, { adminAuth: ctx.adminAuth, auditLog, clock })

  // Admin answers name tokens' fingerprints, teams and keys: no cache keeps them, no page frames them.
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('cache-control', 'no-store').header('x-frame-options', 'DENY').header('x-content-type-options', 'nosniff')
    return payload
  })

  const reload = adminSchema({
    tag: 'teams',
    operationId: 'reloadTeams',
    summary: 'Reload the teams on every replica',
    description: 'Reads `TEAMS_FILE` or `CONFIG_FILE` again; a file that does not validate is refused whole and the running teams stay.',
    response: { 200: answer(reloadSchema, 'The teams now in use, and the keys added and removed.') },
    errors: {
      GW_RELOAD_UNAVAILABLE: 'Neither `CONFIG_FILE` nor `TEAMS_FILE` is set, or the gateway runs in demo mode.',
      GW_CONFIG_INVALID: 'A file does not validate, or both declare teams; the running teams stay. The message names the file variables, then the problems.',
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
  app.get('/admin/openapi.json', { schema: document }, async () => app.swagger())

  await app.register(adminTokenRoutes, { tokens, secrets: ctx.secrets, auditLog, config, client })
  await app.register(adminCacheRoutes, { reports, auditLog })
  await app.register(cacheEntryRoutes, { config, tokens, reports, breaker, clock, auditLog })
  await app.register(adminStatusRoutes, { ctx, l1, audit })
  await app.register(adminUsageRoutes, { clock, usage: ctx.usage, teams })
  await app.register(adminKeysRoutes, { teams, keyUse: ctx.keyUse, clock })
  await app.register(clusterRoutes, { clock, replicas })
  await app.register(adminConfigRoutes, { config, runtimeLevel: ctx.logLevel, bus: ctx.bus, clock, replicas })
}
