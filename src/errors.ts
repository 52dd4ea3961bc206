import createError from '@fastify/error'

// Every error the gateway itself answers with (contract, "Errors"). Handlers throw
// these; Fastify's serializer gives the contract's JSON shape.

export const BadQueryError = createError<[string, { cause?: unknown }?]>('GW_BAD_QUERY', '%s', 400)
export const UnauthorizedError = createError<[string?]>('GW_UNAUTHORIZED', 'missing, unknown or revoked API key', 401)
export const KeyExpiredError = createError<[string, string]>('GW_UNAUTHORIZED', 'API key %s expired at %s; ask for a new key', 401)
export const ConfigRefusedError = createError<[string]>('GW_CONFIG_INVALID', 'the new configuration was refused, the running teams stay: %s', 422)
export const ReloadUnavailableError = createError<[string]>('GW_RELOAD_UNAVAILABLE', 'teams cannot be reloaded: %s', 409)
export const ForbiddenError = createError<[string, { cause?: unknown }?]>('GW_FORBIDDEN', '%s', 403)
export const NotFoundError = createError('GW_NOT_FOUND', 'not found', 404)
export const RateLimitedError = createError<[number]>('GW_RATE_LIMITED', 'rate limit reached; retry in %d s', 429)
export const PlatformAuthError = createError<[string, { cause?: unknown }?]>('GW_PLATFORM_AUTH', 'the platform refused the gateway token: %s', 502)
// A 401 the probe call does not confirm: the platform refused this one call (a route behind
// another guard, say), not the gateway's token, which stays in use. Nothing in it is the
// caller's key's fault.
export const PlatformRefusedError = createError<[string]>('GW_PLATFORM_REFUSED', 'the platform refused this call (401) although it accepts the gateway token: %s', 502)
export const UpstreamError = createError<[string, { cause?: unknown }?]>('GW_UPSTREAM', 'the platform failed: %s', 502)
export const UpstreamTimeoutError = createError('GW_UPSTREAM_TIMEOUT', 'the platform did not answer in time', 504)
export const AdminUnavailableError = createError('GW_ADMIN_DISABLED', 'admin calls are disabled: no ADMIN_TOKEN or ADMIN_TOKENS_FILE is configured', 503)
export const AdminUnauthorizedError = createError('GW_UNAUTHORIZED', 'missing or wrong admin token', 401)
export const TokenRejectedError = createError<[string, { cause?: unknown }?]>('GW_TOKEN_REJECTED', 'the platform rejected the new token: %s', 422)
export const TokenLoginError = createError<[string, { cause?: unknown }?]>('GW_PLATFORM_AUTH', 'platform login failed: %s', 502)
export const UnknownCredentialError = createError<[string, { cause?: unknown }?]>('GW_NOT_FOUND', 'no credential named %s', 404)
export const UnknownTeamError = createError<[string]>('GW_NOT_FOUND', 'no team named %s: it is not in the running teams and has no usage in the range', 404)
export const PurgeIncompleteError = createError<[string, { cause?: unknown }?]>(
  'GW_REDIS_UNAVAILABLE',
  'this replica dropped its in-process entries, but Redis is unavailable: %s',
  503,
)
export const UsageUnavailableError = createError<[string]>('GW_REDIS_UNAVAILABLE', 'usage totals are kept in Redis: %s', 503)
export const BadRequestError = createError<[string, { cause?: unknown }?]>('GW_BAD_REQUEST', '%s', 400)
export const RequestTimeoutError = createError('GW_REQUEST_TIMEOUT', 'the request was not received in time', 408)
export const ShuttingDownError = createError('GW_SHUTTING_DOWN', 'this replica is shutting down; retry on another', 503)
export const PayloadTooLargeError = createError<[number]>('GW_PAYLOAD_TOO_LARGE', 'the request body is larger than the limit of %d bytes', 413)
export const OverloadedError = createError<[string]>('GW_OVERLOADED', 'too many calls waiting for the platform: %s', 503)

export const allErrors = {
  BadQueryError,
  UnauthorizedError,
  KeyExpiredError,
  ConfigRefusedError,
  ReloadUnavailableError,
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  PlatformAuthError,
  PlatformRefusedError,
  UpstreamError,
  UpstreamTimeoutError,
  AdminUnavailableError,
  AdminUnauthorizedError,
  TokenRejectedError,
  TokenLoginError,
  UnknownCredentialError,
  BadRequestError,
  PayloadTooLargeError,
  RequestTimeoutError,
  PurgeIncompleteError,
  OverloadedError,
  UsageUnavailableError,
  ShuttingDownError,
}
