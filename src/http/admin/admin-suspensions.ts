import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../context.js'
import { TEAM_NAME_PATTERN, TEAM_NAME_RULE } from '../../config/names.js'
import { adminSchema, answer } from './admin-schemas.js'

export const liftSchema = {
  type: 'object',
  required: ['team', 'lifted', 'replicas'],
  additionalProperties: false,
  properties: {
    team: { type: 'string' },
    lifted: { type: 'boolean', description: 'Whether the team was suspended on this replica; the lift reaches every replica either way.' },
    replicas: {
      type: 'string',
      enum: ['all', 'this replica only', 'this replica until Redis answers again'],
      description:
        'The replicas the lift reached: `all` (Redis took it: every replica, and those that start later), `this replica only` (no Redis), `this replica until Redis answers again` (Redis did not take it: the others keep the suspension until it answers, then the lift is written and reaches them).',
    },
  },
} as const

/**
 * DELETE /admin/suspensions/{team}: an operator lifts the suspension of a team whose
 * request held a secret of the gateway's (access/team-suspensions.ts), on every replica.
 * Registered inside adminRoutes, behind its token check (an operator's token: it changes).
 */
export async function adminSuspensionRoutes(app: FastifyInstance, { suspensions, auditLog, secrets }: Pick<GatewayContext, 'suspensions' | 'auditLog' | 'secrets'>): Promise<void> {
  const schema = adminSchema({
    tag: 'teams',
    operationId: 'liftSuspension',
    summary: 'Lift the suspension of a team on every replica',
    description:
      "A team whose request held a secret of the gateway's is refused `403 GW_TEAM_SUSPENDED` with every key, on every replica, for `limits.secretSuspension`; `GET /admin/status` gives each team's `suspendedUntil` (null for a team not suspended). " +
      'This call ends the suspension here, in Redis and on the other replicas; audited with the operator. Replace the secret the team sent first: the team knows it, or has narrowed it to what its request held.',
    params: { team: { type: 'string', pattern: TEAM_NAME_PATTERN, description: `a team's name (${TEAM_NAME_RULE})` } },
    response: { 200: answer(liftSchema, 'Whether the team was suspended here.') },
  })
  app.delete('/admin/suspensions/:team', { schema }, async (request) => {
    const { team } = request.params as { team: string }
    const { lifted, replicas } = await suspensions.lift(team)
    const where = replicas === 'all' ? 'on every replica' : replicas === 'this replica only' ? 'on this replica (no Redis)' : 'on this replica until Redis answers again, then on every replica'
    auditLog.info({ action: 'lift-suspension', team, lifted, replicas, actor: request.adminActor }, lifted ? `team suspension lifted ${where}` : `team suspension lift asked ${where}: the team was not suspended here`)
    // The name as the path gave it, but a secret of the gateway's or a team key pasted there:
    // the answer repeats no secret (the audit line is scrubbed with the log).
    return { team: secrets.scrubAnswer(team), lifted, replicas }
  })
}
