import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from './context.js'
import type { PlatformClient } from '../platform/client/platform-client.js'
import { reportReads, type ReportReadParts } from './reads/report-route.js'
import { jobPaths, jobRoutes } from './reads/job-routes.js'
import type { Caller } from '../access/admission.js'
import { describeOnly, proxySchema } from './openapi/route-schemas.js'
import { proxyHandler } from './proxy.js'
import { FORWARDED_METHODS, methodRoutes } from './methods.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The admitted caller of an /api/v1 call; set by its handler through Admission. */
    caller: Caller | null
  }
}

/** What the /api/v1 scope reads: what its report routes read, and what the proxied calls read besides (usage, held answers, the platform client). */
export type ApiParts = ReportReadParts & Pick<GatewayContext, 'usage' | 'answers' | 'metrics'> & { client: PlatformClient }

/**
 * Everything under /api/v1/: report reads (cached), every other call of a forwarded method
 * (proxied), and the gateway's own answers to the other methods (methods.ts).
 * Each handler reads top to bottom through `Admission`, which decides for every entrance.
 */
export async function apiRoutes(app: FastifyInstance, { config, reports, jobs, clock, tracing, usage, answers, metrics, admission, client, decisions, failures, facts }: ApiParts): Promise<void> {
  app.decorateRequest('caller', null)
  // Bodies reach the handlers unread (compose/listeners.ts): a handler admits the caller (key, rate
  // limit) before it reads a byte of the body, through Admission.readBody.
  // Route schemas here only describe (http/openapi/): Admission checks, in the contract's order.
  app.setValidatorCompiler(describeOnly)

  const proxy = proxyHandler({ config, tracing, usage, clock, answers, metrics }, admission, client)
  await app.register(reportReads, { config, reports, jobs, clock, tracing, admission, decisions, failures, facts })
  if (config.cache.enabled) await app.register(jobRoutes, { jobs, reports, admission, clock, facts })
  await app.register(jobPaths, { admission, jobsOn: config.cache.enabled })
  app.route({ method: FORWARDED_METHODS, url: '/api/v1/*', schema: proxySchema({ bodyLimit: config.bodyLimit }), handler: proxy })
  methodRoutes(app, config.cache.enabled)
}
