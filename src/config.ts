import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Ajv, type ErrorObject } from 'ajv'
import { parse as parseYaml } from 'yaml'
import { ConfigSchema, type RawConfig, type RawCredential } from './config-schema.js'

export const DEFAULT_CONFIG_PATH = fileURLToPath(new URL('../config/default.yaml', import.meta.url))
export const DEFAULT_CREDENTIAL = 'default'

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.name = 'ConfigError'
  }
}

type Env = Record<string, string | undefined>

// Environment variables of the contract, and the config path each one sets.
// `secret`: may also come from <NAME>_FILE, and may never come from a config file.
const ENV_KEYS: { env: string; path: string[]; kind: 'string' | 'int' | 'number-or-string'; secret?: boolean; file?: boolean }[] = [
  { env: 'HOST', path: ['host'], kind: 'string' },
  { env: 'PORT', path: ['port'], kind: 'int' },
  { env: 'ADMIN_HOST', path: ['admin', 'host'], kind: 'string' },
  { env: 'ADMIN_PORT', path: ['admin', 'port'], kind: 'int' },
  { env: 'ADMIN_TOKEN', path: ['admin', 'token'], kind: 'string', secret: true },
  { env: 'LOG_LEVEL', path: ['logLevel'], kind: 'string' },
  { env: 'GATEWAY_SECRET', path: ['gatewaySecret'], kind: 'string', secret: true },
  { env: 'PLATFORM_BASE_URL', path: ['platform', 'baseUrl'], kind: 'string' },
  { env: 'PLATFORM_TOKEN', path: ['platform', 'token'], kind: 'string', secret: true, file: false },
  { env: 'PLATFORM_TOKEN_FILE', path: ['platform', 'tokenFile'], kind: 'string' },
  { env: 'PLATFORM_USERNAME', path: ['platform', 'username'], kind: 'string', secret: true },
  { env: 'PLATFORM_PASSWORD', path: ['platform', 'password'], kind: 'string', secret: true },
  { env: 'PLATFORM_CLIENT_ID', path: ['platform', 'clientId'], kind: 'number-or-string', secret: true },
  { env: 'PLATFORM_CLIENT_SECRET', path: ['platform', 'clientSecret'], kind: 'string', secret: true },
  { env: 'PLATFORM_TOKEN_URL', path: ['platform', 'tokenUrl'], kind: 'string' },
  { env: 'PLATFORM_GRANT_TYPE', path: ['platform', 'grantType'], kind: 'string' },
  { env: 'REDIS_URL', path: ['redis', 'url'], kind: 'string' },
]

// Values a config file may never hold (contract: secrets come only from the
// environment or from *_FILE paths).
const FILE_FORBIDDEN = [
  ['admin', 'token'],
  ['gatewaySecret'],
  ['platform', 'token'],
  ['platform', 'password'],
  ['platform', 'clientSecret'],
]

export interface LoadOptions {
  env?: Env
  /** Read a *_FILE path; passed in so tests need no files. */
  readFile?: (path: string) => string
}

export function loadConfig({ env = process.env, readFile = (p) => readFileSync(p, 'utf8') }: LoadOptions = {}): Config {
  const problems: string[] = []
  const raw = readYamlObject(DEFAULT_CONFIG_PATH, readFile, problems, 'config/default.yaml')
  if (env.CONFIG_FILE) {
    const file = readYamlObject(env.CONFIG_FILE, readFile, problems, `CONFIG_FILE (${env.CONFIG_FILE})`)
    for (const path of FILE_FORBIDDEN) {
      if (getPath(file, path) != null) {
        problems.push(`${path.join('.')}: secrets may not be set in CONFIG_FILE; use its environment variable or *_FILE`)
      }
    }
    deepMerge(raw, file)
  }
  const envSources = applyEnv(raw, env, readFile, problems)
  if (problems.length > 0) throw new ConfigError(problems)
  validateSchema(raw, envSources, problems)
  if (problems.length > 0) throw new ConfigError(problems)
  const config = normalize(raw as RawConfig, env, readFile, problems)
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}

function readYamlObject(path: string, readFile: (p: string) => string, problems: string[], label: string): Record<string, unknown> {
  let text: string
  try {
    text = readFile(path)
  } catch (err) {
    problems.push(`${label}: cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
    return {}
  }
  try {
    const value: unknown = parseYaml(text) ?? {}
    if (!isPlainObject(value)) {
      problems.push(`${label}: must be a YAML mapping`)
      return {}
    }
    return value
  } catch (err) {
    problems.push(`${label}: not valid YAML (${(err as Error).message.split('\n')[0]})`)
    return {}
  }
}

function applyEnv(raw: Record<string, unknown>, env: Env, readFile: (p: string) => string, problems: string[]): Map<string, string> {
  const sources = new Map<string, string>()
  for (const key of ENV_KEYS) {
    const value = readEnv(env, key.env, key.secret === true && key.file !== false, readFile, problems)
    if (value === undefined) continue
    let parsed: unknown = value
    if (key.kind === 'int') {
      parsed = /^\d+$/.test(value) ? Number(value) : value
    } else if (key.kind === 'number-or-string') {
      parsed = /^\d+$/.test(value) ? Number(value) : value
    }
    setPath(raw, key.path, parsed)
    sources.set(key.path.join('.'), key.env)
  }
  return sources
}

/** A variable, or the trimmed content of the file its *_FILE variable names. */
export function readEnv(env: Env, name: string, allowFile: boolean, readFile: (p: string) => string, problems: string[]): string | undefined {
  const direct = env[name]
  const filePath = allowFile ? env[`${name}_FILE`] : undefined
  if (direct !== undefined && direct !== '' && filePath) {
    problems.push(`${name}: set both ${name} and ${name}_FILE; keep one`)
    return undefined
  }
  if (filePath) {
    try {
      const content = readFile(filePath).trim()
      if (content === '') {
        problems.push(`${name}_FILE: ${filePath} is empty`)
        return undefined
      }
      return content
    } catch (err) {
      problems.push(`${name}_FILE: ${filePath} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
      return undefined
    }
  }
  return direct === '' ? undefined : direct
}

// verbose: errors carry their parentSchema, whose `description` is the hint a union
// (Duration, Size) gives; without it every branch's own failure would be the message.
const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false, verbose: true })
const validate = ajv.compile(ConfigSchema)

function validateSchema(raw: Record<string, unknown>, envSources: Map<string, string>, problems: string[]): void {
  if (validate(raw)) return
  const seen = new Set<string>()
  for (const error of withoutBranchNoise(validate.errors ?? [])) {
    const line = describeError(error, raw, envSources)
    if (line && !seen.has(line)) {
      seen.add(line)
      problems.push(line)
    }
  }
}

// Union branches each report their own failure; one line per key reads better. A
// union (anyOf) whose branches only failed at its own value stands for them all; one
// whose branch got further (an object branch with a bad member) gives way to the
// deeper errors, which name the member.
function withoutBranchNoise(errors: ErrorObject[]): ErrorObject[] {
  const dropped = new Set<ErrorObject>()
  for (const union of errors) {
    if (union.keyword !== 'anyOf') continue
    const branches = errors.filter((e) => e !== union && e.schemaPath.startsWith(`${union.schemaPath}/`))
    const deeper = branches.some((e) => e.instancePath.startsWith(`${union.instancePath}/`))
    for (const e of branches) if (!deeper || e.instancePath === union.instancePath) dropped.add(e)
    if (deeper) dropped.add(union)
  }
  return errors.filter((e) => !dropped.has(e))
}

function describeError(error: ErrorObject, raw: Record<string, unknown>, envSources: Map<string, string>): string | null {
  const segments = error.instancePath.split('/').slice(1).map(unescapePointer)
  if (error.keyword === 'additionalProperties') {
    const extra = (error.params as { additionalProperty: string }).additionalProperty
    return `${[...segments, extra].join('.')}: unknown setting`
  }
  const dotted = segments.join('.')
  const name = envSources.get(dotted) ?? (dotted || '(root)')
  const value = getPath(raw, segments)
  const hidden = (envSources.has(dotted) && isSecretPath(dotted)) || TEAM_KEYS.test(dotted)
  const shown = hidden ? '' : ` (got ${JSON.stringify(maskUrlPassword(value))})`
  if (error.keyword === 'required') {
    return `${dotted ? `${dotted}.` : ''}${(error.params as { missingProperty: string }).missingProperty}: required`
  }
  return `${name}: ${hintFor(dotted, error)}${shown}`
}

function hintFor(dotted: string, error: ErrorObject): string {
  const schema = error.parentSchema as { description?: string } | undefined
  if (schema?.description) return `must be ${schema.description}`
  if (/port$/i.test(dotted)) return 'must be an integer from 0 to 65535'
  if (dotted === 'logLevel') return 'must be one of fatal, error, warn, info, debug, trace, silent'
  if (dotted.endsWith('baseUrl')) return 'must be an http:// or https:// URL'
  if (dotted === 'redis.url') return 'must be a redis:// or rediss:// URL'
  return error.message ?? 'is invalid'
}

// A team key list may hold a plaintext key by mistake: never repeat it.
const TEAM_KEYS = /^teams\.[^.]+\.keys(\.\d+)?$/

function isSecretPath(dotted: string): boolean {
  return ENV_KEYS.some((k) => k.secret && k.path.join('.') === dotted)
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
const SIZE_UNITS: Record<string, number> = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 }

export function parseDuration(value: number | string): number {
  if (typeof value === 'number') return value
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(value)
  if (!match) throw new Error(`not a duration: ${value}`)
  return Number(match[1]) * (DURATION_UNITS[match[2] as string] as number)
}

export function parseSize(value: number | string): number {
  if (typeof value === 'number') return value
  const match = /^(\d+)(B|KiB|MiB|GiB)$/.exec(value)
  if (!match) throw new Error(`not a size: ${value}`)
  return Number(match[1]) * (SIZE_UNITS[match[2] as string] as number)
}

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

export interface TeamConfig {
  name: string
  keyHashes: string[]
  /** null: every account ("*"). */
  advertisers: ReadonlySet<number> | null
  write: boolean
  credential: string
  rateLimit: { max: number; windowMs: number } | null
}

function normalize(raw: RawConfig, env: Env, readFile: (p: string) => string, problems: string[]) {
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
    }, problems),
  }
  for (const [name, c] of Object.entries(raw.credentials)) {
    if (name === DEFAULT_CREDENTIAL) {
      problems.push(`credentials.${name}: the default credential is configured by the PLATFORM_* variables`)
      continue
    }
    credentials[name] = namedCredential(name, c, raw, baseUrl, env, readFile, problems)
  }

  const teams: TeamConfig[] = []
  const keyOwners = new Map<string, string>()
  for (const [name, t] of Object.entries(raw.teams)) {
    if (!credentials[t.credential]) problems.push(`teams.${name}.credential: no credential named ${t.credential}`)
    for (const hash of t.keys) {
      const owner = keyOwners.get(hash)
      if (owner) problems.push(`teams.${name}.keys: a key is also listed for team ${owner}`)
      keyOwners.set(hash, name)
    }
    teams.push({
      name,
      keyHashes: t.keys,
      advertisers: t.advertisers.includes('*') ? null : new Set(t.advertisers as number[]),
      write: t.write,
      credential: t.credential,
      rateLimit: t.rateLimit ? { max: t.rateLimit.max, windowMs: parseDuration(t.rateLimit.window) } : null,
    })
  }

  const cache = raw.cache
  if (!isValidTimeZone(cache.timeZone)) problems.push(`cache.timeZone: not an IANA time zone (got ${JSON.stringify(cache.timeZone)})`)
  if (raw.redis.sentinels && raw.redis.cluster) problems.push('redis: set sentinels or cluster, not both')
  // An idle caller socket is closed after connectionTimeout: it must outlast the longest
  // platform call, or a slow report would be cut off while the gateway waits for it.
  if (parseDuration(raw.server.connectionTimeout) <= parseDuration(p.timeout)) {
    problems.push(`server.connectionTimeout: must be longer than platform.timeout (${String(p.timeout)})`)
  }

  const secrets = [raw.admin.token, raw.gatewaySecret]
    .concat(Object.values(credentials).flatMap((c) => [c.token, c.login?.password, c.login?.clientSecret]))
    .filter((s): s is string => typeof s === 'string' && s.length > 0)

  return {
    host: raw.host,
    port: raw.port,
    admin: { host: raw.admin.host, port: raw.admin.port, token: raw.admin.token ?? null },
    logLevel: raw.logLevel,
    bodyLimit: parseSize(raw.bodyLimit),
    shutdownGraceMs: parseDuration(raw.shutdownGrace),
    server: {
      requestTimeoutMs: parseDuration(raw.server.requestTimeout),
      connectionTimeoutMs: parseDuration(raw.server.connectionTimeout),
    },
    limits: {
      reportBodyBytes: parseSize(raw.limits.reportBody),
      jsonDepth: raw.limits.jsonDepth,
      params: raw.limits.params,
    },
    ownership: {
      listPath: raw.ownership.listPath,
      perPage: raw.ownership.perPage,
      maxPages: raw.ownership.maxPages,
      ttlMs: parseDuration(raw.ownership.ttl),
      refreshMinIntervalMs: parseDuration(raw.ownership.refreshMinInterval),
      fields: raw.ownership.fields,
      campaignPaths: raw.ownership.campaignPaths,
    },
    gatewaySecret: raw.gatewaySecret ?? null,
    demo: baseUrl === null,
    platform: {
      baseUrl,
      tokenUrl: p.tokenUrl,
      grantType: p.grantType,
      timeoutMs: parseDuration(p.timeout),
      connections: p.connections,
      keepAliveTimeoutMs: parseDuration(p.keepAliveTimeout),
      refreshBeforeMs: parseDuration(p.refreshBefore),
      expiryWarningsMs: p.expiryWarnings.map(parseDuration).sort((a, b) => b - a),
      tokenFilePollMs: parseDuration(p.tokenFilePoll),
      maintenanceMs: parseDuration(p.maintenanceInterval),
      probe: p.probe,
    },
    credentials,
    redis: {
      url: raw.redis.url,
      sentinels: raw.redis.sentinels,
      sentinelName: raw.redis.sentinelName,
      cluster: raw.redis.cluster,
      keyPrefix: raw.redis.keyPrefix,
      commandTimeoutMs: parseDuration(raw.redis.commandTimeout),
      breakerCooldownMs: parseDuration(raw.redis.breakerCooldown),
      rateLimitSyncMs: parseDuration(raw.redis.rateLimitSync),
    },
    cache: {
      enabled: cache.enabled,
      l1MaxBytes: parseSize(cache.l1MaxBytes),
      maxEntryBytes: parseSize(cache.maxEntryBytes),
      keyVersion: cache.keyVersion,
      ttl: { recentMs: parseDuration(cache.ttl.recent), settledMs: parseDuration(cache.ttl.settled) },
      settledAfterDays: cache.settledAfterDays,
      timeZone: cache.timeZone,
      staleWhileRevalidateMs: parseDuration(cache.staleWhileRevalidate),
      staleIfErrorMs: parseDuration(cache.staleIfError),
      lockTimeoutMs: parseDuration(cache.lockTimeout),
      maxRangeDays: cache.maxRangeDays,
    },
    teams,
    secrets,
  }
}

export type Config = ReturnType<typeof normalize>

function envName(path: string, env: string): string {
  return `${env} (${path})`
}

function checkUrl(value: string | null | undefined, name: string, problems: string[]): string | null {
  if (value == null) return null
  try {
    const url = new URL(value)
    if (url.search || url.hash || url.pathname !== '/') {
      problems.push(`${name}: must be an origin only, without path, query or fragment (got ${JSON.stringify(maskUrlPassword(value))})`)
    }
    return url.href.replace(/\/+$/, '')
  } catch {
    problems.push(`${name}: not a URL (got ${JSON.stringify(maskUrlPassword(value))})`)
    return null
  }
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

function credentialFrom(name: string, c: CredentialParts, problems: string[]): CredentialConfig {
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
  const sources = [c.token, c.tokenFile, login].filter((v) => v != null).length
  if (sources > 1) {
    problems.push(`${c.prefix}TOKEN: credential ${name} has more than one token source; set one of ${c.prefix}TOKEN, ${c.prefix}TOKEN_FILE or the password login`)
  }
  if (c.baseUrl !== null && sources === 0) {
    problems.push(
      `${c.prefix}TOKEN: credential ${name} has no token source; set ${c.prefix}TOKEN, ${c.prefix}TOKEN_FILE, or ${c.prefix}USERNAME, ${c.prefix}PASSWORD, ${c.prefix}CLIENT_ID and ${c.prefix}CLIENT_SECRET`,
    )
  }
  if (!/^(\/|https?:\/\/)/.test(c.tokenUrl)) problems.push(`${c.prefix}TOKEN_URL: must be a path starting with / or an http(s) URL (got ${JSON.stringify(c.tokenUrl)})`)
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
  const prefix = `CREDENTIAL_${name.toUpperCase().replace(/-/g, '_')}_`
  const fromFile = (path: string | null | undefined, label: string) => {
    if (!path) return null
    try {
      const v = readFile(path).trim()
      if (v === '') problems.push(`credentials.${name}.${label}: ${path} is empty`)
      return v || null
    } catch (err) {
      problems.push(`credentials.${name}.${label}: ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
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

/** `scheme://user:password@host` with the password replaced, for messages (REDIS_URL, base URLs). */
export function maskUrlPassword(value: unknown): unknown {
  if (typeof value !== 'string') return value
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/?#@:]*:)[^/?#@]*@/i, '$1***@')
}

function isValidTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz })
    return true
  } catch {
    return false
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    const current = target[key]
    if (isPlainObject(current) && isPlainObject(value)) deepMerge(current, value)
    else target[key] = value
  }
}

function getPath(obj: unknown, path: string[]): unknown {
  let cur = obj
  for (const seg of path) {
    if (!isPlainObject(cur)) return undefined
    cur = cur[seg]
  }
  return cur
}

function setPath(obj: Record<string, unknown>, path: string[], value: unknown): void {
  let cur = obj
  for (const seg of path.slice(0, -1)) {
    if (!isPlainObject(cur[seg])) cur[seg] = {}
    cur = cur[seg] as Record<string, unknown>
  }
  cur[path[path.length - 1] as string] = value
}

function unescapePointer(s: string): string {
  return s.replace(/~1/g, '/').replace(/~0/g, '~')
}
