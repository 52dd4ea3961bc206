import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { GatewayContext } from '../context.js'
import { AdminUnauthorizedError, AdminUnavailableError, BadRequestError, TokenRejectedError, UpstreamError } from '../../errors.js'
import { fingerprint } from '../../observe/fingerprint.js'
import { FailureLog } from '../../observe/failure-log.js'
import type { TeamReloader } from '../../access/team-reload.js'
import type { PlatformClient } from '../../platform/client/platform-client.js'
import { probeStatus } from '../../platform/client/token-probe.js'
import type { TokenProvider } from '../../platform/tokens/token-provider.js'
import { DEFAULT_CREDENTIAL } from '../../config.js'
import type { MemoryStore } from '../../cache/memory-store.js'
import type { AuditTrail } from '../../access/audit-trail.js'
import { adminStatusRoutes } from './admin-status.js'
import { adminUsageRoutes } from './admin-usage.js'
import { tokenBody } from './admin-schemas.js'
import { adminDocument } from '../openapi/admin-document.js'
import { clusterRoutes } from './cluster-route.js'
import type { Replicas } from '../../observe/replicas.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The operator named by the admin token used (ADMIN_TOKENS_FILE; "admin": ADMIN_TOKEN), for the audit log. */
    adminActor: string | null
  }
}

/** The admin listener's /admin/* calls (contract, "Admin listener"). */
export async function adminRoutes(
  app: FastifyInstance,
  { ctx, client, reloader, l1, audit, replicas }: { ctx: GatewayContext; client: PlatformClient; reloader: TeamReloader; l1: MemoryStore; audit: AuditTrail; replicas: Replicas },
): Promise<void> {
  app.decorateRequest('adminActor', null)

  // Admin answers name tokens' fingerprints, teams and keys: no cache keeps them, no page frames them.
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('cache-control', 'no-store').header('x-frame-options', 'DENY').header('x-content-type-options', 'nosniff')
    return payload
  })

  // A refused login is one line, not one per call it makes (the console asks three things
  // at once): refusals from one address for one reason within an interval are counted,
  // and the interval ends with one line giving their number.
  const refusals = new FailureLog({ log: ctx.log, clock: ctx.clock })
  app.addHook('onClose', async () => refusals.close())
  app.addHook('onRequest', async (request) => {
    if (!ctx.adminAuth.enabled) throw new AdminUnavailableError()
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')
    const actor = match ? ctx.adminAuth.verify(match[1] as string) : null
    if (actor === null) {
      const reason = match ? 'unknown token' : 'no bearer token'
      refusals.note('GW_UNAUTHORIZED', () =>
        ctx.log.warn(
          { kind: 'audit', action: 'admin-auth', outcome: 'refused', source: request.ip, method: request.method, path: request.url.split('?')[0], reqId: request.id, reason },
          'admin call refused: missing or wrong admin token',
        ), `admin call from ${request.ip}: ${reason}`)
      throw new AdminUnauthorizedError()
    }
    request.adminActor = actor
  })

  const providerOf = (request: FastifyRequest) => ctx.tokens.get((request.params as { name?: string }).name ?? DEFAULT_CREDENTIAL)

  const getToken = async (request: FastifyRequest) => tokenView(providerOf(request))
  const putToken = async (request: FastifyRequest) => {
    const provider = providerOf(request)
    const token = (request.body as { token: string }).token.trim()
    ctx.secrets.add(token)
    const current = provider.current()
    if (current?.token === token) {
      ctx.log.info({ kind: 'audit', action: 'replace', outcome: 'unchanged', credential: provider.name, fingerprint: current.fingerprint, actor: request.adminActor }, 'admin token replace: the offered token is the one in use; nothing changed')
      return { ...tokenView(provider), changed: false }
    }
    try {
      await probe(ctx, client, provider, token)
    } catch (err) {
      auditFailure(ctx, request, provider, 'replace', err, fingerprint(token))
      throw err
    }
    provider.replace(token, request.adminActor ?? undefined)
    return { ...tokenView(provider), changed: true }
  }
  const refreshToken = async (request: FastifyRequest) => {
    const provider = providerOf(request)
    if (!provider.hasLogin) throw new BadRequestError(`credential ${provider.name} has no password login to run again`)
    try {
      await provider.refresh(request.adminActor ?? undefined)
    } catch (err) {
      auditFailure(ctx, request, provider, 'refresh', err, null)
      throw err
    }
    return tokenView(provider)
  }

  app.get('/admin/token', getToken)
  app.put('/admin/token', { schema: { body: tokenBody } }, putToken)
  app.post('/admin/token/refresh', refreshToken)
  app.get('/admin/credentials', async () => ({ credentials: ctx.tokens.all().map((p) => ({ name: p.name, ...tokenView(p) })) }))
  app.get('/admin/credentials/:name/token', getToken)
  app.put('/admin/credentials/:name/token', { schema: { body: tokenBody } }, putToken)
  app.post('/admin/credentials/:name/token/refresh', refreshToken)

  app.delete('/admin/cache', async (request) => {
    const raw = (request.query as { advertiserId?: string }).advertiserId
    if (raw === undefined) {
      const dropped = await ctx.reports.purgeAll()
      ctx.log.info({ kind: 'audit', action: 'purge', scope: 'all', dropped, actor: request.adminActor }, 'report cache purged')
      return { purged: 'all', dropped }
    }
    if (!/^\d{1,15}$/.test(raw) || Number(raw) < 1) throw new BadRequestError('advertiserId: must be a positive integer')
    const advertiserId = Number(raw)
    const dropped = await ctx.reports.purgeAdvertiser(advertiserId)
    ctx.log.info({ kind: 'audit', action: 'purge', scope: 'advertiser', advertiserId, dropped, actor: request.adminActor }, 'report cache purged')
    return { purged: 'advertiser', advertiserId, dropped }
  })

  app.post('/admin/reload', async (request) => reloader.reloadEverywhere(request.adminActor))

  // Behind the admin token like every /admin/* call: it describes the operators' calls to operators.
  app.get('/admin/openapi.json', async () => adminDocument())

  await app.register(adminStatusRoutes, { ctx, l1, audit })
  await app.register(adminUsageRoutes, { ctx })
  await app.register(clusterRoutes, { ctx, replicas })
}

// A successful change is audited by the provider's 'change' event (compose/platform-parts.ts);
// a refused or failed admin attempt is audited here, with the offered token's fingerprint only.
function auditFailure(ctx: GatewayContext, request: FastifyRequest, provider: TokenProvider, action: 'replace' | 'refresh', err: unknown, offered: string | null): void {
  ctx.log.warn(
    { kind: 'audit', action, outcome: 'refused', credential: provider.name, currentFingerprint: provider.current()?.fingerprint ?? null, offeredFingerprint: offered, actor: request.adminActor, reason: (err as Error).message },
    `admin token ${action} failed; the token was not changed`,
  )
}

function tokenView(provider: TokenProvider) {
  const { source, fingerprint: fp, obtainedAt, expiresAt, secondsLeft, usable } = provider.info()
  return { source, fingerprint: fp, obtainedAt, expiresAt, secondsLeft, usable }
}

// A token the platform refuses is never switched to: the configured probe
// call must not answer 401 or 403 to it.
async function probe(ctx: GatewayContext, client: PlatformClient, provider: TokenProvider, token: string): Promise<void> {
  let status: number | null
  try {
    status = await probeStatus(client, ctx.config.platform.probe, provider, token)
  } catch (err) {
    throw new UpstreamError(`the token check call failed (${(err as { cause?: { code?: string } }).cause?.code ?? 'error'}); the token was not changed`, { cause: err })
  }
  if (status === 401 || status === 403) throw new TokenRejectedError(`the probe call answered ${status}`)
}
