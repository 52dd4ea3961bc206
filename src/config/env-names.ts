import { nearestName } from './near-names.js'
import { CREDENTIAL_VARIABLE_SUFFIXES, credentialPrefix } from './names.js'
import { ENV_KEYS, type Env } from './sources.js'

// Variables the gateway reads besides ENV_KEYS: the files, demo mode, the build's commit and
// the OpenTelemetry ones it documents. A variable one or two letters away from one of these
// (PLATFORM_TOKN, REDIS_ULR) is almost surely that one mistyped: the gateway reads nothing
// of it, and a replica without its Redis, or its token, starts as if it had never been set.
const OTHER_NAMES = [
  'CONFIG_FILE',
  'TEAMS_FILE',
  'DEMO',
  'GATEWAY_COMMIT',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'OTEL_EXPORTER_OTLP_TIMEOUT',
  'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_SDK_DISABLED',
  'OTEL_TRACES_EXPORTER',
]

// What other tools name a setting the gateway reads under a name of its own, too far from
// it to be taken for a slip (REDIS_HOST is four edits from REDIS_URL): what the gateway
// reads instead. REDIS_PORT is not among them: Kubernetes gives every pod of a namespace
// with a Service named redis REDIS_PORT=tcp://… (a service link).
const REDIS_WHOLE = 'Redis is given whole as REDIS_URL, redis://[user:password@]host[:port][/db]'
const OTHER_TOOLS_NAMES: Readonly<Record<string, string>> = {
  REDIS_HOST: REDIS_WHOLE,
  REDIS_PASSWORD: REDIS_WHOLE,
  REDIS_ADDR: REDIS_WHOLE,
  REDIS_ADDRESS: REDIS_WHOLE,
  PLATFORM_URL: "the platform's address is PLATFORM_BASE_URL",
  PLATFORM_API_URL: "the platform's address is PLATFORM_BASE_URL",
  PLATFORM_HOST: "the platform's address is PLATFORM_BASE_URL",
  PLATFORM_ACCESS_TOKEN: 'a ready platform token is PLATFORM_TOKEN (or PLATFORM_TOKEN_FILE)',
  PLATFORM_API_TOKEN: 'a ready platform token is PLATFORM_TOKEN (or PLATFORM_TOKEN_FILE)',
  PLATFORM_API_KEY: 'a ready platform token is PLATFORM_TOKEN (or PLATFORM_TOKEN_FILE)',
  ADMIN_PASSWORD: 'the admin token is ADMIN_TOKEN (or ADMIN_TOKEN_FILE)',
  ADMIN_API_KEY: 'the admin token is ADMIN_TOKEN (or ADMIN_TOKEN_FILE)',
}

/** Every variable name the gateway reads, but the CREDENTIAL_<NAME>_* ones, whose names the config file makes. */
export const KNOWN_VARIABLES: ReadonlySet<string> = new Set([
  ...ENV_KEYS.map((k) => k.env),
  ...ENV_KEYS.filter((k) => k.secret === true && k.file !== false).map((k) => `${k.env}_FILE`),
  ...OTHER_NAMES,
])

/**
 * One line for each variable of `env` the gateway does not read that is a near miss of one
 * it does (within one edit of a name shorter than 8 characters, two of a longer one: HOME is
 * not HOST mistyped): `PLATFORM_TOKN: not a variable the gateway reads; did you mean
 * PLATFORM_TOKEN? …`. Names the gateway reads, lower-case names (npm's own) and
 * CREDENTIAL_* names are left to strayCredentialProblems. The value is never repeated.
 */
export function misspelledVariables(env: Env): string[] {
  const lines: string[] = []
  for (const name of Object.keys(env).sort()) {
    if (env[name] === undefined || KNOWN_VARIABLES.has(name) || !/^[A-Z][A-Z0-9_]{3,}$/.test(name) || name.startsWith('CREDENTIAL_')) continue
    const instead = OTHER_TOOLS_NAMES[name]
    if (instead !== undefined && env[name] !== '') {
      lines.push(`${name}: not a variable the gateway reads; ${instead} (the gateway reads nothing of it; rename or remove it)`)
      continue
    }
    const meant = nearestName(name, KNOWN_VARIABLES)
    if (meant !== null) lines.push(`${name}: not a variable the gateway reads; did you mean ${meant}? (rename it; as it is, the gateway starts as if ${meant} were not set)`)
  }
  return lines
}

/**
 * The non-empty CREDENTIAL_* variables of `env` that no credential of `credentials` reads:
 * a mistyped name (CREDENTIAL_PARTNR_TOKEN), a secret no credential has (…_TOKEN_URL), or
 * the variable of a credential removed from the file while its Secret is still mounted.
 * Nothing reads them, and the operator believes them in force.
 */
export function strayCredentialVariables(env: Env, credentials: readonly string[]): string[] {
  const read = readCredentialVariables(credentials)
  return Object.keys(env)
    .filter((name) => name.startsWith('CREDENTIAL_') && env[name] && !read.has(name))
    .sort()
}

/**
 * A start's problem for each of strayCredentialVariables, with the variable meant when one
 * is near, as written or in capitals (`CREDENTIAL_partner_TOKEN`, the name as the file writes it). The namespace is the gateway's own, so a start refuses them rather than warn
 * (docs/decisions/credential-variables-of-no-credential.md). The value is never repeated.
 */
export function strayCredentialProblems(env: Env, credentials: readonly string[]): string[] {
  const read = readCredentialVariables(credentials)
  const declared = credentials.length > 0 ? credentials.join(', ') : 'none declared'
  return strayCredentialVariables(env, credentials).map((name) => {
    // The config file's spelling of the name (lower case, `-`) is many edits from its variable's.
    const meant = nearestName(name, read) ?? nearestName(name.toUpperCase().replaceAll('-', '_'), read)
    const hint = meant === null ? 'remove it' : `did you mean ${meant}? Remove it`
    return `${name}: a variable of no declared credential (credentials: ${declared}): the gateway reads nothing of it; ${hint}, or declare the credential it is for`
  })
}

function readCredentialVariables(credentials: readonly string[]): Set<string> {
  return new Set(credentials.flatMap((c) => CREDENTIAL_VARIABLE_SUFFIXES.map((suffix) => `${credentialPrefix(c)}${suffix}`)))
}
