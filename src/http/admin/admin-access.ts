import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { GatewayContext } from '../context.js'
import { AdminForbiddenError, AdminUnauthorizedError, AdminUnavailableError, BadRequestError } from '../../errors.js'
import { FailureLog } from '../../observe/failure-log.js'
import { hasBody } from '../../access/admission.js'
import type { AdminRole } from '../../config.js'
import { adminSchema, answer } from './admin-schemas.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The operator named by the admin token used (ADMIN_TOKENS_FILE; "admin": ADMIN_TOKEN; "viewer": ADMIN_VIEWER_TOKEN), for the audit log. */
    adminActor: string | null
    /** What that token may do. */
    adminRole: AdminRole | null
  }
}

/** The route of every path under /admin/ that no admin call serves: 404 (admin.ts). */
export const UNSERVED = '/admin/*'

/** The methods that change something: a viewer's token may send none of them. */
const READS = new Set(['GET', 'HEAD'])

const whoamiSchema = {
  type: 'object',
  required: ['name', 'role'],
  properties: {
    name: { type: 'string', description: 'Who the token is, as audit lines name them: `admin` (ADMIN_TOKEN), `viewer` (ADMIN_VIEWER_TOKEN), or a name of ADMIN_TOKENS_FILE.' },
    role: { type: 'string', enum: ['viewer', 'operator'], description: '`viewer`: reads only; `operator`: also changes (PUT, POST, DELETE).' },
  },
} as const

/**
 * Who may call /admin/*, and with what: a known admin token (401 otherwise, a flood of
 * refusals logged as one line), an operator's for a change (a viewer's is 403, audited),
 * and no body on a call that takes none (400), before anything of the call is read.
 * Registered inside adminRoutes, so it covers every /admin/* route and nothing else of
 * the listener; GET /admin/whoami says which token the caller holds (the console hides
 * a viewer's actions).
 */
export function adminAccess(app: FastifyInstance, { adminAuth, auditLog, clock }: Pick<GatewayContext, 'adminAuth' | 'auditLog' | 'clock'>): void {
  app.decorateRequest('adminActor', null)
  app.decorateRequest('adminRole', null)

  // A refused login is one line, not one per call it makes (the console asks several
  // things at once): refusals from one address for one reason within an interval are
  // counted, and the interval ends with one audit line giving their number.
  const refusals = new FailureLog({ log: auditLog, clock })
  app.addHook('onClose', async () => refusals.close())
  app.addHook('onRequest', async (request) => {
    if (!adminAuth.enabled) throw new AdminUnavailableError()
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')
    const actor = match ? adminAuth.verify(match[1] as string) : null
    if (actor === null) {
      const reason = match ? 'unknown token' : 'no bearer token'
      refusals.note('GW_UNAUTHORIZED', () =>
        auditLog.warn(
          { action: 'admin-auth', outcome: 'refused', source: request.ip, method: request.method, path: pathOf(request), reqId: request.id, reason },
          'admin call refused: missing or wrong admin token',
        ), `admin call from ${request.ip}: ${reason}`)
      throw new AdminUnauthorizedError()
    }
    request.adminActor = actor.name
    request.adminRole = actor.role
    // A path no admin call serves is 404 to every admin token: a viewer's change of one
    // is no refused change (nor would an operator's token do it).
    if (actor.role === 'viewer' && !READS.has(request.method) && request.routeOptions.url !== UNSERVED) {
      auditLog.warn(
        { action: 'admin-auth', outcome: 'forbidden', actor: actor.name, role: actor.role, source: request.ip, method: request.method, path: pathOf(request), reqId: request.id },
        'admin call refused: a viewer\'s token may not change anything',
      )
      throw new AdminForbiddenError(actor.name, `${request.method} ${pathOf(request)}`)
    }
    // A body sent to a call that takes none is a slip (`-d advertiserId=101` on a purge
    // of everything): refused unread, as an unknown parameter is. A path no call serves
    // is 404 whatever it carries.
    if (request.routeOptions.url !== UNSERVED && request.routeOptions.schema?.body === undefined && hasBody(request.headers)) {
      throw new BadRequestError(`body: ${request.method} ${pathOf(request)} takes no body; nothing was changed`)
    }
  })

  const whoami = adminSchema({ tag: 'state', operationId: 'whoami', summary: 'Who the admin token is, and its role', response: { 200: answer(whoamiSchema, 'The token\'s holder and role.') } })
  app.get('/admin/whoami', { schema: whoami }, async (request) => ({ name: request.adminActor, role: request.adminRole }))
}

function pathOf(request: FastifyRequest): string {
  return request.url.split('?')[0] as string
}
