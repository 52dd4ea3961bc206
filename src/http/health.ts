import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from './context.js'

/**
 * Liveness and readiness (contract, "Admin listener"). Unready
 * (503) only while this replica cannot serve at all: starting or shutting down. A
 * refused platform token and Redis being down are shared by every replica: they are
 * listed under `degraded` (and in the metrics the alerts read), because making every
 * replica unready at once would empty the Service and stop cached reports too.
 */
export async function healthRoutes(app: FastifyInstance, { ctx }: { ctx: GatewayContext }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }))

  app.get('/readyz', async (_request, reply) => {
    const tokens = Object.fromEntries(
      ctx.tokens.all().map((p) => [p.name, p.current() === null ? 'missing' : p.usable() ? 'ok' : 'rejected']),
    )
    // readonly: Redis answers reads and refuses writes (OOM, READONLY, MISCONF).
    const redis = ctx.redis === null ? 'not configured' : ctx.breaker?.state !== 'closed' ? 'down' : ctx.breaker.writable ? 'ok' : 'readonly'
    const { phase } = ctx.lifecycle
    const ready = phase === 'serving'
    const degraded = [...(redis === 'down' ? ['redis'] : redis === 'readonly' ? ['redis-readonly'] : []), ...Object.entries(tokens).filter(([, s]) => s !== 'ok').map(([n]) => `platformToken:${n}`)]
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : phase, platformToken: tokens, redis, degraded })
  })
}
