import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../context.js'

/**
 * Liveness and readiness (contract, "Admin listener"). Ready while every credential
 * holds a token the platform has not refused; Redis being down only shows as degraded,
 * because a shared dependency in readiness would pull every replica at once.
 */
export async function healthRoutes(app: FastifyInstance, { ctx }: { ctx: GatewayContext }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }))

  app.get('/readyz', async (_request, reply) => {
    const tokens = Object.fromEntries(
      ctx.tokens.all().map((p) => [p.name, p.current() === null ? 'missing' : p.usable() ? 'ok' : 'rejected']),
    )
    const redis = ctx.redis === null ? 'not configured' : ctx.breaker?.state === 'closed' ? 'ok' : 'down'
    const ready = Object.values(tokens).every((s) => s === 'ok')
    const degraded = [...(redis === 'down' ? ['redis'] : []), ...Object.entries(tokens).filter(([, s]) => s !== 'ok').map(([n]) => `platformToken:${n}`)]
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', platformToken: tokens, redis, degraded })
  })
}
