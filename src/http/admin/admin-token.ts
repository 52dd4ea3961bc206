import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import type { GatewayContext } from '../context.js'
import { BadRequestError, TokenRejectedError, UpstreamError } from '../../errors.js'
import { fingerprint } from '../../observe/fingerprint.js'
import type { PlatformClient } from '../../platform/client/platform-client.js'
import { connectionFailure } from '../../platform/client/connection-failure.js'
import { probeStatus } from '../../platform/client/token-probe.js'
import type { TokenProvider } from '../../platform/tokens/token-provider.js'
import type { TokenShares } from '../../platform/tokens/token-store.js'
import { DEFAULT_CREDENTIAL, type Config } from '../../config.js'
import { tokenFault } from '../../config/sources.js'
import { ADMIN_BODY_TOO_LARGE, TOKEN_FORM, adminSchema, answer, credentialsSchema, tokenBody, tokenChangeSchema, tokenRefreshSchema, tokenViewSchema } from './admin-schemas.js'
import { assertStillAdmin } from './admin-access.js'

const CREDENTIAL = { name: { type: 'string', minLength: 1, maxLength: 64, description: 'A credential: `default`, or a name under `credentials:`.' } }
const NO_CREDENTIAL = { GW_NOT_FOUND: 'No credential of that name.' }

const PUT_TOKEN = {
  description:
    'Checks the token with the probe call (`platform.probe`), then uses it: with Redis, on every replica, replicas that start or restart later included, and no replica\'s own login replaces it until the platform refuses it or it is due for renewal; without Redis, on the replica called only, until it restarts (a token file reaches every replica and outlasts restarts). ' +
    'The token in use offered again changes nothing: no probe, `changed: false`.',
  body: tokenBody,
  response: { 200: answer(tokenChangeSchema, 'The token\'s view, and whether it changed.') },
  errors: {
    GW_BAD_REQUEST: 'The body is not `{"token": "…"}` with a plausible token, or the token is a secret the platform never gets (an admin token, a team key, `GATEWAY_SECRET`, a login\'s password or client secret), refused before any probe; the message names the field.',
    GW_PAYLOAD_TOO_LARGE: ADMIN_BODY_TOO_LARGE,
    GW_TOKEN_REJECTED: 'The probe call answered 401 or 403 to the offered token; the token in use stays.',
    GW_UPSTREAM: 'The probe call failed (no answer); the token was not changed.',
  },
}

const REFRESH = {
  description: 'Runs the password login again (the credential\'s token request).',
  response: { 200: answer(tokenRefreshSchema, 'The new token\'s view, and the replicas it reached.') },
  errors: {
    GW_BAD_REQUEST: 'The credential has no password login.',
    GW_PLATFORM_AUTH: 'The login failed; the token in use stays. A login the platform answered 429 is answered with `retry-after`, the seconds left of the login\'s own.',
  },
}

const TOKEN_VIEW = { 200: answer(tokenViewSchema, 'The token\'s view.') }

/**
 * The platform tokens of the credentials: read, replace (after the probe call), log in
 * again. Registered inside adminRoutes, behind its token check.
 */
export async function adminTokenRoutes(
  app: FastifyInstance,
  { tokens, auditLog, adminAuth, teams, config, client, tokenShares }: Pick<GatewayContext, 'tokens' | 'auditLog' | 'adminAuth' | 'teams' | 'config'> & { client: PlatformClient; tokenShares: TokenShares },
): Promise<void> {
  const providerOf = (request: FastifyRequest) => tokens.get((request.params as { name?: string }).name ?? DEFAULT_CREDENTIAL)

  const getToken = async (request: FastifyRequest) => tokenView(providerOf(request))
  const putToken = async (request: FastifyRequest) => {
    const provider = providerOf(request)
    // Not a secret of the gateway's until the platform takes it (provider.replace adds it):
    // a text the platform refused may be anything an operator pasted, and a secret's is
    // refused in every team's request, the team suspended (access/team-suspensions.ts).
    const token = (request.body as { token: string }).token.trim()
    // A token no authorization header carries as it is (`Bearer ` or quotes copied with it, a
    // space or a line break inside) is refused as PLATFORM_TOKEN and its file are, without a probe.
    const secret = neverSent(token, { adminAuth, teams, config })
    const fault = secret !== null ? null : token.length < 8 ? `must be ${TOKEN_FORM}` : tokenFault(token)
    if (secret !== null || fault !== null) {
      const err = new BadRequestError(secret !== null ? `token: is ${secret}, which is never sent to the platform; the token in use stays (the value is not shown)` : `token: ${fault}`)
      auditFailure(auditLog, request, provider, 'replace', err, null)
      throw err
    }
    const current = provider.current()
    if (current?.token === token) {
      auditLog.info({ action: 'replace', outcome: 'unchanged', credential: provider.name, fingerprint: current.fingerprint, actor: request.adminActor }, 'admin token replace: the offered token is the one in use; nothing changed')
      return { ...tokenView(provider), changed: false }
    }
    try {
      await probe(client, config.platform.probe, provider, token)
    } catch (err) {
      auditFailure(auditLog, request, provider, 'replace', err, fingerprint(token, config.gatewaySecret))
      throw err
    }
    // The probe may take the platform's whole timeout: the token that asked must still be an operator's.
    assertStillAdmin(request, { adminAuth, auditLog })
    const state = provider.replace(token, request.adminActor ?? undefined)
    return { ...tokenView(provider), changed: true, replicas: reached(await tokenShares.sharedChange(provider.name, state.version)) }
  }
  const refreshToken = async (request: FastifyRequest) => {
    const provider = providerOf(request)
    let version: number
    try {
      // Refused, as a login that fails is, with its audit line: every refused change is audited.
      if (!provider.hasLogin) throw new BadRequestError(`credential ${provider.name} has no password login to run again`)
      version = (await provider.refresh(request.adminActor ?? undefined)).version
    } catch (err) {
      auditFailure(auditLog, request, provider, 'refresh', err, null)
      // A login the platform throttled: when to try again is its retry-after's, as a caller's 502 says it.
      const busy = provider.loginBusySec()
      throw busy !== null && err instanceof Error ? Object.assign(err, { retryAfterSec: busy }) : err
    }
    return { ...tokenView(provider), replicas: reached(await tokenShares.sharedChange(provider.name, version)) }
  }

  const token = { tag: 'token' } as const
  app.get('/admin/token', { schema: adminSchema({ ...token, operationId: 'getToken', summary: 'The default credential\'s platform token, without the token', response: TOKEN_VIEW }) }, getToken)
  app.put('/admin/token', { schema: adminSchema({ ...token, operationId: 'putToken', summary: 'Replace the default credential\'s platform token', ...PUT_TOKEN }) }, putToken)
  app.post('/admin/token/refresh', { schema: adminSchema({ ...token, operationId: 'refreshToken', summary: 'Log the default credential in again', ...REFRESH }) }, refreshToken)
  app.get(
    '/admin/credentials',
    { schema: adminSchema({ ...token, operationId: 'getCredentials', summary: 'Every credential\'s platform token, without the tokens', response: { 200: answer(credentialsSchema, 'One view per credential, `default` first.') } }) },
    async () => ({ credentials: tokens.all().map((p) => ({ name: p.name, ...tokenView(p) })) }),
  )
  app.get(
    '/admin/credentials/:name/token',
    { schema: adminSchema({ ...token, operationId: 'getCredentialToken', summary: 'A credential\'s platform token, without the token', params: CREDENTIAL, response: TOKEN_VIEW, errors: NO_CREDENTIAL }) },
    getToken,
  )
  app.put(
    '/admin/credentials/:name/token',
    { schema: adminSchema({ ...token, operationId: 'putCredentialToken', summary: 'Replace a credential\'s platform token', params: CREDENTIAL, ...PUT_TOKEN, errors: { ...PUT_TOKEN.errors, ...NO_CREDENTIAL } }) },
    putToken,
  )
  app.post(
    '/admin/credentials/:name/token/refresh',
    { schema: adminSchema({ ...token, operationId: 'refreshCredentialToken', summary: 'Log a credential in again', params: CREDENTIAL, ...REFRESH, errors: { ...REFRESH.errors, ...NO_CREDENTIAL } }) },
    refreshToken,
  )
}

// A successful change is audited by the provider's 'change' event (compose/platform-parts.ts);
// a refused or failed admin attempt is audited here, with the offered token's fingerprint only.
function auditFailure(auditLog: Logger, request: FastifyRequest, provider: TokenProvider, action: 'replace' | 'refresh', err: unknown, offered: string | null): void {
  auditLog.warn(
    { action, outcome: 'refused', credential: provider.name, currentFingerprint: provider.current()?.fingerprint ?? null, offeredFingerprint: offered, actor: request.adminActor, reason: (err as Error).message },
    `admin token ${action} failed; the token was not changed`,
  )
}

/**
 * Which of the secrets the platform never gets `token` is (an admin token, a team key,
 * GATEWAY_SECRET, a login's password or client secret, a webhook's secret), as an operator
 * may paste one by mistake: the probe call would send it as the bearer. Null for any other
 * text, a platform token of another credential or one replaced included.
 */
function neverSent(token: string, { adminAuth, teams, config }: Pick<GatewayContext, 'adminAuth' | 'teams' | 'config'>): string | null {
  if (adminAuth.heldIn(token)) return 'an admin token'
  if (teams.holdsKey(token)) return 'a team key'
  if (teams.isWebhookSecret(token)) return "a team's webhook secret"
  const platformTokens = new Set(Object.values(config.credentials).map((c) => c.token))
  return config.secrets.some((s) => s === token && !platformTokens.has(s)) ? "a secret of the gateway's" : null
}

/** Where a token changed here reached, by its write to Redis (TokenShares.sharedChange): none made, taken, or not taken. */
function reached(shared: boolean | null): 'all' | 'this replica only' | 'this replica until Redis answers again' {
  return shared === null ? 'this replica only' : shared ? 'all' : 'this replica until Redis answers again'
}

function tokenView(provider: TokenProvider) {
  const { source, fingerprint: fp, obtainedAt, expiresAt, secondsLeft, usable } = provider.info()
  return { source, fingerprint: fp, obtainedAt, expiresAt, secondsLeft, usable }
}

// A token the platform refuses is never switched to: the configured probe
// call must not answer 401 or 403 to it.
async function probe(client: PlatformClient, call: Config['platform']['probe'], provider: TokenProvider, token: string): Promise<void> {
  let status: number | null
  try {
    status = await probeStatus(client, call, provider, token)
  } catch (err) {
    throw new UpstreamError(`the token check call failed (${connectionFailure((err as { cause?: unknown }).cause)}); the token was not changed`, { cause: err })
  }
  if (status === 401 || status === 403) throw new TokenRejectedError(`the probe call answered ${status}`)
}
