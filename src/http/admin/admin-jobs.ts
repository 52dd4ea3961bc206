import type { FastifyInstance } from 'fastify'
import type { WebhookDeliveries } from '../../jobs/webhook-deliveries.js'
import { JobsUnavailableError } from '../../errors.js'
import { adminSchema, answer } from './admin-schemas.js'

const text = (description: string) => ({ type: 'string', description })
const nullable = (type: string, description: string) => ({ type: [type, 'null'], description })

/** GET /admin/jobs: the pushes of ended report jobs to their teams' webhooks, from the outbox every replica shares. */
export const deliveriesSchema = {
  type: 'object',
  required: ['deliveries'],
  properties: {
    deliveries: {
      type: 'array',
      description: 'The latest deliveries of every team (at most 200), newest first, from the outbox every replica shares (with Redis): any replica may make an attempt of any.',
      items: {
        type: 'object',
        required: ['id', 'job', 'team', 'state', 'jobState', 'url', 'attempts', 'lastStatus', 'lastError', 'createdAt', 'nextAttemptAt', 'history'],
        additionalProperties: false,
        properties: {
          id: text('its `webhook-id`, the same on every attempt'),
          job: text('the job\'s id'),
          team: text('the job\'s team'),
          state: { type: 'string', enum: ['pending', 'delivered', 'failed'], description: '`pending` while it is tried (again); `delivered` once the receiver answered 2xx; `failed` once given up' },
          jobState: text('the job\'s state it tells: `done` or `failed`'),
          url: text('where it is POSTed: the origin (scheme, host, port) of the team\'s `webhook.url`, never its user, path, query or fragment, which may carry the receiver\'s own token'),
          attempts: { type: 'integer', description: 'requests made (a refused URL makes none)' },
          lastStatus: nullable('integer', 'the receiver\'s last HTTP status; null: no answer'),
          lastError: nullable('string', 'why the last attempt failed; null once delivered'),
          createdAt: { type: 'string', format: 'date-time', description: 'when the job ended and its delivery was recorded' },
          nextAttemptAt: { type: ['string', 'null'], format: 'date-time', description: 'when it is tried again; null once delivered or given up' },
          history: {
            type: 'array',
            description: 'its latest attempts (at most 30), oldest first',
            items: {
              type: 'object',
              required: ['at', 'replica', 'status', 'error', 'nextAttemptAt'],
              additionalProperties: false,
              properties: {
                at: { type: 'string', format: 'date-time', description: 'when the attempt ended' },
                replica: text('the replica that made it'),
                status: nullable('integer', 'the receiver\'s HTTP status; null: no answer'),
                error: nullable('string', 'why it failed; null when delivered'),
                nextAttemptAt: { type: ['string', 'null'], format: 'date-time', description: 'when the next attempt was due after it; null: none' },
              },
            },
          },
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
    description: 'The latest pushes of ended report jobs to their teams\' webhooks, of every replica: where, each attempt, the last answer, the next attempt. Never a secret nor a body.',
    response: { 200: answer(deliveriesSchema, 'The latest deliveries, newest first.') },
    errors: { GW_JOBS_UNAVAILABLE: 'The outbox is kept in Redis, which cannot be read now; `retry-after` says when to ask again.' },
  })
  app.get('/admin/jobs', { schema }, async () => {
    try {
      return { deliveries: await webhooks.list() }
    } catch (err) {
      throw Object.assign(new JobsUnavailableError({ cause: err }), { retryAfterSec: 1 })
    }
  })
}
