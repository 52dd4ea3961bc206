import { ENV_KEYS, getPath, isPlainObject, type Env } from './sources.js'
import { shownUrl } from './mask-url.js'
import { credentialPrefix } from './names.js'

/** What the settings view reads of a credential (normalize.ts's CredentialConfig). */
interface CredentialSecrets {
  name: string
  token: string | null
  login: { username: string; password: string; clientId: number | string; clientSecret: string } | null
}

// Where each setting in force came from (GET /admin/config): the defaults of
// config/default.yaml, CONFIG_FILE, or the environment; what demo mode set in their place,
// and what an operator changed at run time (the log level). A secret is marked as one: its
// value is the config's own, and only its fingerprint ever leaves the gateway (the admin
// call makes it); a URL is kept without its userinfo, query and fragment.

export type SettingSource = 'default' | 'file' | 'environment' | 'demo' | 'runtime'

/** One setting in force. */
export interface Setting {
  /** Its path in the config file, `cache.ttl.recent`; a named credential's secret, `credentials.<name>.password`. */
  setting: string
  /** Its value as configured (a duration as written, `30s`). */
  value: unknown
  source: SettingSource
  /** Where exactly: `config/default.yaml`, `CONFIG_FILE`, the variable that set it (`PLATFORM_PASSWORD_FILE`), `demo mode`, the admin call. */
  from: string
  /** A secret: never shown, only its fingerprint. */
  secret?: true
}

const DEFAULTS = 'config/default.yaml'
/** The settings that hold a secret: given as fingerprints. */
const SECRETS = new Set(ENV_KEYS.filter((k) => k.secret).map((k) => k.path.join('.')))
/**
 * The URL settings (`redis.url`, `platform.baseUrl`, `platform.tokenUrl`, each named
 * credential's `baseUrl` and `tokenUrl`), and any other setting whose value is an
 * absolute URL (`…://…`): shown without userinfo, query or fragment (shownUrl).
 */
const URL_SETTING = /(^|\.)url$|Url$/

/** The leaves of `value` by dotted path; an array or null is a leaf. */
function leaves(value: unknown, path: string[], out: [string[], unknown][]): [string[], unknown][] {
  if (!isPlainObject(value)) out.push([path, value])
  else for (const [k, v] of Object.entries(value)) leaves(v, [...path, k], out)
  return out
}

/** The variable that set a setting of the environment: `<NAME>_FILE` when the value came from a file. */
function variable(env: Env, name: string): string {
  return env[`${name}_FILE`] ? `${name}_FILE` : name
}

function kept(path: string, value: unknown): Pick<Setting, 'value' | 'secret'> {
  if (SECRETS.has(path)) return { value: value === '' ? null : value, secret: true }
  return { value: URL_SETTING.test(path) || (typeof value === 'string' && value.includes('://')) ? shownUrl(value) : value }
}

/**
 * Every setting of the merged raw configuration but the teams (GET /admin/keys and
 * /admin/status give those), each with its source; then the secrets of the named
 * credentials, which come from CREDENTIAL_<NAME>_* variables or the files their entry names.
 */
export function settingsInForce(o: { raw: Record<string, unknown>; file: Record<string, unknown>; envSources: Map<string, string>; env: Env; credentials: Record<string, CredentialSecrets> }): Setting[] {
  const settings: Setting[] = []
  for (const [parts, value] of leaves(o.raw, [], [])) {
    if (parts[0] === 'teams') continue
    const path = parts.join('.')
    const name = o.envSources.get(path)
    const where: Pick<Setting, 'source' | 'from'> =
      name !== undefined ? { source: 'environment', from: variable(o.env, name) } : getPath(o.file, parts) !== undefined ? { source: 'file', from: 'CONFIG_FILE' } : { source: 'default', from: DEFAULTS }
    settings.push({ setting: path, ...kept(path, value), ...where })
  }
  for (const c of Object.values(o.credentials)) {
    if (c.name === 'default') continue
    const prefix = credentialPrefix(c.name)
    const secrets: [string, string | number | null, string][] = [
      ['token', c.token, 'TOKEN'],
      ['username', c.login?.username ?? null, 'USERNAME'],
      ['password', c.login?.password ?? null, 'PASSWORD'],
      ['clientId', c.login?.clientId ?? null, 'CLIENT_ID'],
      ['clientSecret', c.login?.clientSecret ?? null, 'CLIENT_SECRET'],
    ]
    for (const [field, value, suffix] of secrets) {
      if (value === null) continue
      const set = o.env[`${prefix}${suffix}`] || o.env[`${prefix}${suffix}_FILE`]
      settings.push({
        setting: `credentials.${c.name}.${field}`,
        value,
        secret: true,
        ...(set ? { source: 'environment' as const, from: variable(o.env, `${prefix}${suffix}`) } : { source: 'file' as const, from: `credentials.${c.name}.${field}File` }),
      })
    }
  }
  return settings
}

/**
 * `settings` with one setting's value and source replaced (demo mode's address, a log level
 * changed at run time), or added after them when no source set it (demo mode's login and
 * admin token); a secret stays one (shown by its fingerprint).
 */
export function overridden(settings: readonly Setting[], setting: string, value: unknown, source: SettingSource, from: string): Setting[] {
  const changed: Setting = { setting, value, source, from, ...(SECRETS.has(setting) ? { secret: true as const } : {}) }
  return settings.some((s) => s.setting === setting) ? settings.map((s) => (s.setting === setting ? changed : s)) : [...settings, changed]
}
