import createError from '@fastify/error'

// What the proxy listener serves, named by its 404s for paths it does not serve.
const PROXY_LISTENER_PATHS = 'this is the proxy listener (/api/v1/*, /openapi.json, /healthz, /readyz)'
/**
 * Where a team's key goes, in the admin listener's 401s: said to any token that is no admin
 * token, and to any x-api-key, whatever it holds, so that it confirms no team key.
 */
export const TEAM_KEYS_ELSEWHERE = 'team API keys are for the proxy listener (/api/v1/*), not the admin listener'

// Every error the gateway itself answers with (contract, "Errors"). Handlers throw
// these; Fastify's serializer gives the contract's JSON shape. They are defined in this
// one object, so that what reads the catalogue (the OpenAPI document's error codes, the
// tests) sees every one of them; each is exported by its name below.
//
// Redis's failures are answered in the gateway's words: what is unavailable and what was
// (not) done. The driver's error is the cause, for the log line only (its words may name
// Redis's address or topology, and mean nothing to the caller): these errors have no
// place for it in their message.
export const allErrors = {
  BadQueryError: createError<[string, { cause?: unknown }?]>('GW_BAD_QUERY', '%s', 400),
  // A key in a right form that no running team holds: what to do, the same words whatever the key, so they answer no guess.
  UnauthorizedError: createError<[string?]>('GW_UNAUTHORIZED', "missing, unknown or revoked API key: no team of this gateway holds it; send the key your team was given, whole (a demo mode key lasts one run of the gateway), or ask the gateway's operators for one", 401),
  // Headers that present no key in a form the gateway reads: what is wrong with their form (access/api-keys.ts keyFormProblem), then the forms it reads.
  KeyFormError: createError<[string]>('GW_UNAUTHORIZED', 'missing, unknown or revoked API key: %s; send the key as x-api-key: <key> or authorization: Bearer <key>', 401),
  KeyExpiredError: createError<[string, string]>('GW_UNAUTHORIZED', 'API key %s expired at %s; ask for a new key', 401),
  // A rotated key past its grace: the id of the key that replaced it, never a key.
  KeyReplacedError: createError<[string, string, string, string]>('GW_UNAUTHORIZED', 'API key %s was replaced by %s: its grace ended at %s; use the key %s (your team was given it)', 401),
  ConfigRefusedError: createError<[string]>('GW_CONFIG_INVALID', 'the new configuration was refused, the running teams stay: %s', 422),
  ReloadUnavailableError: createError<[string]>('GW_RELOAD_UNAVAILABLE', 'teams cannot be reloaded: %s', 409),
  ForbiddenError: createError<[string, { cause?: unknown }?]>('GW_FORBIDDEN', '%s', 403),
  // Every key of a team whose request held a secret of the gateway's (access/team-suspensions.ts): the team, then the seconds left.
  TeamSuspendedError: createError<[string, number]>('GW_TEAM_SUSPENDED', "team %s is suspended: a request of its held a secret of the gateway's (an admin or platform credential), which no team may send; every request with its keys is refused for %d s more, unless an operator lifts it", 403),
  NotFoundError: createError('GW_NOT_FOUND', 'not found', 404),
  // A call of the proxy listener sent to the admin listener: where it goes (the proxy listener's port).
  AdminListenerPathError: createError<[number]>('GW_NOT_FOUND', 'not found: this is the admin listener (/admin/*, /console, /metrics, /healthz, /readyz, /docs); calls under /api/ are served by the proxy listener, port %d', 404),
  // A call of the admin listener sent to the proxy listener (http/listener-paths.ts): where it
  // goes, by the settings' names and defaults, never the admin listener's address in force.
  ProxyListenerPathError: createError('GW_NOT_FOUND', `not found: ${PROXY_LISTENER_PATHS}; /admin/*, /console, /metrics and /docs are served by the admin listener (ADMIN_HOST:ADMIN_PORT, 127.0.0.1:8081 unless set)`, 404),
  // A listener's path after empty segments (//api/v1/…, //admin/…: http/listener-paths.ts): a base URL ending in /, every call's path after it.
  LeadingSlashesError: createError('GW_NOT_FOUND', "not found: the path begins // (an empty segment: a base URL ending in / with the call's path after it): write the base URL without its trailing /", 404),
  // Any other path outside /api/v1/ on the proxy listener (a base URL without /api/v1, with a path
  // prefix of an ingress's, /api/v2/, /API/V1/, /%61pi/v1/ which the router decodes into the
  // proxy's route: access/request-target.ts): what the listener serves, never the path, the
  // same for the token request's path as for any other.
  ProxyUnservedPathError: createError('GW_NOT_FOUND', `not found: ${PROXY_LISTENER_PATHS}: a platform call's path begins /api/v1/, in lower case (/api/v1/report/campaigns/get)`, 404),
  // A path under /api/v1/api/ (access/request-target.ts): a base URL given with /api/v1, every call's path after it.
  RepeatedBaseError: createError('GW_NOT_FOUND', "not found: the path begins /api/v1/api/, the gateway's /api/v1 twice (a base URL given with /api/v1, which every call's path begins with): give the gateway's origin alone, http://host:port", 404),
  // A path under /api/v1/ refused for its spelling (access/path-safety.ts unsafeSpelling): what it holds, never the path.
  UnsafePathError: createError<[string]>('GW_NOT_FOUND', "not found: the path holds %s, which a server on the way could read as another path, and is sent nowhere; write the platform's path as it is: each / and . plain, no segment empty, . or ..", 404),
  MethodNotAllowedError: createError<[string, string]>('GW_METHOD_NOT_ALLOWED', '%s is never sent to the platform; under /api/v1/ the gateway takes %s', 405),
  // The same refusal on a listener that forwards nothing (the admin listener): what the path takes there, or that no call has it.
  PathMethodNotAllowedError: createError<[string, string]>('GW_METHOD_NOT_ALLOWED', '%s is not a method of this listener at this path: %s', 405),
  RateLimitedError: createError<[number]>('GW_RATE_LIMITED', 'rate limit reached; retry in %d s', 429),
  // A team's bound of platform-seconds a UTC day (teams.<name>.platformSecondsPerDay): cached copies only until the day ends.
  PlatformTimeSpentError: createError<[string, number]>('GW_PLATFORM_TIME_SPENT', 'team %s has spent its platform-seconds of the day (UTC); only cached copies are answered; retry in %d s', 429),
  PlatformAuthError: createError<[string, { cause?: unknown }?]>('GW_PLATFORM_AUTH', 'the platform refused the gateway token: %s', 502),
  // A 401 the probe call does not confirm: the platform refused this one call (a route behind
  // another guard, say), not the gateway's token, which stays in use. Nothing in it is the
  // caller's key's fault.
  PlatformRefusedError: createError<[string]>('GW_PLATFORM_REFUSED', 'the platform refused this call (401) although it accepts the gateway token: %s', 502),
  UpstreamError: createError<[string, { cause?: unknown }?]>('GW_UPSTREAM', 'the platform failed: %s', 502),
  UpstreamTimeoutError: createError('GW_UPSTREAM_TIMEOUT', 'the platform did not answer in time', 504),
  DeadlineError: createError<[string]>('GW_UPSTREAM_TIMEOUT', 'not sent to the platform: %s', 504),
  AdminUnavailableError: createError('GW_ADMIN_DISABLED', 'admin calls are disabled: no admin token is configured; set ADMIN_TOKEN, ADMIN_VIEWER_TOKEN (or their _FILE forms) or ADMIN_TOKENS_FILE', 503),
  AdminUnauthorizedError: createError('GW_UNAUTHORIZED', `missing or wrong admin token: it is none of this gateway's admin tokens; ${TEAM_KEYS_ELSEWHERE}`, 401),
  // An admin call whose headers present no admin token in the form the listener reads: what is wrong with their form.
  AdminTokenFormError: createError<[string]>('GW_UNAUTHORIZED', 'missing or wrong admin token: %s; send authorization: Bearer <admin token>', 401),
  AdminGuessesError: createError<[string, number]>('GW_RATE_LIMITED', 'too many admin tokens refused from %s: its calls without a right admin token are refused for %d s', 429),
  // A Host the admin listener does not answer to (admin.hosts), not named: an echo redacted where the name held a secret of the gateway's would answer a guess at it.
  AdminHostError: createError('GW_ADMIN_HOST', 'the admin listener does not answer to the name this request gave in its Host (or its target) (a page of another site can make its own name resolve to this address); to call it by that name, add the name to admin.hosts (ADMIN_HOSTS); an IP address or localhost is always answered', 421),
  AdminForbiddenError: createError<[string, string]>('GW_FORBIDDEN', 'the admin token of %s is a viewer\'s: it may read, not change (%s needs an operator\'s token); nothing was changed', 403),
  TokenRejectedError: createError<[string, { cause?: unknown }?]>('GW_TOKEN_REJECTED', 'the platform rejected the new token: %s', 422),
  TokenLoginError: createError<[string, { cause?: unknown }?]>('GW_PLATFORM_AUTH', 'platform login failed: %s', 502),
  UnknownCredentialError: createError('GW_NOT_FOUND', 'no credential of the name this call gave (GET /admin/credentials lists them)', 404),
  UnknownTeamError: createError('GW_NOT_FOUND', 'no team of the name this call gave: it is not in the running teams and has no usage in the range', 404),
  NoRunningTeamError: createError('GW_NOT_FOUND', 'no team of the name this call gave among the running teams, nor with a key removed in the last 30 days', 404),
  NotCachedError: createError('GW_NOT_FOUND', 'no copy of the report this URL asks is cached, under any credential', 404),
  NoReplicaError: createError<[string]>('GW_NOT_FOUND', 'no live replica named %s (GET /admin/cluster lists them); nothing was changed', 404),
  PurgeIncompleteError: createError<[{ cause?: unknown }?]>(
    'GW_REDIS_UNAVAILABLE',
    'Redis is unavailable: this replica dropped its in-process entries, but the purge may not have reached Redis and the other replicas; repeat it',
    503,
  ),
  // `%s`: what became of the purge's copies in Redis, then what a repeat does.
  PurgeUnrecordedError: createError<[string, { cause?: unknown }?]>(
    'GW_REDIS_UNAVAILABLE',
    'Redis is unavailable: it is out of memory (maxmemory) and refused the purge\'s record; %s',
    503,
  ),
  UsageUnavailableError: createError('GW_REDIS_UNAVAILABLE', 'Redis is unavailable: the usage totals are kept there; try again', 503),
  // `%s`: what was done, or not, the gateway's words.
  RedisUnavailableError: createError<[string, { cause?: unknown }?]>('GW_REDIS_UNAVAILABLE', 'Redis is unavailable: %s', 503),
  BadRequestError: createError<[string, { cause?: unknown }?]>('GW_BAD_REQUEST', '%s', 400),
  RequestTimeoutError: createError('GW_REQUEST_TIMEOUT', 'the request was not received in time', 408),
  // A head past Node's maxHeaderSize (RFC 6585, 5): the bound, never a byte of the head.
  HeadersTooLargeError: createError<[number]>('GW_HEADERS_TOO_LARGE', "the request line and header fields are larger than %d bytes together; send a shorter request target (a report's campaignIds in the POST form's JSON body) or fewer, shorter headers", 431),
  ShuttingDownError: createError('GW_SHUTTING_DOWN', 'this replica is shutting down; retry on another', 503),
  PayloadTooLargeError: createError<[number]>('GW_PAYLOAD_TOO_LARGE', 'the request body is larger than the limit of %d bytes', 413),
  OverloadedError: createError<[string]>('GW_OVERLOADED', 'too many calls waiting for the platform: %s', 503),
  AnswerBudgetError: createError<[string]>('GW_ANSWER_BUDGET', 'no room for the platform\'s answer: %s', 503),
  BodyBudgetError: createError<[string]>('GW_BODY_BUDGET', 'no room for the request body: %s', 503),
  JobsFullError: createError<[string, number]>('GW_JOBS_FULL', 'team %s has %d report jobs queued or running, the most it may (jobs.maxOpenPerTeam); ask again when one ends', 429),
  // Every job a team asked is kept, ended ones jobs.keep and an hour more (jobs/job.ts, dropAt).
  JobsKeptFullError: createError<[string, number]>('GW_JOBS_FULL', 'team %s keeps %d report jobs, the most it may (jobs.maxKeptPerTeam): an ended job is kept jobs.keep and an hour after; ask again when one is dropped', 429),
  // A status call's `?wait` past jobs.maxWaitsPerTeam or jobs.maxWaits (jobs/job-waits.ts): what is full, then what to do.
  WaitsFullError: createError<[string]>('GW_WAITS_FULL', '%s; ask again after retry-after, or without ?wait', 429),
  JobResultTooLargeError: createError<[string]>('GW_JOB_RESULT_TOO_LARGE', '%s', 413),
  JobNotDoneError: createError<[string, string]>('GW_JOB_NOT_DONE', 'job %s is %s: its result is not there yet (GET its status, with ?wait=N to wait)', 409),
  JobRunningError: createError<[string, string]>('GW_JOB_RUNNING', 'job %s is %s: only a queued job is cancelled', 409),
  JobExpiredError: createError<[string]>('GW_JOB_EXPIRED', 'the result of job %s expired: ask the report again', 410),
  // The same answer to a result a purge after its fill reaches (contract, "A purge is final"): its expiresAt may be an hour away.
  JobPurgedError: createError<[string]>('GW_JOB_EXPIRED', 'the result of job %s was purged from the report cache after its report was filled (a purge is final): ask the report again', 410),
  // One answer, byte for byte, for an unknown id and another team's job (the id not even
  // echoed): it tells a team nothing of other teams' jobs.
  // A call under /api/v1/jobs the job routes do not serve (job-routes.ts jobPaths): its method, then the job calls there are; or, with no jobs (the cache off), why.
  JobPathError: createError<[string]>('GW_NOT_FOUND', '%s', 404),
  JobNotFoundError: createError('GW_NOT_FOUND', "no such job for this key's team: the id is unknown, the job was cancelled, its record ended (an hour after it expired) or was lost with Redis's data (a restart without it, a flush), or the job is another team's", 404),
  JobsUnavailableError: createError<[{ cause?: unknown }?]>('GW_JOBS_UNAVAILABLE', 'report jobs are kept in Redis, which cannot be read now: ask again after retry-after', 503),
}

/** An error of the catalogue above: its GW_* code, the status it is answered with, its message and cause. */
export type GatewayError = InstanceType<(typeof allErrors)[keyof typeof allErrors]>

export const {
  BadQueryError,
  UnauthorizedError,
  KeyFormError,
  KeyExpiredError,
  KeyReplacedError,
  ConfigRefusedError,
  ReloadUnavailableError,
  ForbiddenError,
  TeamSuspendedError,
  NotFoundError,
  UnsafePathError,
  AdminListenerPathError,
  ProxyListenerPathError,
  ProxyUnservedPathError,
  RepeatedBaseError,
  LeadingSlashesError,
  MethodNotAllowedError,
  PathMethodNotAllowedError,
  RateLimitedError,
  PlatformTimeSpentError,
  PlatformAuthError,
  PlatformRefusedError,
  UpstreamError,
  UpstreamTimeoutError,
  DeadlineError,
  AdminUnavailableError,
  AdminUnauthorizedError,
  AdminTokenFormError,
  AdminGuessesError,
  AdminForbiddenError,
  AdminHostError,
  TokenRejectedError,
  TokenLoginError,
  UnknownCredentialError,
  UnknownTeamError,
  NoRunningTeamError,
  NotCachedError,
  NoReplicaError,
  PurgeIncompleteError,
  PurgeUnrecordedError,
  UsageUnavailableError,
  RedisUnavailableError,
  BadRequestError,
  RequestTimeoutError,
  HeadersTooLargeError,
  ShuttingDownError,
  PayloadTooLargeError,
  OverloadedError,
  AnswerBudgetError,
  BodyBudgetError,
  JobsFullError,
  JobsKeptFullError,
  WaitsFullError,
  JobResultTooLargeError,
  JobNotDoneError,
  JobRunningError,
  JobExpiredError,
  JobPurgedError,
  JobPathError,
  JobNotFoundError,
  JobsUnavailableError,
} = allErrors
