import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { GatewayContext } from '../context.js'
import { AdminForbiddenError, AdminGuessesError, AdminTokenFormError, AdminUnauthorizedError, AdminUnavailableError, BadRequestError, NotFoundError, TEAM_KEYS_ELSEWHERE } from '../../errors.js'
import { authorizationFormProblem } from '../../access/api-keys.js'
import { FailureLog } from '../../observe/failure-log.js'
import { hasBody } from '../../access/admission.js'
import type { AdminRole } from '../../config.js'
import type { AdminActor, AdminAuth } from '../../access/admin-auth.js'
import { ADMIN_GUESSES, AdminGuesses } from '../../access/admin-guesses.js'
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
 * Who may call /admin/*, and with what: a known admin token, from any address (without one:
 * 429 from an address that sent too many refused tokens, admin-guesses.ts; else 401, a
 * flood of refusals logged as one line), an operator's for a change (a viewer's is 403, audited),
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
  const guesses = new AdminGuesses(() => clock.now())
  app.addHook('onClose', async () => refusals.close())
  app.addHook('onRequest', async (request) => {
    if (!adminAuth.enabled) throw new AdminUnavailableError()
    const match = BEARER.exec(request.headers.authorization ?? '')
    const actor = actorOf(request, adminAuth)
    if (actor === null) {
      // An address past the bound of refused tokens is refused 429 until its window ends, but
      // only a call without a right token: operators behind one NAT or balancer share the
      // guesser's address. What bounds a guesser is then each token's length
      // (decisions/admin-guess-bound.md).
      const lockedFor = guesses.lockedFor(request.ip)
      if (lockedFor !== null) {
        const reason = `more than ${ADMIN_GUESSES} admin tokens refused within a minute`
        refusals.note('GW_RATE_LIMITED', () =>
          auditLog.warn(
            { action: 'admin-auth', outcome: 'refused', source: request.ip, method: request.method, path: pathOf(request), route: request.routeOptions.url, reqId: request.id, reason },
            'admin call refused: its address guessed at the admin token',
          ), `admin call from ${request.ip}: ${reason}`)
        throw Object.assign(new AdminGuessesError(request.ip, lockedFor), { retryAfterSec: lockedFor })
      }
      // A missing token is no guess (a browser's or a probe's call without one); a wrong one is.
      if (match) guesses.refused(request.ip)
      const reason = match ? 'unknown token' : 'no bearer token'
      refusals.note('GW_UNAUTHORIZED', () =>
        auditLog.warn(
          { action: 'admin-auth', outcome: 'refused', source: request.ip, method: request.method, path: pathOf(request), route: request.routeOptions.url, reqId: request.id, reason },
          'admin call refused: missing or wrong admin token',
        ), `admin call from ${request.ip}: ${reason}`)
      const problem = adminTokenFormProblem(request)
      throw problem === null ? new AdminUnauthorizedError() : new AdminTokenFormError(problem)
    }
    request.adminActor = actor.name
    request.adminRole = actor.role
    // A path no admin call serves is 404 to every admin token, whatever it carries: a
    // viewer's change of one is no refused change (nor would an operator's token do it), and
    // it is answered before Fastify would look for a parser of its body's type (a form,
    // text) and refuse that instead.
    if (request.routeOptions.url === UNSERVED) throw new NotFoundError()
    if (actor.role === 'viewer' && !READS.has(request.method)) {
      auditLog.warn(
        { action: 'admin-auth', outcome: 'forbidden', actor: actor.name, role: actor.role, source: request.ip, method: request.method, path: pathOf(request), route: request.routeOptions.url, reqId: request.id },
        'admin call refused: a viewer\'s token may not change anything',
      )
      throw new AdminForbiddenError(actor.name, `${request.method} ${request.routeOptions.url}`)
    }
    // A body sent to a call that takes none is a slip (`-d advertiserId=101` on a purge
    // of everything): refused unread, as an unknown parameter is.
    if (request.routeOptions.schema?.body === undefined) {
      if (hasBody(request.headers)) throw new BadRequestError(`body: ${request.method} ${pathOf(request)} takes no body; nothing was changed`)
      // No body sent: a content-type with it (a client's default header, an operator's curl
      // alias) labels nothing, and Fastify would parse the nothing as JSON and refuse it.
      // The proxy listener reads such a call as sent without a body too.
      delete request.raw.headers['content-type']
    }
  })

  // Once the body is read (it may come long after the head): the token as the running tokens know it now.
  app.addHook('preHandler', async (request) => assertStillAdmin(request, { adminAuth, auditLog }))

  const whoami = adminSchema({ tag: 'state', operationId: 'whoami', summary: 'Who the admin token is, and its role', response: { 200: answer(whoamiSchema, 'The token\'s holder and role.') } })
  app.get('/admin/whoami', { schema: whoami }, async (request) => ({ name: request.adminActor, role: request.adminRole }))
}

const BEARER = /^Bearer\s+(\S+)\s*$/i

/**
 * Why a refused admin call's headers present no admin token in the form the listener reads
 * (none, a team's `x-api-key` form, a scheme other than Bearer); null for a Bearer of one
 * word, a wrong token, of which nothing more is said than that team keys go to the proxy
 * listener (AdminUnauthorizedError), as to an `x-api-key`. No value is repeated.
 */
function adminTokenFormProblem(request: FastifyRequest): string | null {
  const auth = request.headers.authorization ?? ''
  if (auth.trim() !== '') return authorizationFormProblem(auth, 'the admin token')
  return request.headers['x-api-key'] === undefined ? 'none given' : `x-api-key is not read by the admin listener (${TEAM_KEYS_ELSEWHERE})`
}

/** Who the request's admin token is, as the running admin tokens know it now; null: none of them. */
function actorOf(request: FastifyRequest, adminAuth: AdminAuth): AdminActor | null {
  const match = BEARER.exec(request.headers.authorization ?? '')
  return match ? adminAuth.verify(match[1] as string) : null
}

/**
 * An admin call admitted earlier goes on only while its token does what it did when the
 * call was admitted: a reload that removed the token (401) or made it a viewer's (403 for
 * a change) while the call's body came, or while it waited (a new platform token's probe
 * call), refuses it before anything changes, audited as a refusal. Asked once the body is
 * read (every admin call) and before a change is made after a wait.
 */
export function assertStillAdmin(request: FastifyRequest, { adminAuth, auditLog }: Pick<GatewayContext, 'adminAuth' | 'auditLog'>): void {
  const actor = actorOf(request, adminAuth)
  const changes = !READS.has(request.method) && request.routeOptions.url !== UNSERVED
  if (actor !== null && actor.name === request.adminActor && (actor.role === 'operator' || !changes)) return
  const reason = actor === null ? 'its token was removed while the call was under way' : 'its token was made a viewer\'s or another operator\'s while the call was under way'
  auditLog.warn({ action: 'admin-auth', outcome: 'refused', actor: request.adminActor, source: request.ip, method: request.method, path: pathOf(request), route: request.routeOptions.url, reqId: request.id, reason }, `admin call refused: ${reason}; nothing was changed`)
  if (actor === null || actor.name !== request.adminActor) throw new AdminUnauthorizedError()
  throw new AdminForbiddenError(actor.name, `${request.method} ${request.routeOptions.url}`)
}

function pathOf(request: FastifyRequest): string {
  return request.url.split('?')[0] as string
}
