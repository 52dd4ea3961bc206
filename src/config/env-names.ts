import { nearestName } from './near-names.js'
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
 * CREDENTIAL_* names are left alone. The value is never repeated.
 */
export function misspelledVariables(env: Env): string[] {
  const lines: string[] = []
  for (const name of Object.keys(env).sort()) {
    if (env[name] === undefined || KNOWN_VARIABLES.has(name) || !/^[A-Z][A-Z0-9_]{3,}$/.test(name) || name.startsWith('CREDENTIAL_')) continue
    const meant = nearestName(name, KNOWN_VARIABLES)
    if (meant !== null) lines.push(`${name}: not a variable the gateway reads; did you mean ${meant}? (rename it; as it is, the gateway starts as if ${meant} were not set)`)
  }
  return lines
}
