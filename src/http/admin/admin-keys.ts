import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../context.js'
import { NoRunningTeamError } from '../../errors.js'
import { requestsInLastHour, KEY_USE_KEEP_MS, type RemovedKey, type RemovedKeyRecord, type ReplicaKeyUse } from '../../observe/key-use.js'
import { keyEnd } from '../../access/team-auth.js'
import type { TeamKey } from '../../config.js'
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
      description:
        'Every key of the running teams, by team then in the order of its `keys:`; then the keys removed in the last ' +
        `${KEY_USE_KEEP_MS / 86_400_000} days (\`state: removed\`), by team, the last removed first.`,
      items: {
        type: 'object',
        required: ['team', 'id', 'lineage', 'replaces', 'successor', 'graceUntil', 'state', 'removedAt', 'createdAt', 'expiresAt', 'expired', 'lastUsedAt', 'lastUsed', 'requestsLastHour'],
        properties: {
          team: { type: 'string' },
          id: { type: 'string', description: 'The key\'s id (its `id`, or its hash\'s first 12 hex digits), as log lines and metrics name it; never the key or its hash.' },
          lineage: { type: 'string', description: 'The id of the first key of the line this key continues: its own id, unless a rotation (`npm run keys -- rotate`) made it a successor.' },
          replaces: { type: ['string', 'null'], description: 'The id of the key this one replaced in a rotation; null: none.' },
          successor: { type: ['string', 'null'], description: 'The id of the key that replaces this one; null: none. Its 401, once its grace has ended, names it.' },
          graceUntil: instant('A rotated key\'s grace: it works until then, then is 401 naming its successor; null: no grace (not rotated, or it works until its expiry).'),
          state: {
            type: 'string',
            enum: ['active', 'grace', 'ended', 'removed'],
            description:
              '`active`: in use; `grace`: replaced by its successor, still working; `ended`: refused (expired, or its grace over) and still in the teams file; ' +
              `\`removed\`: no longer in the running teams, listed ${KEY_USE_KEEP_MS / 86_400_000} days after its removal with its last use.`,
          },
          removedAt: instant('When a reload removed the key (the first replica\'s); null for a running key, and for a removed key whose removal no running replica saw (it is listed from its recorded use).'),
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
  summary: 'Every API key\'s life: made, rotated, expires, last used, requests in the last hour; removed keys for 30 days',
  description:
    'When an old key may be revoked: its last use on each replica (gathered through Redis, as the cluster view is) and its requests in the last hour; ' +
    'a rotated key\'s successor and grace; a removed key with its last use, for 30 days after its removal. Never a key or its hash.',
  query: { team: { type: 'string', maxLength: 128, description: 'a running team, or one whose keys were removed in the last 30 days (default: every team)' } },
  response: { 200: answer(keysSchema, 'The keys of the running teams, then the keys removed in the last 30 days.') },
  errors: { GW_NOT_FOUND: '`team` names no running team, nor one with a key removed in the last 30 days.' },
})

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

type Line = Pick<TeamKey, 'id' | 'lineage' | 'replaces' | 'successor' | 'graceUntil'>

/** A key's place in its line of keys, as the answer gives it. */
function lineOf(k: Line) {
  return { id: k.id, lineage: k.lineage, replaces: k.replaces, successor: k.successor, graceUntil: iso(k.graceUntil) }
}

/** A running key's state: refused from its end on, else in its grace when a successor replaces it, else active. */
function stateOf(k: TeamKey, now: number): 'active' | 'grace' | 'ended' {
  const end = keyEnd(k)
  if (end !== null && now >= end) return 'ended'
  return k.successor === null ? 'active' : 'grace'
}

/**
 * The keys of the last 30 days that no running team holds: those a reload removed, and
 * those whose removal no running replica saw (every replica started with the new teams),
 * known from a use recorded with their team. By team, the last removed first (a removal
 * not seen, last).
 */
function removedKeys(removed: Map<string, RemovedKeyRecord>, byKey: Map<string, ReplicaKeyUse[]>, running: ReadonlySet<string>): (RemovedKey & { removedAt: number | null })[] {
  const keys: (RemovedKey & { removedAt: number | null })[] = [...removed.values()].filter((k) => !running.has(k.id))
  for (const [id, uses] of byKey) {
    const team = uses.find((u) => u.record.team !== undefined)?.record.team
    if (running.has(id) || removed.has(id) || team === undefined) continue
    keys.push({ team, id, lineage: id, replaces: null, successor: null, graceUntil: null, createdAt: null, expiresAt: null, removedAt: null })
  }
  return keys.sort((a, b) => (a.team === b.team ? (b.removedAt ?? -Infinity) - (a.removedAt ?? -Infinity) || a.id.localeCompare(b.id) : a.team < b.team ? -1 : 1))
}

/**
 * GET /admin/keys: the life of every API key of the running teams. Registered inside
 * adminRoutes, behind its token check.
 */
export async function adminKeysRoutes(app: FastifyInstance, { teams, keyUse, clock }: Pick<GatewayContext, 'teams' | 'keyUse' | 'clock'>): Promise<void> {
  app.get('/admin/keys', { schema: keysRoute }, async (request) => {
    const { team } = request.query as { team?: string }
    const use = await keyUse.gather()
    const now = clock.now()
    const running = new Set(teams.teams.flatMap((t) => t.keys.map((k) => k.id)))
    const life = (uses: ReplicaKeyUse[]) => ({
      lastUsedAt: iso(uses[0]?.record.at ?? null),
      lastUsed: uses.map((u) => ({ replica: u.replica, at: iso(u.record.at) })),
      requestsLastHour: requestsInLastHour(uses.map((u) => u.record), now),
    })
    const listed = teams.teams.flatMap((t) =>
      team !== undefined && t.name !== team
        ? []
        : t.keys.map((k) => ({
            team: t.name,
            ...lineOf(k),
            state: stateOf(k, now),
            removedAt: null,
            createdAt: iso(k.createdAt),
            expiresAt: iso(k.expiresAt),
            expired: k.expiresAt !== null && now >= k.expiresAt,
            ...life(use.byKey.get(k.id) ?? []),
          })),
    )
    const removed = removedKeys(use.removed, use.byKey, running)
      .filter((k) => team === undefined || k.team === team)
      .map((k) => ({
        team: k.team,
        ...lineOf(k),
        state: 'removed' as const,
        removedAt: iso(k.removedAt),
        createdAt: iso(k.createdAt),
        expiresAt: iso(k.expiresAt),
        expired: k.expiresAt !== null && now >= k.expiresAt,
        ...life(use.byKey.get(k.id) ?? []),
      }))
    if (team !== undefined && listed.length === 0 && removed.length === 0 && !teams.teams.some((t) => t.name === team)) throw new NoRunningTeamError()
    return { at: iso(now), redis: use.redis, complete: use.redis === 'ok', keys: [...listed, ...removed] }
  })
}
