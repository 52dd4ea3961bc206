import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from './context.js'
import type { PlatformClient } from '../platform/client/platform-client.js'
import { reportReads } from './reads/report-route.js'
import type { Admission, Caller } from '../access/admission.js'
import type { ReadDecisions } from '../reports/read-decision.js'
import { describeOnly, proxySchema } from './openapi/route-schemas.js'
import { proxyHandler } from './proxy.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The admitted caller of an /api/v1 call; set by its handler through Admission. */
    caller: Caller | null
  }
}

/**
 * Everything under /api/v1/: report reads (cached) and every other call (proxied).
 * Each handler reads top to bottom through `Admission`, which decides for every entrance.
 */
export async function apiRoutes(
  app: FastifyInstance,
  opts: { ctx: GatewayContext; admission: Admission; client: PlatformClient; decisions: ReadDecisions },
): Promise<void> {
  app.decorateRequest('caller', null)
  // Bodies reach the handlers unread (compose/listeners.ts): a handler admits the caller (key, rate
  // limit) before it reads a byte of the body, through Admission.readBody.
  // Route schemas here only describe (http/openapi/): Admission checks, in the contract's order.
  app.setValidatorCompiler(describeOnly)

  const proxy = proxyHandler(opts.ctx, opts.admission, opts.client)
  await app.register(reportReads, { ctx: opts.ctx, admission: opts.admission, decisions: opts.decisions })
  app.all('/api/v1/*', { schema: proxySchema({ bodyLimit: opts.ctx.config.bodyLimit }) }, proxy)
}
