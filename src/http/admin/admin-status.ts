import type { FastifyInstance } from 'fastify'
import type { MemoryStore } from '../../cache/memory-store.js'
import type { Config } from '../../config.js'
import type { GatewayContext } from '../context.js'
import { AUDIT_LINES, type AuditTrail } from '../../access/audit-trail.js'
import type { ReloadRefusal, TeamReloader } from '../../access/team-reload.js'
import { clientAddress, redisAddress } from '../../redis/client.js'
import { redisState } from '../../redis/breaker.js'
import { adminSchema, answer } from './admin-schemas.js'
import { withoutKeys } from '../../observe/key-shape.js'
import type { PlatformGovernors } from '../../platform/governor/platform-governors.js'

const nullable = (type: string) => ({ type: [type, 'null'] })
const counts = { type: 'object', additionalProperties: { type: 'number' } } as const

/** Properties of plain JSON types, each named by its type; `?` after it allows null too. */
function scalars(types: Record<string, 'string' | 'number' | 'boolean' | 'string?' | 'number?'>): Record<string, { type: string | string[] }> {
  return Object.fromEntries(Object.entries(types).map(([name, type]) => [name, type.endsWith('?') ? nullable(type.slice(0, -1)) : { type }]))
}

export const statusSchema = {
  type: 'object',
  required: ['at', 'phase', 'build', 'credentials', 'redis', 'cache', 'teams', 'teamsReload', 'governors'],
  properties: {
    at: { type: 'string' },
    phase: { type: 'string' },
    build: {
      type: 'object',
      properties: { version: { type: 'string' }, commit: { type: 'string' }, node: { type: 'string' }, startedAt: { type: 'string' }, uptimeSeconds: { type: 'number' } },
    },
    credentials: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          state: { type: 'string', enum: ['ok', 'rejected', 'missing'] },
          source: nullable('string'),
          fingerprint: nullable('string'),
          obtainedAt: nullable('string'),
          expiresAt: nullable('string'),
          secondsLeft: nullable('number'),
          login: { type: 'boolean' },
          pause: { type: ['object', 'null'], properties: { scope: { type: 'string' }, until: { type: 'string' } } },
        },
      },
    },
    redis: { type: 'object', properties: { state: { type: 'string', enum: ['ok', 'readonly', 'down', 'not configured'] }, address: { type: 'string' }, topology: { type: 'string' } } },
    cache: {
      type: 'object',
      properties: {
        enabled: { type: 'boolean' },
        lookups: counts,
        l1: { type: 'object', properties: { entries: { type: 'number' }, bytes: { type: 'number' }, maxBytes: { type: 'number' } } },
      },
    },
    teams: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          ...scalars({ name: 'string', credential: 'string', advertisers: 'string', write: 'boolean' }),
          keys: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, expiresAt: nullable('string') } } },
          rateLimit: {
            type: ['object', 'null'],
            properties: { max: { type: 'number' }, windowSec: { type: 'number' }, remaining: { type: 'number' }, resetSec: { type: 'number' } },
          },
          platformSecondsPerDay: { type: ['number', 'null'], description: 'The team\'s bound of platform-seconds a UTC day; null: none.' },
          suspendedUntil: {
            type: ['string', 'null'],
            description: "When the team's suspension ends (a request of its held a secret of the gateway's: every request with its keys is 403 `GW_TEAM_SUSPENDED`), as this replica knows it; `DELETE /admin/suspensions/{team}` lifts it. null: not suspended.",
          },
        },
      },
    },
    teamsReload: {
      type: 'object',
      description: 'Whether `POST /admin/reload` can read the teams again on this replica (the console offers it only then).',
      required: ['available', 'files', 'reason', 'refused'],
      properties: {
        available: { type: 'boolean' },
        files: { type: 'array', items: { type: 'string', enum: ['CONFIG_FILE', 'TEAMS_FILE'] }, description: 'The variables naming the files the teams are read from; empty when none.' },
        reason: { type: ['string', 'null'], description: 'Why the teams cannot be reloaded (`the teams come from no file (demo mode)`); null when they can.' },
        refused: {
          type: ['object', 'null'],
          description: 'The files\' last reload, refused: `since` when the running teams and admin tokens are not the files\' (a key revoked there still works here), and its `problems`, each with its file\'s line where one writes it, as `POST /admin/reload`\'s 422 says them; null while the running teams are the files\'.',
          required: ['since', 'problems'],
          properties: { since: { type: 'string' }, problems: { type: 'array', items: { type: 'string' } } },
        },
      },
    },
    governors: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          ...scalars({ credential: 'string', maxConcurrent: 'number', adaptive: 'boolean', limit: 'number', knee: 'number?', phase: 'string?', learner: 'boolean', latencyFloorMs: 'number?', queueLimit: 'number' }),
          ...scalars({ inFlight: 'number', queued: 'number', seatsHeld: 'number', pausedUntil: 'string?' }),
          permitsHeld: { type: 'number', deprecated: true, description: 'Deprecated: the same as `seatsHeld`, its name of the last release; removed in the next one.' },
          count: {
            type: 'object',
            description: 'The platform\'s count of the token\'s calls (Laravel\'s `x-ratelimit-limit` a window) as this replica shares it out: `limit` null where the platform writes none; `enforced` once it refused past it; `left` what is left of its window as this replica knows it (null: unknown); `windowSeconds` the counting window. `routes`: the same of each route throttled on its own (its answers name a smaller limit), shared out on that route.',
            properties: {
              limit: nullable('number'), enforced: { type: 'boolean' }, left: nullable('number'), windowSeconds: { type: 'number' },
              routes: { type: 'array', items: { type: 'object', properties: { route: { type: 'string' }, limit: nullable('number'), enforced: { type: 'boolean' }, left: nullable('number'), windowSeconds: { type: 'number' } } } },
            },
          },
          pauses: {
            type: 'array',
            items: { type: 'object', properties: { scope: { type: 'string' }, team: nullable('string'), route: nullable('string'), until: { type: 'string' } } },
          },
          teams: {
            type: 'array',
            items: {
              type: 'object',
              properties: scalars({ team: 'string', inFlight: 'number', waiting: 'number', share: 'number', maxConcurrent: 'number?', queue: 'number?', seatSeconds: 'number', counted: 'number', countedElsewhere: 'number', countShare: 'number' }),
            },
          },
          refusals: counts,
        },
      },
    },
  },
} as const

export const auditSchema = {
  type: 'object',
  properties: { lines: { type: 'array', items: { type: 'object', additionalProperties: true } } },
} as const

/** What the status view reads: this replica's phase and build, its credentials, Redis, cache, teams and governors, and the audit trail. */
export type AdminStatusParts = Pick<GatewayContext, 'config' | 'clock' | 'metrics' | 'lifecycle' | 'build' | 'tokens' | 'governors' | 'redis' | 'breaker' | 'teams' | 'rateLimiter' | 'suspensions' | 'secrets'> & {
  l1: MemoryStore
  audit: AuditTrail
  reloader: Pick<TeamReloader, 'availability' | 'refusal'>
}

/**
 * The read-only calls of the operations console: this replica's state in one
 * answer, and its last audit lines. Registered inside adminRoutes, behind its token check.
 */
export async function adminStatusRoutes(app: FastifyInstance, parts: AdminStatusParts): Promise<void> {
  const { config, clock, metrics, lifecycle, build, tokens, governors, redis, breaker, teams, rateLimiter, suspensions, secrets, l1, audit, reloader } = parts
  const description = 'Build, credentials, Redis, cache, teams (and whether they can be reloaded) and governors, as the operations console shows them; never a token or a password.'
  const status = adminSchema({ tag: 'state', operationId: 'getStatus', summary: 'This replica\'s state in one answer', description, response: { 200: answer(statusSchema, 'This replica\'s state.') } })
  app.get('/admin/status', { schema: status }, async () => {
    const now = clock.now()
    const suspended = new Map(suspensions.list().map((s) => [s.team, s.until]))
    const refused = await metrics.platformRefused.get()
    const lookups = await metrics.cacheRequestsCounter.get()
    return {
      at: new Date(now).toISOString(),
      phase: lifecycle.phase,
      build: {
        version: build.version,
        commit: build.commit,
        node: build.node,
        startedAt: new Date(build.startedAt).toISOString(),
        uptimeSeconds: Math.max(0, Math.round((now - build.startedAt) / 1000)),
      },
      credentials: tokens.all().map((p) => {
        const { source, fingerprint, obtainedAt, expiresAt, secondsLeft, usable } = p.info()
        const until = governors.views().find((g) => g.credential === p.name)?.pausedUntil ?? 0
        return {
          name: p.name,
          state: fingerprint === null ? 'missing' : usable ? 'ok' : 'rejected',
          source,
          fingerprint,
          obtainedAt,
          expiresAt,
          secondsLeft,
          login: p.hasLogin,
          pause: until > 0 ? { scope: 'credential', until: new Date(until).toISOString() } : null,
        }
      }),
      redis: {
        state: redisState(redis, breaker),
        // Behind Sentinels, the master they named last beside them, as the log lines say it: through a failover, which node serves.
        address: redis === null ? redisAddress(config.redis) : clientAddress(redis, config.redis),
        topology: topologyOf(config.redis),
      },
      cache: {
        enabled: config.cache.enabled,
        lookups: sumBy(lookups.values, 'result', () => true),
        l1: { entries: l1.size, bytes: l1.bytes, maxBytes: config.cache.l1MaxBytes },
      },
      teams: teams.teams.map((t) => {
        const rate = t.rateLimit ? rateLimiter.peek(t) : null
        const suspendedUntil = suspended.get(t.name)
        return {
          name: t.name,
          credential: t.credential,
          advertisers: t.advertisers === null ? '*' : [...t.advertisers].join(', '),
          write: t.write,
          keys: t.keys.map((k) => ({ id: k.id, expiresAt: k.expiresAt === null ? null : new Date(k.expiresAt).toISOString() })),
          rateLimit: t.rateLimit && rate ? { max: t.rateLimit.max, windowSec: t.rateLimit.windowMs / 1000, remaining: rate.remaining, resetSec: rate.resetSec } : null,
          platformSecondsPerDay: t.platformSecondsPerDay,
          suspendedUntil: suspendedUntil === undefined ? null : new Date(suspendedUntil).toISOString(),
        }
      }),
      teamsReload: { ...reloader.availability, refused: refusalView(reloader.refusal, (text) => secrets.scrubAnswer(text)) },
      governors: governors.views().map((g) => {
        const waiting = g.seats.waiting()
        const count = governors.countOf(g.credential)
        return {
          credential: g.credential,
          maxConcurrent: config.platform.maxConcurrent,
          adaptive: g.adaptive,
          limit: g.limit,
          knee: g.knee,
          phase: g.phase,
          learner: g.learner,
          latencyFloorMs: roundOrNull(g.floorMs),
          queueLimit: config.platform.queue,
          inFlight: g.inFlight,
          queued: g.queued,
          seatsHeld: g.seatsHeld,
          permitsHeld: g.seatsHeld,
          count: {
            limit: count?.limit ?? null, enforced: count?.enforced ?? false, left: count?.left ?? null, windowSeconds: (count?.windowMs ?? 0) / 1000,
            // Shown as the pauses' routes are: no team key.
            routes: governors.routeCountsOf(g.credential).map(({ route, view }) => ({ route: withoutKeys(route), limit: view.limit, enforced: view.enforced, left: view.left, windowSeconds: view.windowMs / 1000 })),
          },
          pausedUntil: g.pausedUntil > 0 ? new Date(g.pausedUntil).toISOString() : null,
          pauses: governors.pausesOf(g.credential).map((p) => ({
            scope: p.scope.kind,
            team: 'team' in p.scope ? p.scope.team : null,
            // A route is the callers' path: anything shaped like a team key in it is not shown, as in a log line.
            route: 'route' in p.scope ? withoutKeys(p.scope.route) : null,
            until: new Date(p.until).toISOString(),
          })),
          teams: teams.teams
            .filter((t) => t.credential === g.credential)
            .map((t) => ({
              team: t.name,
              inFlight: g.seats.running(t.name),
              waiting: waiting.get(t.name) ?? 0,
              share: Math.round(g.seats.shareOf(t.name) * 10) / 10,
              ...g.seats.limitsOf(t.name),
              seatSeconds: Math.round(g.seats.seatSeconds(t.name) * 10) / 10,
              ...countOf(count, t.name),
            })),
          refusals: sumBy(refused.values, 'reason', (labels) => labels.credential === g.credential),
        }
      }),
    }
  })

  const lines = answer(auditSchema, 'The log\'s JSON lines with `"kind":"audit"`, as they were logged.')
  const auditLines = adminSchema({
    tag: 'state',
    operationId: 'getAudit',
    summary: 'This replica\'s last audit lines, newest first',
    description: `The last ${AUDIT_LINES} of teams' writes (\`"action":"write"\`), the last ${AUDIT_LINES} of refused admin calls (\`"action":"admin-auth"\`: a viewer's change, a missing or wrong token; \`"action":"admin-host"\`: a Host the listener does not answer to) and the last ${AUDIT_LINES} of every other kind (operators' calls, reloads, token changes), kept apart so that neither a team writing often nor a flood of refused calls pushes out an operator's line; together, newest first.`,
    response: { 200: lines },
  })
  app.get('/admin/audit', { schema: auditLines }, async () => ({ lines: audit.lines() }))
}

type Labels = Partial<Record<string, string | number>>

/** A counter's values summed by one label, over the series `keep` accepts. */
function sumBy(values: { value: number; labels: Labels }[], label: string, keep: (labels: Labels) => boolean): Record<string, number> {
  const out: Record<string, number> = {}
  for (const { value, labels } of values) {
    if (!keep(labels)) continue
    const key = String(labels[label])
    out[key] = (out[key] ?? 0) + value
  }
  return out
}

function topologyOf(redis: Config['redis']): string {
  if (redis.cluster) return 'cluster'
  if (redis.sentinels) return 'sentinel'
  return redis.url ? 'single' : 'none'
}

function roundOrNull(ms: number | null): number | null {
  return ms === null ? null : Math.round(ms * 10) / 10
}

/** A team's calls in the platform's count window on this replica and, as last heard, on the others, and its share of the count (0 for a team not asking). */
function countOf(count: ReturnType<PlatformGovernors['countOf']>, team: string): { counted: number; countedElsewhere: number; countShare: number } {
  const mine = count?.teams.find((t) => t.team === team)
  return { counted: mine?.sent ?? 0, countedElsewhere: mine?.sentElsewhere ?? 0, countShare: Math.round((mine?.share ?? 0) * 10) / 10 }
}

/** A refused reload as the status says it: its problems with every secret's form scrubbed, as the 422 of the same reload writes them. */
export function refusalView(refusal: ReloadRefusal | null, scrub: (text: string) => string): { since: string; problems: string[] } | null {
  return refusal === null ? null : { since: new Date(refusal.since).toISOString(), problems: refusal.problems.map(scrub) }
}
