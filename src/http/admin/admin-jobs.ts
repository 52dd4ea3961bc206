import type { FastifyInstance } from 'fastify'
import type { WebhookDeliveries } from '../../jobs/webhook-deliveries.js'
import { adminSchema, answer } from './admin-schemas.js'

const text = (description: string) => ({ type: 'string', description })
const nullable = (type: string, description: string) => ({ type: [type, 'null'], description })

/** GET /admin/jobs: this replica's pushes of ended report jobs to their teams' webhooks. */
export const deliveriesSchema = {
  type: 'object',
  required: ['deliveries'],
  properties: {
    deliveries: {
      type: 'array',
      description: 'This replica\'s latest deliveries (at most 200), newest first: each is made by the replica whose run ended its job.',
      items: {
        type: 'object',
        required: ['id', 'job', 'team', 'state', 'jobState', 'url', 'attempts', 'lastStatus', 'lastError', 'createdAt', 'nextAttemptAt'],
        additionalProperties: false,
        properties: {
          id: text('its `webhook-id`, the same on every attempt'),
          job: text('the job\'s id'),
          team: text('the job\'s team'),
          state: { type: 'string', enum: ['pending', 'delivered', 'failed'], description: '`pending` while it is tried (again); `delivered` once the receiver answered 2xx; `failed` once given up' },
          jobState: text('the job\'s state it tells: `done` or `failed`'),
          url: text('where it is POSTed (the team\'s `webhook.url`)'),
          attempts: { type: 'integer', description: 'attempts made' },
          lastStatus: nullable('integer', 'the receiver\'s last HTTP status; null: no answer'),
          lastError: nullable('string', 'why the last attempt failed; null once delivered'),
          createdAt: { type: 'string', format: 'date-time', description: 'when the job ended here' },
          nextAttemptAt: { type: ['string', 'null'], format: 'date-time', description: 'when it is tried again; null once delivered or given up' },
        },
      },
    },
  },
} as const

/** The jobs' admin view (docs/jobs.md, "Pushed when done"). Registered inside adminRoutes, behind its token check; a viewer may read it. */
export async function adminJobsRoutes(app: FastifyInstance, { webhooks }: { webhooks: WebhookDeliveries }): Promise<void> {
  const schema = adminSchema({
    tag: 'state',
    operationId: 'getJobDeliveries',
    summary: 'Deliveries of ended report jobs to teams\' webhooks',
    description: 'This replica\'s latest pushes of ended report jobs to their teams\' webhooks: where, how many attempts, the last answer. Never a secret nor a body.',
    response: { 200: answer(deliveriesSchema, 'This replica\'s latest deliveries, newest first.') },
  })
  app.get('/admin/jobs', { schema }, async () => ({ deliveries: webhooks.list() }))
}
