import { randomBytes } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { MAIN_PARENT_ID } from './accounts.js'
import { laravelRequest } from './laravel-request.js'
import { sendJson } from './replies.js'
import type { SandboxState } from './state.js'

// The password grant as Laravel Passport (league/oauth2-server) answers it,
// checked in its order: grant type, then client, then user.

interface OAuthFailure {
  status: number
  body: { error: string; error_description: string; hint?: string; message: string }
}

const INVALID_REQUEST = 'The request is missing a required parameter, includes an invalid parameter value, includes a parameter more than once, or is otherwise malformed.'

/** `failed`: answers the request as a failure set for the login does, or undefined to let the route answer. */
export function oauthRoute(app: FastifyInstance, state: SandboxState, failed: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>): void {
  app.post('/oauth/token', { preHandler: async (request, reply) => failed(request, reply) }, (request, reply) => {
    const body = Buffer.isBuffer(request.body) ? request.body : null
    const failure = refusal(laravelRequest({ method: request.method, url: request.url, headers: request.headers, body }).input, state)
    if (failure !== undefined) {
      sendJson(reply, failure.status, failure.body)
      return
    }
    sendJson(reply, 200, {
      token_type: 'Bearer',
      expires_in: state.tokenTtlSeconds,
      access_token: state.tokens.issue(MAIN_PARENT_ID, state.tokenTtlSeconds),
      // Never redeemed here: the gateway logs in again instead of refreshing.
      refresh_token: randomBytes(96).toString('hex'),
    })
  })
}

function refusal(body: Record<string, unknown>, { grantType, credentials }: SandboxState): OAuthFailure | undefined {
  if (body.grant_type !== grantType) {
    const description = 'The authorization grant type is not supported by the authorization server.'
    return failure(400, 'unsupported_grant_type', description, 'Check that all required parameters have been provided')
  }
  const clientId = numeric(body.client_id)
  if (clientId === undefined) return failure(400, 'invalid_request', INVALID_REQUEST, 'Check the `client_id` parameter')
  if (clientId !== credentials.clientId || body.client_secret !== credentials.clientSecret) {
    return failure(401, 'invalid_client', 'Client authentication failed')
  }
  const missing = (['username', 'password'] as const).find((field) => typeof body[field] !== 'string' || body[field] === '')
  if (missing !== undefined) return failure(400, 'invalid_request', INVALID_REQUEST, `Check the \`${missing}\` parameter`)
  if (body.username !== credentials.username || body.password !== credentials.password) {
    return failure(400, 'invalid_grant', 'The user credentials were incorrect.')
  }
  return undefined
}

/** client_id is a number; form posts and lenient clients send it as a string. */
function numeric(value: unknown): number | undefined {
  if (typeof value === 'number') return value
  return typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : undefined
}

function failure(status: number, error: string, description: string, hint?: string): OAuthFailure {
  return { status, body: { error, error_description: description, ...(hint === undefined ? {} : { hint }), message: description } }
}
