import { CREDENTIAL_NAME_PATTERN, CREDENTIAL_NAME_RULE, credentialPrefix } from './names.js'
import type { RawConfig, RawCredential } from './schema.js'
import { exporterSecrets, type TracingConfig } from './tracing.js'
import { strayCredentialProblems } from './env-names.js'
import { shownUrlText } from './mask-url.js'
import { hasControlCharacters, readEnv, tokenFault, unreadable, type Env } from './sources.js'
import { parseDuration, parseSize } from './units.js'
import { SETTING_FLOORS } from './floors.js'
import { normalizeTeams } from './teams.js'
import { adminTokens } from './admin-tokens.js'
import { hostAsWritten, hostsOf, WEBHOOK_HOST_FORM, webhookHostsAdvice, webhookRefusal } from './webhook-hosts.js'
import { webhookSecretSpellings } from './webhook-secret.js'
import { searchedLoginSecret } from './login-secrets.js'
import { accountRouteProblems } from './account-routes.js'
import { listenHostFault } from './listener-addresses.js'
import { DEFAULTS_VALUE } from './defaults.generated.js'
import type { Setting } from './provenance.js'

// The validated raw settings turned into what the gateway runs on: durations in ms,
// sizes in bytes, credentials with their secrets, teams with their key hashes.

export const DEFAULT_CREDENTIAL = 'default'

const CREDENTIAL_NAME = new RegExp(CREDENTIAL_NAME_PATTERN)
/** The bounds of limits.secretSuspension. */
export const SECRET_SUSPENSION_MIN_MS = 3_600_000
export const SECRET_SUSPENSION_MAX_MS = 365 * 86_400_000

export interface PasswordLogin {
  username: string
  password: string
  clientId: number | string
  clientSecret: string
  tokenUrl: string
  grantType: string
}

export interface CredentialConfig {
  name: string
  baseUrl: string | null
  token: string | null
  tokenFile: string | null
  login: PasswordLogin | null
}

export type { TeamConfig, TeamKey } from './teams.js'
export type { AdminRole, AdminToken } from './admin-tokens.js'

/**
 * `credentialsInForce`: the named credentials the CREDENTIAL_* variables are checked against
 * (strayCredentialProblems); null: the file's, as at a start. A reload gives the running
 * ones: a credential changes only at a restart, and its variables are read until then.
 * `tokenFileFaults`: where a token file that holds no token goes; `problems` at a start, a
 * list of its own at a reload (the file's watcher keeps the token in use, TokenProvider).
 * `demo`: demo mode, whose sandbox login stands in for the default credential (demo.ts): a
 * configured platform without a token source is set aside, not refused.
 * `tracing`: what the OTEL_* variables ask for (tracingConfig), read with the settings' types.
 */
export function normalize(raw: RawConfig, env: Env, readFile: (p: string) => string, problems: string[], { credentialsInForce = null, tokenFileFaults = problems, demo = false, tracing = null }: { credentialsInForce?: readonly string[] | null | undefined; tokenFileFaults?: string[] | undefined; demo?: boolean; tracing?: TracingConfig | null } = {}) {
  const p = raw.platform
  const baseUrl = checkUrl(p.baseUrl, envName('platform.baseUrl', 'PLATFORM_BASE_URL'), problems)
  const credentials: Record<string, CredentialConfig> = {
    [DEFAULT_CREDENTIAL]: credentialFrom(DEFAULT_CREDENTIAL, {
      baseUrl,
      token: p.token ?? null,
      tokenFile: p.tokenFile,
      username: p.username,
      password: p.password ?? null,
      clientId: p.clientId,
      clientSecret: p.clientSecret ?? null,
      tokenUrl: p.tokenUrl,
      grantType: p.grantType,
      prefix: 'PLATFORM_',
    }, problems, demo),
  }
  for (const [name, c] of Object.entries(raw.credentials)) {
    // As with teams (teams.ts), the schema checks only the credentials whose names match
    // its pattern: any other is refused here, before its unchecked settings are read.
    if (!CREDENTIAL_NAME.test(name)) {
      problems.push(`credentials: ${JSON.stringify(name)} is not a valid credential name (${CREDENTIAL_NAME_RULE})`)
      continue
    }
    if (name === DEFAULT_CREDENTIAL) {
      problems.push(`credentials.${name}: the default credential is configured by the PLATFORM_* variables`)
      continue
    }
    credentials[name] = namedCredential(name, c, raw, baseUrl, env, readFile, problems)
  }
  problems.push(...strayCredentialProblems(env, credentialsInForce ?? Object.keys(credentials).filter((n) => n !== DEFAULT_CREDENTIAL)))

  // The token file must be there at start (the chart mounts it from a Secret): without
  // it no platform call could succeed, and a start that looks fine would hide that. A
  // reload takes no token from it (the file's watcher does, or keeps the one in use): its
  // fault is said, and refuses nothing, so that a key's revocation never waits on it.
  // Demo mode sets the default credential aside (the sandbox's login stands in): its file is not read.
  for (const c of Object.values(credentials)) {
    if (!c.tokenFile || (demo && c.name === DEFAULT_CREDENTIAL)) continue
    // Named by what gave the path: a named credential's CREDENTIAL_<NAME>_TOKEN_FILE, read before its setting.
    const variable = `${credentialPrefix(c.name)}TOKEN_FILE`
    const name = c.name === DEFAULT_CREDENTIAL ? 'PLATFORM_TOKEN_FILE' : env[variable] !== undefined ? variable : `credentials.${c.name}.tokenFile`
    try {
      const token = readFile(c.tokenFile).trim()
      const fault = token === '' ? 'is empty; it must hold the platform token' : tokenFault(token)
      if (fault !== null) tokenFileFaults.push(`${name}: ${c.tokenFile} ${fault}`)
    } catch (err) {
      tokenFileFaults.push(`${name}: ${c.tokenFile} cannot be read (${unreadable(c.tokenFile, err)}); it must hold the platform token`)
    }
  }

  const teams = normalizeTeams(raw.teams, new Set(Object.keys(credentials)), problems)
  const platformUrls = [baseUrl, ...Object.values(credentials).map((c) => c.baseUrl)].filter((u): u is string => u !== null)
  const platformHosts = [...new Set(hostsOf(platformUrls))]
  // An entry of a host's shape that a URL writes otherwise equals no URL's host: refused,
  // saying how a URL writes it; a team's webhook is checked against that writing, so that
  // the entry's refusal is the one line its mistake costs.
  const webhookHosts = raw.jobs.webhookHosts.map((entry, i) => {
    const written = hostAsWritten(entry)
    if (written !== entry.toLowerCase()) {
      problems.push(`jobs.webhookHosts.${i}: must be ${WEBHOOK_HOST_FORM} (got ${JSON.stringify(entry)}; ${written === null ? 'no URL has it as its host' : `a URL writes it ${written}`})`)
    }
    return written ?? entry
  })
  for (const team of teams) {
    const refusal = team.webhook && webhookRefusal(team.webhook.url, webhookHosts, platformHosts, `; ${webhookHostsAdvice(team.name)}`)
    if (refusal) problems.push(`teams.${team.name}.webhook.url: ${refusal}`)
  }

  const cache = raw.cache
  if (!isValidTimeZone(cache.timeZone)) problems.push(`cache.timeZone: not an IANA time zone (got ${JSON.stringify(cache.timeZone)})`)
  if (raw.redis.sentinels && raw.redis.cluster) problems.push('redis: set sentinels or cluster, not both')
  problems.push(...concurrencyProblems(p))
  // A listener binds its host as written: one that is neither an IP address nor a name stops the start here, naming its setting.
  for (const [value, name, port] of [[raw.host, envName('host', 'HOST'), envName('port', 'PORT')], [raw.admin.host, envName('admin.host', 'ADMIN_HOST'), envName('admin.port', 'ADMIN_PORT')]] as const) {
    const fault = listenHostFault(value, name, port)
    if (fault !== null) problems.push(fault)
  }
  checkRedisUrl(raw.redis.url, envName('redis.url', 'REDIS_URL'), problems)
  checkClusterDatabase(raw.redis.url, raw.redis.cluster != null, envName('redis.url', 'REDIS_URL'), problems)
  checkClusterKeyPrefix(raw.redis.keyPrefix, raw.redis.cluster != null, problems)
  checkTlsServername(raw.redis.tlsServername, raw.redis.url, problems)
  checkSentinelSettings(raw.redis, problems)
  // A fallback is read beside GATEWAY_SECRET through a rotation: alone, or the same, it rotates nothing.
  if (raw.gatewaySecretFallback != null && raw.gatewaySecret == null) problems.push('GATEWAY_SECRET_FALLBACK: set without GATEWAY_SECRET: it is only read beside it, through a change of GATEWAY_SECRET; set GATEWAY_SECRET, or remove it')
  else if (raw.gatewaySecretFallback != null && raw.gatewaySecretFallback === raw.gatewaySecret) problems.push('GATEWAY_SECRET_FALLBACK: the same as GATEWAY_SECRET: it names the other secret of a rotation (the old one, or the next); remove it')
  // An idle caller socket is closed after connectionTimeout: it must outlast the longest
  // platform call, or a slow report would be cut off while the gateway waits for it.
  if (parseDuration(raw.server.connectionTimeout) <= parseDuration(p.timeout)) {
    problems.push(`server.connectionTimeout: must be longer than platform.timeout (${String(p.timeout)})`)
  }
  problems.push(...floorProblems(raw))

  // A team is told whether its request holds a secret of the gateway's, and one hit in a
  // period is what a guesser gets (decisions/secret-guesses.md): below an hour a bisection
  // of a batch that hit ends within a day; past a year it is no period but a ban.
  const suspension = parseDuration(raw.limits.secretSuspension)
  if (suspension < SECRET_SUSPENSION_MIN_MS || suspension > SECRET_SUSPENSION_MAX_MS) problems.push(`limits.secretSuspension: must be from 1h to 365d (got ${String(raw.limits.secretSuspension)})`)

  problems.push(...accountRouteProblems(raw.ownership.accountRoutes))

  const loginSecrets = Object.values(credentials).flatMap((c) => (c.login ? [c.login.password, c.login.clientSecret] : [])).filter((s) => s.length > 0)
  const secrets = [raw.admin.token, raw.admin.viewerToken, raw.gatewaySecret, raw.gatewaySecretFallback, raw.redis.sentinelPassword, redisUrlPassword(raw.redis.url)]
    .concat(Object.values(credentials).map((c) => c.token), loginSecrets.filter(searchedLoginSecret))
    .filter((s): s is string => typeof s === 'string' && s.length > 0)
  // Scrubbed from what the gateway writes, but not searched for in requests (SecretSet.addScrubbed):
  // the teams' webhook secrets, each its team's own, which may spell anything.
  const scrubbedSecrets = teams.flatMap((t) => (t.webhook ? webhookSecretSpellings(t.webhook.secret) : []))
  // A login's password or client secret too short to search for, a word a team may write by
  // chance (login-secrets.ts): scrubbed from the log alone (SecretSet.addLogOnly), so that no
  // copy of a team's text a caller reads depends on it.
  const shortLoginSecrets = loginSecrets.filter((s) => !searchedLoginSecret(s))

  return {
    host: raw.host,
    port: raw.port,
    admin: {
      host: raw.admin.host,
      port: raw.admin.port,
      token: raw.admin.token ?? null,
      viewerToken: raw.admin.viewerToken ?? null,
      tokensFile: raw.admin.tokensFile ?? null,
      hosts: raw.admin.hosts,
      maxConnections: raw.admin.maxConnections,
      tokens: adminTokens({ token: raw.admin.token ?? null, viewerToken: raw.admin.viewerToken ?? null, file: raw.admin.tokensFile ?? null }, readFile, problems),
    },
    logLevel: raw.logLevel,
    bodyLimit: parseSize(raw.bodyLimit),
    shutdownDrainMs: parseDuration(raw.shutdownDrain),
    shutdownGraceMs: parseDuration(raw.shutdownGrace),
    server: {
      requestTimeoutMs: parseDuration(raw.server.requestTimeout),
      connectionTimeoutMs: parseDuration(raw.server.connectionTimeout),
      // Node refuses a server whose headers may take longer than the whole request.
      headersTimeoutMs: Math.min(parseDuration(raw.server.headersTimeout), parseDuration(raw.server.requestTimeout)),
      keepAliveTimeoutMs: parseDuration(raw.server.keepAliveTimeout),
      maxConnections: raw.server.maxConnections,
    },
    limits: {
      reportBodyBytes: parseSize(raw.limits.reportBody),
      bodyTimeoutMs: parseDuration(raw.limits.bodyTimeout),
      jsonDepth: raw.limits.jsonDepth,
      params: raw.limits.params,
      secretSuspensionMs: parseDuration(raw.limits.secretSuspension),
    },
    ownership: {
      listPath: raw.ownership.listPath,
      perPage: raw.ownership.perPage,
      maxPages: raw.ownership.maxPages,
      ttlMs: parseDuration(raw.ownership.ttl),
      refreshMinIntervalMs: parseDuration(raw.ownership.refreshMinInterval),
      fields: raw.ownership.fields,
      campaignPaths: raw.ownership.campaignPaths,
      accountRoutes: raw.ownership.accountRoutes as { path: string; field: AccountField }[],
      creativeSets: creativeSetCheck(raw.ownership.creativeSets, problems),
    },
    gatewaySecret: raw.gatewaySecret ?? null,
    gatewaySecretFallback: raw.gatewaySecretFallback ?? null,
    platform: {
      baseUrl,
      tokenUrl: p.tokenUrl,
      grantType: p.grantType,
      timeoutMs: parseDuration(p.timeout),
      connections: p.connections,
      keepAliveTimeoutMs: parseDuration(p.keepAliveTimeout),
      maxConcurrent: p.maxConcurrent,
      adaptive: p.adaptive,
      initialConcurrent: Math.min(p.initialConcurrent, p.maxConcurrent),
      minConcurrent: Math.min(p.minConcurrent, p.maxConcurrent),
      maxConcurrentPerReplica: p.maxConcurrentPerReplica,
      seatLeaseMs: parseDuration(p.seatLease),
      queue: p.queue,
      queueTimeoutMs: parseDuration(p.queueTimeout),
      maxPauseMs: parseDuration(p.maxPause),
      refreshBeforeMs: parseDuration(p.refreshBefore),
      expiryWarningsMs: p.expiryWarnings.map(parseDuration).sort((a, b) => b - a),
      tokenFilePollMs: parseDuration(p.tokenFilePoll),
      maintenanceMs: parseDuration(p.maintenanceInterval),
      probe: p.probe,
      loginMinIntervalMs: parseDuration(p.loginMinInterval),
      bufferTotalBytes: parseSize(p.bufferTotalBytes),
      readIdleTimeoutMs: parseDuration(p.readIdleTimeout),
    },
    credentials,
    redis: {
      url: raw.redis.url,
      sentinels: raw.redis.sentinels,
      sentinelName: raw.redis.sentinelName,
      cluster: raw.redis.cluster,
      tlsServername: raw.redis.tlsServername,
      sentinelTls: raw.redis.sentinelTls,
      sentinelPassword: raw.redis.sentinelPassword ?? null,
      keyPrefix: raw.redis.keyPrefix,
      commandTimeoutMs: parseDuration(raw.redis.commandTimeout),
      breakerCooldownMs: parseDuration(raw.redis.breakerCooldown),
      rateLimitSyncMs: parseDuration(raw.redis.rateLimitSync),
    },
    cache: {
      enabled: cache.enabled,
      l1MaxBytes: parseSize(cache.l1MaxBytes),
      maxEntryBytes: parseSize(cache.maxEntryBytes),
      reportFields: cache.reportFields,
      keyVersion: cache.keyVersion,
      ttl: { recentMs: parseDuration(cache.ttl.recent), settledMs: parseDuration(cache.ttl.settled) },
      settledAfterDays: cache.settledAfterDays,
      timeZone: cache.timeZone,
      staleWhileRevalidateMs: parseDuration(cache.staleWhileRevalidate),
      staleIfErrorMs: parseDuration(cache.staleIfError),
      lockTtlMs: parseDuration(cache.lockTtl),
      refreshAhead: cache.refreshAhead !== false && cache.refreshAhead !== 0,
      refreshMinAgeMs: parseDuration(cache.refreshMinAge),
      maxRangeDays: cache.maxRangeDays,
    },
    teams,
    teamsReload: { pollMs: parseDuration(raw.teamsReload.poll) },
    usage: { flushMs: parseDuration(raw.usage.flush), retentionDays: raw.usage.retentionDays },
    jobs: {
      maxOpenPerTeam: raw.jobs.maxOpenPerTeam,
      maxKeptPerTeam: raw.jobs.maxKeptPerTeam,
      maxWaitsPerTeam: raw.jobs.maxWaitsPerTeam,
      maxWaits: raw.jobs.maxWaits,
      resultBytesPerTeam: parseSize(raw.jobs.resultBytesPerTeam),
      resultsRoom: raw.jobs.resultsRoom === null ? null : parseSize(raw.jobs.resultsRoom),
      keepMs: parseDuration(raw.jobs.keep),
      leaseMs: parseDuration(raw.jobs.lease),
      pollMs: Math.max(1, parseDuration(raw.jobs.poll)),
      perReplica: raw.jobs.perReplica,
      retryMs: parseDuration(raw.jobs.retry),
      retries: raw.jobs.retries,
      maxPauseMs: parseDuration(raw.platform.maxPause),
    },
    webhooks: { platformHosts, platformUrls, hosts: webhookHosts, timeoutMs: parseDuration(raw.jobs.webhookTimeout), retryForMs: parseDuration(raw.jobs.webhookRetryFor), perTeam: raw.jobs.deliveriesPerTeam },
    // OpenTelemetry traces (OTEL_* variables), null when off; its exporter's headers are secrets too.
    tracing,
    secrets: tracing ? [...secrets, ...exporterSecrets(tracing.headers)] : secrets,
    scrubbedSecrets,
    shortLoginSecrets,
  }
}

/** `demo`: decided by loadConfig from everything that was set (config/demo-mode.ts); `settings`: each setting in force and where it came from (config/provenance.ts). */
/**
 * The configuration in force; `warnings`: what a start logs of it (a renamed or retired
 * setting, a risky one: config/risky-settings.ts); `memoryWarning`: the one of them that
 * says its memory budgets cannot fit the container's limit (config/memory-fit.ts), which a
 * teams reload says again when its teams change it; null: they fit, or no limit is known.
 */
export type Config = ReturnType<typeof normalize> & { demo: boolean; settings: Setting[]; warnings: string[]; memoryWarning: string | null }

/** Whether listeners on these two hosts take the same port: one address, or either every address of the host. */
/** The learned limit's start and floor are within its ceiling: one set above it is refused (a clamp would be a silent setting); the default of each goes down to a lower ceiling. */
function concurrencyProblems(p: RawConfig['platform']): string[] {
  const defaults = (DEFAULTS_VALUE as { platform: Record<'initialConcurrent' | 'minConcurrent', number> }).platform
  return (['initialConcurrent', 'minConcurrent'] as const)
    .filter((name) => p[name] > p.maxConcurrent && p[name] !== defaults[name])
    .map((name) => `platform.${name}: must be at most platform.maxConcurrent (${p.maxConcurrent}; got ${p[name]})`)
}

function envName(path: string, env: string): string {
  return `${env} (${path})`
}

function checkUrl(value: string | null | undefined, name: string, problems: string[]): string | null {
  if (value == null) return null
  try {
    const url = new URL(value)
    // A user or password in it would be sent nowhere useful and shown by GET /admin/config: an origin holds neither.
    if (url.username || url.password) {
      problems.push(`${name}: must be an origin only, without a user or password (the value is not shown); give the platform's credentials as PLATFORM_TOKEN or the PLATFORM_USERNAME login`)
    } else if (url.search || url.hash || url.pathname !== '/') {
      problems.push(`${name}: must be an origin only, without path, query or fragment (got ${JSON.stringify(shownUrlText(value))}); write ${url.origin}: the callers' /api/v1/… paths are sent under it`)
    }
    return url.href.replace(/\/+$/, '')
  } catch {
    problems.push(`${name}: not a URL (got ${JSON.stringify(shownUrlText(value))})`)
    return null
  }
}

// The URL holds the Redis password: a message says what is wrong with it, never what it
// holds, whatever its shape. What passes here, ioredis and the
// log lines' host:port (redis/client.ts) read without a surprise.
function checkRedisUrl(value: string | null, name: string, problems: string[]): void {
  if (value == null) return
  const form = 'redis://[user:password@]host[:port][/db] or rediss://…; the value is not shown, as it may hold a password'
  let url: URL | null = null
  try {
    url = /\s/.test(value) || hasControlCharacters(value) ? null : new URL(value)
  } catch {
    url = null
  }
  if (!url || (url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.hostname === '') {
    problems.push(`${name}: not a Redis URL: must be ${form}`)
    return
  }
  if (!/^\/?\d*$/.test(url.pathname) || url.search !== '' || url.hash !== '') {
    problems.push(`${name}: after host:port only /<database number> may follow: must be ${form}`)
  }
  // Redis gets the user and password decoded (redis/client.ts): a % that escapes nothing
  // would stop the start as a crash, not as the configuration it is.
  if (decoded(url.username) === null || decoded(url.password) === null) {
    problems.push(`${name}: its user or password holds a % that is not followed by two hex digits: write % as %25; the value is not shown, as it may hold a password`)
  }
}

/** `text` with its percent-escapes decoded; null when one escapes nothing. */
function decoded(text: string): string | null {
  try {
    return decodeURIComponent(text)
  } catch {
    return null
  }
}

/**
 * The password a Redis URL gives, as Redis gets it (decoded): a secret of the gateway's, as
 * REDIS_SENTINEL_PASSWORD is, so that the log never writes it and no request carries it on.
 */
function redisUrlPassword(value: string | null): string | null {
  if (value == null || !URL.canParse(value)) return null
  return decoded(new URL(value).password)
}

// A Cluster serves database 0 alone (SELECT is refused there): a URL naming another would
// be taken as a separation of installations that the Cluster does not make.
function checkClusterDatabase(url: string | null, cluster: boolean, name: string, problems: string[]): void {
  if (!cluster || url == null) return
  const db = /^rediss?:\/\/[^/]*\/(\d+)$/.exec(url)?.[1]
  if (db !== undefined && Number(db) !== 0) {
    problems.push(`${name}: names database ${Number(db)}, but a Redis Cluster has database 0 alone: remove /${db} from the URL, or give this installation its own redis.keyPrefix`)
  }
}

// A Cluster hashes a key by the part between its first "{" and the "}" after it (the whole
// key when there is none, or nothing between them): every key's hash tag is the gateway's
// (redis/keys.ts, which redis/memory-room.ts finds the jobs' master by) only where the
// prefix holds no "{". A prefix's {x} puts every key in one slot, its {} hashes the keys
// one script writes together into different slots, and a lone { makes other tags.
function checkClusterKeyPrefix(prefix: string, cluster: boolean, problems: string[]): void {
  if (!cluster || !prefix.includes('{')) return
  problems.push(`redis.keyPrefix: holds "{", but a Redis Cluster hashes a key by its first {…}: the prefix's would stand in place of the gateway's hash tags, which put the keys one script writes together in one slot and spread the rest over the masters; remove the braces (got ${JSON.stringify(prefix)})`)
}

// A DNS name of RFC 1123 labels, its last label not all digits: what a certificate's DNS
// entries hold. Not an address (TLS sends no address as SNI, RFC 6066) nor a wildcard.
const HOST_NAME = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*(?=[a-z0-9-]*[a-z-])[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i

// The name every Redis node's certificate is checked against in place of the address it
// is reached by: only over TLS, which rediss:// alone turns on (the certificate check
// itself stays on).
function checkTlsServername(value: string | null, url: string | null, problems: string[]): void {
  if (value == null) return
  if (!HOST_NAME.test(value)) {
    problems.push(`redis.tlsServername: not a host name (got ${JSON.stringify(value)}): the DNS name every Redis node's certificate holds, e.g. redis.redis.svc.cluster.local`)
  } else if (!url?.startsWith('rediss://')) {
    problems.push("redis.tlsServername: set, but Redis is not reached over TLS: set REDIS_URL (redis.url) to a rediss:// URL, or remove redis.tlsServername")
  }
}

// The Sentinels' own TLS and password only with Sentinels, and TLS only where the nodes
// are reached over TLS too: a Sentinel's answer names the master, which is then reached
// as rediss:// says.
function checkSentinelSettings(redis: { sentinels: unknown; url: string | null; sentinelTls: boolean; sentinelPassword?: string | null }, problems: string[]): void {
  const without = 'set, but no Sentinels are: set redis.sentinels (with redis.sentinelName), or remove'
  if (redis.sentinelTls && !redis.sentinels) problems.push(`redis.sentinelTls: ${without} redis.sentinelTls`)
  else if (redis.sentinelTls && !redis.url?.startsWith('rediss://')) {
    problems.push('redis.sentinelTls: set, but Redis is not reached over TLS: set REDIS_URL (redis.url) to a rediss:// URL, or remove redis.sentinelTls')
  }
  if (redis.sentinelPassword != null && !redis.sentinels) problems.push(`REDIS_SENTINEL_PASSWORD: ${without} REDIS_SENTINEL_PASSWORD`)
}

interface CredentialParts {
  baseUrl: string | null
  token: string | null
  tokenFile: string | null
  username: string | null
  password: string | null
  clientId: number | string | null
  clientSecret: string | null
  tokenUrl: string
  grantType: string
  prefix: string
}

/** `setAside`: demo mode's default credential, which the sandbox's login replaces: no token source is asked of it, nor is its token checked. */
function credentialFrom(name: string, c: CredentialParts, problems: string[], setAside = false): CredentialConfig {
  const loginParts = { USERNAME: c.username, PASSWORD: c.password, CLIENT_ID: c.clientId, CLIENT_SECRET: c.clientSecret }
  const given = Object.entries(loginParts).filter(([, v]) => v != null)
  let login: PasswordLogin | null = null
  if (given.length > 0 && given.length < 4) {
    const missing = Object.entries(loginParts).filter(([, v]) => v == null).map(([k]) => `${c.prefix}${k}`)
    problems.push(`${c.prefix}USERNAME: the password login of credential ${name} also needs ${missing.join(', ')}`)
  } else if (given.length === 4) {
    login = {
      username: c.username as string,
      password: c.password as string,
      clientId: typeof c.clientId === 'string' && /^\d+$/.test(c.clientId) ? Number(c.clientId) : (c.clientId as number | string),
      clientSecret: c.clientSecret as string,
      tokenUrl: c.tokenUrl,
      grantType: c.grantType,
    }
  }
  // Each source by what sets it: the line names those set, led by a variable (the login comes last).
  const set = ([[c.token, `${c.prefix}TOKEN`], [c.tokenFile, `${c.prefix}TOKEN_FILE`], [login, 'the password login']] as const).filter(([v]) => v != null).map(([, what]) => what)
  const sources = set.length
  if (sources > 1) {
    problems.push(`${set[0]}: credential ${name} has more than one token source (${set.join(' and ')}); set one of ${c.prefix}TOKEN, ${c.prefix}TOKEN_FILE or the password login`)
  }
  if (c.baseUrl !== null && sources === 0 && !setAside) {
    problems.push(
      `${c.prefix}TOKEN: credential ${name} has no token source; set ${c.prefix}TOKEN, ${c.prefix}TOKEN_FILE, or ${c.prefix}USERNAME, ${c.prefix}PASSWORD, ${c.prefix}CLIENT_ID and ${c.prefix}CLIENT_SECRET`,
    )
  }
  const fault = c.token === null || setAside ? null : tokenFault(c.token)
  if (fault !== null) problems.push(`${c.prefix}TOKEN: ${fault}`)
  // RFC 6749's grant type: a name, or an absolute URI (an extension grant); sent as it is, another is refused at every login.
  if (!/^(?:[A-Za-z0-9._-]+|[A-Za-z][A-Za-z0-9+.-]*:[!-~]+)$/.test(c.grantType)) {
    const why = c.grantType.trim() !== c.grantType ? ': it has spaces at its ends; remove them' : ''
    problems.push(`${c.prefix}GRANT_TYPE: ${JSON.stringify(c.grantType)} is not a grant type (letters, digits, - . _, or an absolute URI such as urn:ietf:params:oauth:grant-type:jwt-bearer)${why}`)
  }
  if (!/^(\/|https?:\/\/)/.test(c.tokenUrl)) problems.push(`${c.prefix}TOKEN_URL: must be a path starting with / or an http(s) URL (got ${JSON.stringify(shownUrlText(c.tokenUrl))})`)
  // The token request sends no user or password of its URL (the login is in its body): they
  // would be dropped in silence, and a secret stand in CONFIG_FILE.
  else if (URL.canParse(c.tokenUrl) && (new URL(c.tokenUrl).username !== '' || new URL(c.tokenUrl).password !== '')) {
    problems.push(`${c.prefix}TOKEN_URL: must hold no user or password (the value is not shown): the token request sends neither, its login (${c.prefix}USERNAME, ${c.prefix}PASSWORD, ${c.prefix}CLIENT_ID, ${c.prefix}CLIENT_SECRET) goes in its body; write ${JSON.stringify(shownUrlText(c.tokenUrl).replace('***@', ''))}`)
  }
  // Resolved against the platform's address as a URL is, `//oauth/token` (or `/\oauth`)
  // is the host oauth: the login's password and client secret would be sent there.
  else if (/^\/[/\\]/.test(c.tokenUrl)) {
    const host = URL.canParse(c.tokenUrl, 'https://platform.invalid/') ? `the host ${new URL(c.tokenUrl, 'https://platform.invalid/').host}` : 'a host'
    problems.push(`${c.prefix}TOKEN_URL: ${JSON.stringify(shownUrlText(c.tokenUrl))} names ${host} (a path starts with one /), not a path of the platform's address; write the path with one /, or the whole https:// URL`)
  }
  return { name, baseUrl: c.baseUrl, token: c.token, tokenFile: c.tokenFile, login }
}

// A named credential takes its secrets from CREDENTIAL_<NAME>_* variables or from the
// *File paths of its config entry; never from the config file itself.
function namedCredential(
  name: string,
  c: RawCredential,
  raw: RawConfig,
  defaultBaseUrl: string | null,
  env: Env,
  readFile: (p: string) => string,
  problems: string[],
): CredentialConfig {
  const prefix = credentialPrefix(name)
  const fromFile = (path: string | null | undefined, label: string) => {
    if (!path) return null
    try {
      const v = readFile(path).trim()
      if (v === '') problems.push(`credentials.${name}.${label}: ${path} is empty`)
      return v || null
    } catch (err) {
      problems.push(`credentials.${name}.${label}: ${path} cannot be read (${unreadable(path, err)})`)
      return null
    }
  }
  const secret = (suffix: string, file: string | null | undefined, label: string) =>
    readEnv(env, `${prefix}${suffix}`, true, readFile, problems) ?? fromFile(file, label)
  const baseUrl = c.baseUrl ? checkUrl(c.baseUrl, `credentials.${name}.baseUrl`, problems) : defaultBaseUrl
  return credentialFrom(
    name,
    {
      baseUrl,
      token: readEnv(env, `${prefix}TOKEN`, false, readFile, problems) ?? null,
      tokenFile: env[`${prefix}TOKEN_FILE`] ?? c.tokenFile ?? null,
      username: secret('USERNAME', c.usernameFile, 'usernameFile') ?? c.username ?? null,
      password: secret('PASSWORD', c.passwordFile, 'passwordFile'),
      clientId: secret('CLIENT_ID', c.clientIdFile, 'clientIdFile') ?? c.clientId ?? null,
      clientSecret: secret('CLIENT_SECRET', c.clientSecretFile, 'clientSecretFile'),
      tokenUrl: c.tokenUrl ?? raw.platform.tokenUrl,
      grantType: c.grantType ?? raw.platform.grantType,
      prefix,
    },
    problems,
  )
}

function isValidTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
    return true
  } catch {
    return false
  }
}

/** The field a route reads its account from (ownership.accountRoutes). */
export type AccountField = 'advertiserId' | 'userId'

/** How a scoped team's creative sets are checked: refused, passed, or looked up at `listPath`. */
export type CreativeSetCheck = { check: 'refuse' | 'pass'; listPath: null } | { check: 'lookup'; listPath: string }

function creativeSetCheck(raw: RawConfig['ownership']['creativeSets'], problems: string[]): CreativeSetCheck {
  if (raw.check !== 'lookup') return { check: raw.check as 'refuse' | 'pass', listPath: null }
  if (raw.listPath !== null) return { check: 'lookup', listPath: raw.listPath }
  problems.push('ownership.creativeSets.listPath: required with check: lookup (the platform\'s list of an account\'s creative sets)')
  return { check: 'refuse', listPath: null }
}

/** One problem for each setting of `raw` (a config its schema took) below its floor. */
function floorProblems(raw: RawConfig): string[] {
  const problems: string[] = []
  for (const floor of SETTING_FLOORS) {
    const value = floor.path.reduce<unknown>((node, name) => (node as Record<string, unknown>)[name], raw) as number | string
    const amount = floor.kind === 'duration' ? parseDuration(value) : parseSize(value)
    if (amount < floor.least) problems.push(`${floor.path.join('.')}: must be at least ${floor.written}${floor.holds ? `: ${floor.holds}` : ''} (got ${String(value)})`)
  }
  return problems
}
