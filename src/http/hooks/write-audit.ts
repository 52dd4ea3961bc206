import type { FastifyRequest } from 'fastify'
import type { GatewayContext } from '../context.js'
import { isRead } from '../../access/team-auth.js'
import type { Admission } from '../../access/admission.js'
import { withoutKeyRuns } from '../../observe/key-runs.js'
import type { AuditTrail } from '../../access/audit-trail.js'

// Accounts named in one audit line, and the length of each as the caller wrote it.
const MAX_ACCOUNTS = 20
const MAX_ACCOUNT_CHARS = 32

/** What the audit line of a write reads: the log it goes to, the audit trail that keeps its copy, and the admission that read the call's accounts. */
export type WriteAuditParts = Pick<GatewayContext, 'auditLog'> & { audit: Pick<AuditTrail, 'keepWrite'>; admission: Admission }

/**
 * One `kind: "audit"` line per write call an admitted team sent: who (team,
 * key id), what (method, path, the accounts it named), how it ended (status) and the
 * request id to find the rest. Never the query, the body or the key. What the caller wrote
 * of them (path, accounts) holds no text that may be a team's webhook secret (key-runs.ts):
 * a viewer reads these lines, and the log's scrub of a secret by value would tell a guess.
 * The line goes to the log, and the trail keeps its own copy, which a login's short secret
 * in the team's text does not change (AuditTrail.keepWrite).
 */
export function auditWrite({ auditLog, audit, admission }: WriteAuditParts, request: FastifyRequest, status: number): void {
  const caller = request.caller
  if (!caller || isRead(request.method, caller.target.path)) return
  let accounts: string[] = []
  try {
    accounts = admission
      .named(request.method, caller)
      .accounts.slice(0, MAX_ACCOUNTS)
      .map((a) => withoutKeyRuns(String(a).slice(0, MAX_ACCOUNT_CHARS)))
  } catch {
    // A call the scope rules cannot read (a bad campaign id, an unlisted id path) was
    // refused for it, or sent by a team they do not apply to: it names no known account.
  }
  const line = { action: 'write', team: caller.team.name, keyId: caller.keyId, method: request.method, path: withoutKeyRuns(caller.target.path), accounts, status, reqId: request.id }
  auditLog.info(line, 'write call')
  audit.keepWrite(line, 'write call')
}
