import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../context.js'
import { NoRunningTeamError } from '../../errors.js'
import { requestsInLastHour, KEY_USE_KEEP_MS } from '../../observe/key-use.js'
import { adminSchema, answer } from './admin-schemas.js'

const instant = (description: string) => ({ type: ['string', 'null'], format: 'date-time', description })

const keysSchema = {
  type: 'object',
  required: ['at', 'redis', 'complete', 'keys'],
  properties: {
    at: { type: 'string', format: 'date-time' },
    redis: { type: 'string', enum: ['ok', 'down', 'not configured'], description: 'Redis as this replica found it: without it, the use this replica saw alone.' },
    complete: { type: 'boolean', description: 'false: Redis is not configured or could not be read, and only this replica\'s use is counted.' },
    keys: {
      type: 'array',
      description: 'Every key of the running teams, by team then in the order of its `keys:`.',
      items: {
        type: 'object',
        required: ['team', 'id', 'createdAt', 'expiresAt', 'expired', 'lastUsedAt', 'lastUsed', 'requestsLastHour'],
        properties: {
          team: { type: 'string' },
          id: { type: 'string', description: 'The key\'s id (its `id`, or its hash\'s first 12 hex digits), as log lines and metrics name it; never the key or its hash.' },
          createdAt: instant('When the key was made: its entry\'s `createdAt` (`npm run keys -- new` writes it); null when the entry does not say.'),
          expiresAt: instant('From when the key is refused (401); null: never.'),
          expired: { type: 'boolean' },
          lastUsedAt: instant(`The last request with the key on any replica, within the last ${KEY_USE_KEEP_MS / 86_400_000} days; null: none seen.`),
          lastUsed: {
            type: 'array',
            description: 'Per replica that served the key, its last request with it, newest first (a replica writes its use every 30 s while the key is used).',
            items: { type: 'object', required: ['replica', 'at'], properties: { replica: { type: 'string' }, at: { type: 'string', format: 'date-time' } } },
          },
          requestsLastHour: { type: 'integer', minimum: 0, description: 'Requests with the key in the last hour, every replica.' },
        },
      },
    },
  },
} as const

const keysRoute = adminSchema({
  tag: 'teams',
  operationId: 'getKeys',
  summary: 'Every API key\'s life: made, expires, last used, requests in the last hour',
  description:
    'When an old key may be revoked: its last use on each replica (gathered through Redis, as the cluster view is) and its requests in the last hour. ' +
    'Never a key or its hash.',
  query: { team: { type: 'string', maxLength: 128, description: 'a running team (default: every team)' } },
  response: { 200: answer(keysSchema, 'The keys of the running teams.') },
  errors: { GW_NOT_FOUND: '`team` names no running team.' },
})

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/**
 * GET /admin/keys: the life of every API key of the running teams. Registered inside
 * adminRoutes, behind its token check.
 */
export async function adminKeysRoutes(app: FastifyInstance, { teams, keyUse, clock }: Pick<GatewayContext, 'teams' | 'keyUse' | 'clock'>): Promise<void> {
  app.get('/admin/keys', { schema: keysRoute }, async (request) => {
    const { team } = request.query as { team?: string }
    const listed = teams.teams.filter((t) => team === undefined || t.name === team)
    if (team !== undefined && listed.length === 0) throw new NoRunningTeamError(team)
    const use = await keyUse.gather()
    const now = clock.now()
    const keys = listed.flatMap((t) =>
      t.keys.map((k) => {
        const uses = use.byKey.get(k.id) ?? []
        return {
          team: t.name,
          id: k.id,
          createdAt: iso(k.createdAt),
          expiresAt: iso(k.expiresAt),
          expired: k.expiresAt !== null && now >= k.expiresAt,
          lastUsedAt: iso(uses[0]?.record.at ?? null),
          lastUsed: uses.map((u) => ({ replica: u.replica, at: iso(u.record.at) })),
          requestsLastHour: requestsInLastHour(uses.map((u) => u.record), now),
        }
      }),
    )
    return { at: iso(now), redis: use.redis, complete: use.redis === 'ok', keys }
  })
}
