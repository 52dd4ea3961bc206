import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../context.js'
import { AdminHosts } from '../../access/admin-hosts.js'
import { AdminHostError } from '../../errors.js'
import { FailureLog } from '../../observe/failure-log.js'
import { ADMIN_ANSWER_HEADERS } from './admin.js'
import { targetHostOf } from '../server.js'

/**
 * The admin listener answers only a `Host` it answers to (access/admin-hosts.ts): a page of
 * another site whose name was made to resolve to the listener's address (DNS rebinding)
 * reads nothing, not even what needs no token (/metrics, /readyz, /docs/json). A target in
 * absolute form (`GET http://host/path`) names a host too, read in place of Host (RFC 9112,
 * 3.2.2): every name a request gives, its target's and its Host's, is checked. Refused
 * with 421 `GW_ADMIN_HOST` before any route, with the headers of every admin answer, audited as a refused admin call: refusals
 * from one address within an interval are counted, and the interval ends with one line
 * giving their number. Added to the listener before any route.
 */
export function adminHostCheck(app: FastifyInstance, { config, auditLog, clock }: Pick<GatewayContext, 'config' | 'auditLog' | 'clock'>): void {
  const hosts = new AdminHosts([...config.admin.hosts, config.admin.host])
  const refusals = new FailureLog({ log: auditLog, clock })
  app.addHook('onClose', async () => refusals.close())
  app.addHook('onRequest', async (request, reply) => {
    const name = hosts.refused(targetHostOf(request.raw)) ?? hosts.refused(request.headers.host)
    if (name === null) return
    refusals.note('GW_ADMIN_HOST', () =>
      auditLog.warn(
        { action: 'admin-host', outcome: 'refused', source: request.ip, method: request.method, path: request.url.split('?')[0], host: name, reqId: request.id },
        'admin call refused: a Host the admin listener does not answer to (admin.hosts)',
      ), `admin call from ${request.ip}`)
    // Refused as an admin call is: never kept, framed nor sniffed.
    reply.headers(ADMIN_ANSWER_HEADERS)
    throw new AdminHostError(name)
  })
}
