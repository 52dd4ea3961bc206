import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from './context.js'
import { redisState } from '../redis/breaker.js'
import type { TeamReloader } from '../access/team-reload.js'

/** What `degraded` names while a replica's files do not validate and it runs older teams and admin tokens. */
export const TEAMS_RELOAD_REFUSED = 'teams-reload'

/** `degraded`'s entry for a replica whose reload is refused, or none. */
export function reloadDegraded(reloader: Pick<TeamReloader, 'refused'>): string[] {
  return reloader.refused ? [TEAMS_RELOAD_REFUSED] : []
}

/** An answer that tells a moment's state: no cache keeps it. */
export const NOT_KEPT = 'no-store'

/**
 * Liveness and readiness (contract, "Admin listener"). Unready
 * (503) only while this replica cannot serve at all: starting or shutting down. A
 * refused platform token, a platform whose latest calls failed (platform-failing.ts) and
 * Redis being down are shared by every replica: they are listed under `degraded` (and in
 * the metrics the alerts read), because making every replica unready at once would empty
 * the Service and stop cached reports too. So is a reload this replica refused: it serves
 * its running teams, and the operator who asked the reload elsewhere learns here (and in
 * the cluster view) which replica did not take it.
 * Each answer is this replica's state as it is asked: `cache-control: no-store`, so that
 * no cache in front answers a probe with a past state.
 *
 * On the proxy listener (`detail: false`) readiness is its status alone: that listener
 * answers anyone without a key, and the credentials' names (often a partner's or an
 * agency's), which of their tokens the platform refuses, and Redis's state are the
 * operator's, told by the admin listener's /readyz behind its host check. A balancer
 * reads the status code, the same on both.
 */
export async function healthRoutes(
  app: FastifyInstance,
  { tokens, redis, breaker, lifecycle, reloader, platformFailing, clock, detail }: Pick<GatewayContext, 'tokens' | 'redis' | 'breaker' | 'lifecycle' | 'platformFailing' | 'clock'> & { reloader: Pick<TeamReloader, 'refused'>; detail: boolean },
): Promise<void> {
  app.get('/healthz', async (_request, reply) => reply.header('cache-control', NOT_KEPT).send({ status: 'ok' }))

  app.get('/readyz', async (_request, reply) => {
    const { phase } = lifecycle
    const ready = phase === 'serving'
    const status = ready ? 'ready' : phase
    reply.code(ready ? 200 : 503).header('cache-control', NOT_KEPT)
    if (!detail) return reply.send({ status })
    const credentials = Object.fromEntries(
      tokens.all().map((p) => [p.name, p.current() === null ? 'missing' : p.usable() ? 'ok' : 'rejected']),
    )
    const state = redisState(redis, breaker)
    const degraded = [
      ...(state === 'down' ? ['redis'] : state === 'readonly' ? ['redis-readonly'] : []),
      ...Object.entries(credentials).filter(([, s]) => s !== 'ok').map(([n]) => `platformToken:${n}`),
      ...platformFailing.failing(clock.now()).map((n) => `platform:${n}`),
      ...reloadDegraded(reloader),
    ]
    return reply.send({ status, platformToken: credentials, redis: state, degraded })
  })
}
