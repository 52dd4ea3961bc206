import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../context.js'
import { AdminHosts } from '../../access/admin-hosts.js'
import { AdminHostError } from '../../errors.js'
import { FailureLog } from '../../observe/failure-log.js'
import { ADMIN_ANSWER_HEADERS } from './admin.js'
import { namesCheckedOn, targetHostOf, type NameCheck } from '../server.js'

/**
 * The admin listener answers only a `Host` it answers to (access/admin-hosts.ts): a page of
 * another site whose name was made to resolve to the listener's address (DNS rebinding)
 * reads nothing, not even what needs no token (/metrics, /readyz, /docs/json). A target in
 * absolute form (`GET http://host/path`) names a host too, read in place of Host (RFC 9112,
 * 3.2.2), and so does a CONNECT's (a host and port): every name a request gives, its
 * target's and its Host's, is checked, whatever its method (a CONNECT and a method Node's
 * parser does not know, answered before the router, included). Refused with 421
 * `GW_ADMIN_HOST` before any route, with the headers of every admin answer, audited as a
 * refused admin call: refusals from one address within an interval are counted, and the
 * interval ends with one line giving their number; a name given with a secret of the gateway's in it
 * (`holdsSecret`) is audited as `[REDACTED]`. The answer names no name: one written `[REDACTED]` when
 * it held a secret, and as sent otherwise, would answer a guess at it to anyone. Added to the listener before any route.
 */
export function adminHostCheck(app: FastifyInstance, { config, auditLog, clock }: Pick<GatewayContext, 'config' | 'auditLog' | 'clock'>, holdsSecret: (text: string) => boolean): void {
  const hosts = new AdminHosts([...config.admin.hosts, config.admin.host])
  const refusals = new FailureLog({ log: auditLog, clock })
  app.addHook('onClose', async () => refusals.close())
  const check: NameCheck = ({ hosts: given, target, source, method, path, reqId }) => {
    let name = hosts.refused(target)
    for (const host of given) name ??= hosts.refused(host)
    if (name === null) return null
    // A name cut to a DNS name's length may keep part of a secret that the whole held: such a name is repeated nowhere.
    if ([target, ...given].some((text) => text !== undefined && text !== null && holdsSecret(text))) name = '[REDACTED]'
    refusals.note('GW_ADMIN_HOST', () =>
      auditLog.warn(
        { action: 'admin-host', outcome: 'refused', source, method, path, host: name, reqId },
        'admin call refused: a Host the admin listener does not answer to (admin.hosts)',
      ), `admin call from ${source}`)
    return new AdminHostError()
  }
  // A CONNECT, a method Node's parser does not know: answered before the router, checked there.
  namesCheckedOn(app, check)
  app.addHook('onRequest', async (request, reply) => {
    const host = request.headers.host
    const refusal = check({ hosts: host === undefined ? [] : [host], target: targetHostOf(request.raw), source: request.ip, method: request.method, path: request.url.split('?')[0] as string, reqId: request.id })
    if (refusal === null) return
    // Refused as an admin call is: never kept, framed nor sniffed.
    reply.headers(ADMIN_ANSWER_HEADERS)
    throw refusal
  })
}
