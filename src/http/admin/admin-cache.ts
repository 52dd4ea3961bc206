import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../context.js'
import { RedisUnavailableError } from '../../errors.js'
import { adminSchema, answer, DRY_RUN, flagOn, purgeSchema } from './admin-schemas.js'

/** What a dry run counts, or Redis's refusal to say (503). */
export async function counted(count: Promise<number>): Promise<number> {
  try {
    return await count
  } catch (err) {
    throw new RedisUnavailableError('the purge was not tried', { cause: err })
  }
}

/**
 * The report cache's purges, each on every replica, each audited with the operator; as
 * a dry run they drop nothing and answer what they would drop. Registered inside
 * adminRoutes, behind its token check.
 */
export async function adminCacheRoutes(app: FastifyInstance, { reports, auditLog }: Pick<GatewayContext, 'reports' | 'auditLog'>): Promise<void> {
  const schema = adminSchema({
    tag: 'cache',
    operationId: 'purgeCache',
    summary: 'Drop report entries on every replica',
    description:
      'Every report entry, or one advertiser\'s with `advertiserId`; in Redis and in each replica\'s memory. Audited with the operator. ' +
      'A parameter the call does not take (`advertiserID`, `advertiser`) is 400 and drops nothing. `dryRun=1` drops nothing and answers what the purge would drop.',
    query: {
      advertiserId: { type: 'string', pattern: '^0*[1-9][0-9]*$', maxLength: 15, description: 'a positive integer, digits only (only this advertiser\'s entries are dropped)' },
      dryRun: DRY_RUN,
    },
    response: { 200: answer(purgeSchema, 'What was dropped, or with `dryRun` what would be.') },
    errors: {
      GW_BAD_REQUEST: '`advertiserId` is not a positive integer.',
      GW_REDIS_UNAVAILABLE: 'This replica dropped its entries in memory, but Redis could not be reached, or is out of memory and refused the purge\'s record (the message says whether its copies in Redis were dropped); repeat the call once Redis is back or has room. (A dry run: Redis could not be read.)',
    },
  })
  app.delete('/admin/cache', { schema }, async (request) => {
    const q = request.query as { advertiserId?: string; dryRun?: string }
    const advertiserId = q.advertiserId === undefined ? undefined : Number(q.advertiserId)
    const scope = advertiserId === undefined ? { purged: 'all' as const } : { purged: 'advertiser' as const, advertiserId }
    if (flagOn(q.dryRun)) {
      const wouldDrop = await counted(reports.wouldPurge(advertiserId))
      auditLog.info({ action: 'purge', outcome: 'dry-run', scope: scope.purged, advertiserId, wouldDrop, actor: request.adminActor }, 'report cache purge, dry run: nothing dropped')
      return { ...scope, dryRun: true, wouldDrop }
    }
    const dropped = advertiserId === undefined ? await reports.purgeAll() : await reports.purgeAdvertiser(advertiserId)
    auditLog.info({ action: 'purge', scope: scope.purged, advertiserId, dropped, actor: request.adminActor }, 'report cache purged')
    return { ...scope, dryRun: false, dropped }
  })
}
