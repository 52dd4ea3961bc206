import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../context.js'
import type { History, HistoryView } from '../../observe/history.js'
import type { Announcement, Replicas } from '../../observe/replicas.js'
import type { Clock } from '../../clock.js'
import type { TeamReloader } from '../../access/team-reload.js'
import { reloadDegraded } from '../health.js'
import { adminSchema, answer } from './admin-schemas.js'

const series = (type: 'number' | 'integer') => ({ type: 'array', items: { type: [type, 'null'] } }) as const
const counts = series('integer')
const values = series('number')

/** A replica's last hour (observe/history.ts): series of one value per 10-second bucket, oldest first. */
const historySchema = {
  type: 'object',
  required: ['bucketSeconds', 'start', 'requests', 'statuses', 'reportReads', 'hits', 'platformCalls', 'latencyP50Ms', 'latencyP99Ms', 'credentials', 'teams'],
  properties: {
    bucketSeconds: { type: 'number' },
    start: { type: 'number', description: 'epoch ms of the oldest bucket' },
    requests: counts,
    statuses: { type: 'object', properties: { '2xx': counts, '3xx': counts, '4xx': counts, '5xx': counts } },
    reportReads: counts,
    hits: counts,
    platformCalls: counts,
    latencyP50Ms: values,
    latencyP99Ms: values,
    credentials: {
      type: 'array',
      items: { type: 'object', properties: { credential: { type: 'string' }, inFlight: values, waiting: values, limit: values, latencyFloorMs: values } },
    },
    teams: {
      type: 'array',
      items: { type: 'object', properties: { team: { type: 'string' }, tooManyRequests: counts, errors: counts } },
    },
  },
} as const

export const clusterSchema = {
  type: 'object',
  required: ['at', 'redis', 'complete', 'replicas'],
  properties: {
    at: { type: 'string' },
    redis: { type: 'string', enum: ['ok', 'down', 'not configured'] },
    complete: { type: 'boolean', description: 'false: Redis is not configured or could not be read, and only this replica is listed' },
    note: { type: ['string', 'null'] },
    replicas: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'self', 'ready', 'gone', 'history'],
        properties: {
          id: { type: 'string' },
          self: { type: 'boolean' },
          version: { type: 'string' },
          commit: { type: 'string' },
          node: { type: 'string' },
          startedAt: { type: 'string' },
          uptimeSeconds: { type: 'number' },
          phase: { type: 'string' },
          ready: { type: 'boolean' },
          logLevel: { type: 'string', description: 'The log level in force on the replica (LOG_LEVEL, or as PUT /admin/log-level set it).' },
          inFlight: { type: 'number' },
          waiting: { type: 'number' },
          degraded: { type: 'array', items: { type: 'string' }, description: 'As its /readyz names them (`redis`, `redis-readonly`, `platformToken:<credential>`, `teams-reload`), and `paused:<credential>` for a credential the platform paused.' },
          at: { type: 'string' },
          stoppedAt: { type: 'string', description: 'In a replica\'s last announcement, as it stopped cleanly.' },
          gone: {
            type: ['object', 'null'],
            required: ['how', 'lastSeen'],
            description: 'null: live. Else how it left (`stopped`: a clean stop; `vanished`: it stopped announcing itself without one: crashed, killed, cut off from Redis) and its last announcement; a gone replica is listed for an hour, with its history, and is not `ready`.',
            properties: { how: { type: 'string', enum: ['stopped', 'vanished'] }, lastSeen: { type: 'string' } },
          },
          history: historySchema,
        },
      },
    },
  },
} as const

/** This replica's state as it announces it (observe/replicas.ts), dated `at` (Redis' clock as this replica reads it, when it has Redis). */
export function replicaState(
  ctx: Pick<GatewayContext, 'clock' | 'governors' | 'breaker' | 'tokens' | 'lifecycle' | 'build' | 'log' | 'platformFailing'> & { reloader: Pick<TeamReloader, 'refused'> },
  id: string,
  at: number = ctx.clock.now(),
): Announcement {
  const now = ctx.clock.now()
  let inFlight = 0
  let waiting = 0
  const paused: string[] = []
  for (const g of ctx.governors.views()) {
    inFlight += g.inFlight
    waiting += g.queued
    if (g.pausedUntil > 0) paused.push(`paused:${g.credential}`)
  }
  const redis = ctx.breaker === null ? [] : ctx.breaker.state !== 'closed' ? ['redis'] : ctx.breaker.writable ? [] : ['redis-readonly']
  const tokens = ctx.tokens.all().filter((p) => !p.usable() || p.current() === null).map((p) => `platformToken:${p.name}`)
  const { phase } = ctx.lifecycle
  return {
    id,
    version: ctx.build.version,
    commit: ctx.build.commit,
    node: ctx.build.node,
    startedAt: new Date(ctx.build.startedAt).toISOString(),
    uptimeSeconds: Math.max(0, Math.round((now - ctx.build.startedAt) / 1000)),
    phase,
    ready: phase === 'serving',
    logLevel: ctx.log.level,
    inFlight,
    waiting,
    degraded: [...redis, ...tokens, ...ctx.platformFailing.failing(now).map((n) => `platform:${n}`), ...paused, ...reloadDegraded(ctx.reloader)],
    at: new Date(at).toISOString(),
  }
}

/** This replica's last hour with the gauges read now: the newest bucket has them even when the bucket began a moment ago. */
export function replicaHistory(history: History, now: number): HistoryView {
  history.sampleNow()
  return history.view(now)
}

const NOTES = {
  'not configured': 'Redis is not configured: this replica only (each replica keeps its own history).',
  down: 'Redis could not be read: this replica only; the others are not listed until it answers again.',
} as const

/**
 * GET /admin/cluster: every replica of the last hour (their announcements in Redis),
 * live or gone, with its last hour, this replica's taken as it answers. Registered inside adminRoutes, behind its token check.
 */
export async function clusterRoutes(app: FastifyInstance, { clock, replicas }: { clock: Clock; replicas: Replicas }): Promise<void> {
  const replicasNow = answer(clusterSchema, 'The replicas that announced themselves in Redis in the last hour, live or gone (this one only without Redis).')
  const schema = adminSchema({ tag: 'state', operationId: 'getCluster', summary: 'Every replica of the last hour, live or gone, and its last hour', response: { 200: replicasNow } })
  app.get('/admin/cluster', { schema }, async () => {
    const view = await replicas.cluster()
    return { at: new Date(clock.now()).toISOString(), ...view, note: view.redis === 'ok' ? null : NOTES[view.redis] }
  })
}
