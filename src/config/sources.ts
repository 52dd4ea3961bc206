import { createHash } from 'node:crypto'
import { isAbsolute, resolve } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { DEFAULTS_SHA256, DEFAULTS_VALUE } from './defaults.generated.js'

// Where settings come from: config/default.yaml, CONFIG_FILE and the environment (with
// *_FILE for secrets), merged in that order.

export type Env = Record<string, string | undefined>

// Environment variables of the contract, and the config path each one sets.
// `secret`: may also come from <NAME>_FILE, and may never come from a config file.
export const ENV_KEYS: { env: string; path: string[]; kind: 'string' | 'int' | 'number-or-string' | 'list'; secret?: boolean; file?: boolean }[] = [
  { env: 'HOST', path: ['host'], kind: 'string' },
  { env: 'PORT', path: ['port'], kind: 'int' },
  { env: 'ADMIN_HOST', path: ['admin', 'host'], kind: 'string' },
  { env: 'ADMIN_PORT', path: ['admin', 'port'], kind: 'int' },
  { env: 'ADMIN_HOSTS', path: ['admin', 'hosts'], kind: 'list' },
  { env: 'ADMIN_TOKEN', path: ['admin', 'token'], kind: 'string', secret: true },
  { env: 'ADMIN_VIEWER_TOKEN', path: ['admin', 'viewerToken'], kind: 'string', secret: true },
  { env: 'ADMIN_TOKENS_FILE', path: ['admin', 'tokensFile'], kind: 'string' },
  { env: 'LOG_LEVEL', path: ['logLevel'], kind: 'string' },
  { env: 'GATEWAY_SECRET', path: ['gatewaySecret'], kind: 'string', secret: true },
  { env: 'GATEWAY_SECRET_FALLBACK', path: ['gatewaySecretFallback'], kind: 'string', secret: true },
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
  { env: 'REDIS_SENTINEL_PASSWORD', path: ['redis', 'sentinelPassword'], kind: 'string', secret: true },
]

// Values a config file may never hold (contract: secrets come only from the
// environment or from *_FILE paths).
export const FILE_FORBIDDEN = [
  ['admin', 'token'],
  ['admin', 'viewerToken'],
  ['gatewaySecret'],
  ['gatewaySecretFallback'],
  ['platform', 'token'],
  ['platform', 'password'],
  ['platform', 'clientSecret'],
  ['redis', 'sentinelPassword'],
]

export function readYamlObject(path: string, readFile: (p: string) => string, problems: string[], label: string, parse: (text: string) => unknown = parseYaml): Record<string, unknown> {
  let text: string
  try {
    text = readFile(path)
  } catch (err) {
    problems.push(`${label}: cannot be read (${unreadable(path, err)})`)
    return {}
  }
  try {
    const value: unknown = parse(text) ?? {}
    if (!isPlainObject(value)) {
      problems.push(`${label}: must be a YAML mapping`)
      return {}
    }
    return value
  } catch (err) {
    problems.push(`${label}: not valid YAML ${yamlErrorPlace(err)}`)
    return {}
  }
}

// The last text of config/default.yaml and its parse. Every load reads that file (at start,
// and again at each reload), and parsing its 25 KB was a third of a load's CPU. Its text as
// committed is parsed ahead of time (defaults.generated.ts, known by its sha256): a start
// parses the file only when it holds another text.
let kept: { text: string; value: unknown } | null = null

/**
 * readYamlObject for config/default.yaml: a text the last read parsed, or the one
 * defaults.generated.ts was made from, is not parsed again. Each read gets a copy of its
 * own, for the other sources are merged into it.
 */
export function readDefaultsObject(path: string, readFile: (p: string) => string, problems: string[], label: string, parse: (text: string) => unknown = parseYaml): Record<string, unknown> {
  return readYamlObject(path, readFile, problems, label, (text) => {
    if (kept?.text !== text) kept = { text, value: createHash('sha256').update(text, 'utf8').digest('hex') === DEFAULTS_SHA256 ? DEFAULTS_VALUE : parse(text) }
    return structuredClone(kept.value)
  })
}

/**
 * Why a file the configuration names cannot be read, for its problem line: the error's code,
 * and, for a relative path with no file, where it was looked for. A relative path is read
 * from the process's working directory, which `npm start` makes the package's folder
 * whatever folder it was typed in (npm gives that one as INIT_CWD): `CONFIG_FILE=my.yaml
 * npm start` typed in a subfolder reads the package folder's my.yaml. A path with spaces at its
 * ends is told so.
 */
export function unreadable(path: string, err: unknown, cwd: string = process.cwd(), typedIn: string | undefined = process.env.INIT_CWD): string {
  const code = (err as NodeJS.ErrnoException).code ?? 'error'
  // A .env line's trailing space is kept in the value: the path names another file than the one meant.
  if (code === 'ENOENT' && path.trim() !== path) return `ENOENT; the path ${JSON.stringify(path)} has spaces at its ends: remove them`
  if (code !== 'ENOENT' || isAbsolute(path)) return code
  const elsewhere = typedIn !== undefined && resolve(typedIn) !== resolve(cwd) ? `, not from ${typedIn}, where npm was run` : ''
  return `ENOENT: no file ${resolve(cwd, path)}; a relative path is read from ${cwd}${elsewhere}; give an absolute path`
}

export function applyEnv(raw: Record<string, unknown>, env: Env, readFile: (p: string) => string, problems: string[]): Map<string, string> {
  const sources = new Map<string, string>()
  for (const key of ENV_KEYS) {
    const fileForm = key.secret === true && key.file !== false
    // A variable without a file form, given as one, would be ignored: REDIS_URL_FILE ran
    // every replica without Redis.
    if (!fileForm && env[`${key.env}_FILE`] !== undefined && !ENV_KEYS.some((k) => k.env === `${key.env}_FILE`)) {
      problems.push(
        `${key.env}_FILE: not read: ${key.env} has no *_FILE form; set ${key.env} itself (a Kubernetes Secret gives it with env valueFrom.secretKeyRef)`,
      )
    }
    const value = readEnv(env, key.env, fileForm, readFile, problems, key.secret === true)
    if (value === undefined) continue
    let parsed: unknown = value
    if (key.kind === 'int') {
      parsed = /^\d+$/.test(value) ? Number(value) : value
    } else if (key.kind === 'number-or-string') {
      parsed = /^\d+$/.test(value) ? Number(value) : value
    } else if (key.kind === 'list') {
      // Comma-separated: `a, b.` is ["a", "b."]; spaces around an item and empty items are no part of it.
      parsed = value.split(',').map((item) => item.trim()).filter((item) => item !== '')
    }
    setPath(raw, key.path, parsed)
    sources.set(key.path.join('.'), key.env)
  }
  return sources
}

/**
 * A variable, or the trimmed content of the file its *_FILE variable names. A secret
 * with spaces at its ends or control characters (a pasted line break, a stray quote's
 * neighbour) is refused, and, like every secret, never repeated in the message.
 */
export function readEnv(env: Env, name: string, allowFile: boolean, readFile: (p: string) => string, problems: string[], secret = true): string | undefined {
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
      if (hasControlCharacters(content)) {
        problems.push(`${name}_FILE: ${filePath} ${MALFORMED_SECRET}`)
        return undefined
      }
      if (secret && wrappedInQuotes(content)) {
        problems.push(`${name}_FILE: ${filePath} ${QUOTED_SECRET}`)
        return undefined
      }
      return content
    } catch (err) {
      problems.push(`${name}_FILE: ${filePath} cannot be read (${unreadable(filePath, err)})`)
      return undefined
    }
  }
  if (direct === '' || direct === undefined) return undefined
  if (secret && (hasControlCharacters(direct) || direct.trim() !== direct)) {
    problems.push(`${name}: has spaces at its ends or control characters; set it without them (the value is not shown)`)
    return undefined
  }
  if (secret && wrappedInQuotes(direct)) {
    problems.push(`${name}: ${QUOTED_SECRET}`)
    return undefined
  }
  return direct
}

/**
 * A secret wrapped in quotes, `"…"` or `'…'`: a .env line read by docker --env-file or
 * Compose's env_file (which keep them), or a YAML value quoted twice. No token, key or
 * generated secret has them: sent as it is, the platform refuses the token, and two
 * replicas given GATEWAY_SECRET with and without them ignore what the other seals.
 */
function wrappedInQuotes(value: string): boolean {
  return value.length >= 2 && (value[0] === '"' || value[0] === "'") && value[value.length - 1] === value[0]
}
const QUOTED_SECRET = "is wrapped in quotes, which docker --env-file and Compose's env_file keep as part of the value; set it without them (the value is not shown)"

/** A line break, NUL, DEL or another C0 control: never part of a secret, token or URL. */
export function hasControlCharacters(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x20 || code === 0x7f) return true
  }
  return false
}
export const MALFORMED_SECRET = 'holds control characters (a line break inside?); it must hold the secret alone (the content is not shown)'

/**
 * Why a platform token cannot be sent as it is in `authorization: Bearer <token>`, or
 * null: a line break inside; `Bearer <token>`, a header's value pasted where the token
 * alone belongs (sent as `Bearer Bearer …`, which the platform refuses); quotes around it
 * (a value copied from JSON or YAML; b64token has none); a space or a character outside printable ASCII (RFC 6750's b64token has neither), a pasted
 * typographic quote, which no HTTP client sends. PUT /admin/token refuses the same. The
 * message never holds the token.
 */
export function tokenFault(token: string): string | null {
  if (hasControlCharacters(token)) return MALFORMED_SECRET
  if (/^bearer\s/i.test(token)) return 'starts with "Bearer ", as an authorization header does; it must hold the token alone (the content is not shown)'
  if (wrappedInQuotes(token)) return 'is wrapped in quotes, which no token has; it must hold the token alone, without them (the content is not shown)'
  if (!/^[!-~]+$/.test(token)) return 'holds a space or a character outside printable ASCII, which no authorization header carries; it must hold the token alone (the content is not shown)'
  return null
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

export function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    const current = target[key]
    if (isPlainObject(current) && isPlainObject(value)) deepMerge(current, value)
    else target[key] = value
  }
}

/** The value at a path of settings; a segment of a list is its item's index. */
export function getPath(obj: unknown, path: string[]): unknown {
  let cur = obj
  for (const seg of path) {
    if (Array.isArray(cur)) cur = /^\d+$/.test(seg) ? (cur as unknown[])[Number(seg)] : undefined
    else if (isPlainObject(cur)) cur = cur[seg]
    else return undefined
  }
  return cur
}

export function setPath(obj: Record<string, unknown>, path: string[], value: unknown): void {
  let cur = obj
  for (const seg of path.slice(0, -1)) {
    if (!isPlainObject(cur[seg])) cur[seg] = {}
    cur = cur[seg] as Record<string, unknown>
  }
  cur[path[path.length - 1] as string] = value
}

/**
 * Where a YAML parse failed and why, in one line: `at line L, column C: <reason>`. The
 * parser's message ends with an excerpt of the text around the place, which is left out:
 * a teams file may hold a webhook's secret there.
 */
export function yamlErrorPlace(err: unknown): string {
  const first = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.replace(/:$/, '')
  const at = / at line (\d+), column (\d+)$/.exec(first)
  return at ? `at line ${at[1]}, column ${at[2]}: ${first.slice(0, at.index)}` : `(${first})`
}
