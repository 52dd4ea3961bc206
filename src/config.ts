import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { RawConfig } from './config/schema.js'
import { validateSchema } from './config/schema-errors.js'
import { FILE_FORBIDDEN, applyEnv, deepMerge, getPath, isPlainObject, readDefaultsObject, readYamlObject, setPath, type Env } from './config/sources.js'
import { normalize, type Config } from './config/normalize.js'
import { tracingConfig } from './config/tracing.js'
import { decideDemo } from './config/demo-mode.js'
import { redisWithoutSecret } from './config/redis-secret.js'
import { readTeamsFile } from './config/teams-file.js'
import { settingsInForce } from './config/provenance.js'
import { jobResultsInMemory, memoryFitWarning } from './config/memory-fit.js'
import { jobsKeepWarning } from './config/jobs-keep.js'
import { creativeSetsPassWarning } from './config/risky-settings.js'
import { shortLoginSecretWarnings } from './config/login-secrets.js'
import { misspelledVariables } from './config/env-names.js'
import { bareDurationWarnings } from './config/bare-durations.js'
import { timerDurationProblems } from './config/timer-durations.js'
import { listenerAddressProblem } from './config/listener-addresses.js'
import { RENAMED_SETTINGS, RETIRED_SETTINGS } from './config/setting-moves.js'
import { inFileOrder, locatedText, placesOf, type ProblemPlace, type YamlSource } from './config/yaml-lines.js'

export { DEFAULT_CREDENTIAL, type AdminRole, type AdminToken, type Config, type CredentialConfig, type PasswordLogin, type TeamConfig, type TeamKey } from './config/normalize.js'
export { maskUrlPassword } from './config/mask-url.js'
export { readEnv } from './config/sources.js'
export { misspelledVariables } from './config/env-names.js'
export { isTeamName } from './config/teams.js'
export { parseDuration, parseSize } from './config/units.js'
export { overridden, type Setting, type SettingSource } from './config/provenance.js'

export const DEFAULT_CONFIG_PATH = fileURLToPath(new URL('../config/default.yaml', import.meta.url))

export class ConfigError extends Error {
  /** The same problems, each followed by the line of its file that writes the setting it names, when one does (`places`), as the message says them. */
  readonly located: string[]

  /**
   * `problems`, one line each; `places`: where each points (config/yaml-lines.ts), the
   * setting it names and the line of its file that writes it; by default none.
   */
  constructor(
    readonly problems: string[],
    readonly places: ProblemPlace[] = placesOf(problems),
  ) {
    const located = places.map(locatedText)
    // One problem is one line, so that it reads whole in `kubectl logs` and in an event.
    super(located.length === 1 ? `invalid configuration: ${located[0]}` : `invalid configuration:\n${located.map((p) => `  - ${p}`).join('\n')}`)
    this.located = located
    this.name = 'ConfigError'
  }
}

/** The refusal of `places` as a reader meets them: those of no line (a variable's) first, then each file's by line (inFileOrder). */
function refusalInFileOrder(places: readonly ProblemPlace[]): ConfigError {
  const sorted = inFileOrder(places)
  return new ConfigError(sorted.map((p) => p.message), sorted)
}

export interface LoadOptions {
  env?: Env
  /** Read a *_FILE path; passed in so tests need no files. */
  readFile?: (path: string) => string
  /** The container's memory limit in bytes (0 or about 2^64: none known); passed in so tests need no cgroup. */
  memoryLimit?: () => number
  /**
   * The named credentials whose CREDENTIAL_* variables are read: a reload gives the running
   * ones (a credential changes only at a restart); unset, the file's, and a variable of none
   * of them is refused.
   */
  credentialsInForce?: readonly string[]
  /**
   * Where a token file that holds no token is said: unset, among the problems (the start
   * refuses it); a reload gives a list of its own, and takes the teams (the file's watcher
   * keeps the token in use).
   */
  tokenFileFaults?: string[]
}

export function loadConfig({ env = process.env, readFile = (p) => readFileSync(p, 'utf8'), memoryLimit = () => process.constrainedMemory(), credentialsInForce, tokenFileFaults }: LoadOptions = {}): Config {
  const problems: string[] = []
  const warnings: string[] = []
  const raw = readDefaultsObject(DEFAULT_CONFIG_PATH, readFile, problems, 'config/default.yaml')
  let fileSetsHost = false
  let fileDeclaresTeams = false
  let file: Record<string, unknown> = {}
  let moved: RenamedSetting[] = []
  if (env.CONFIG_FILE) {
    file = readYamlObject(env.CONFIG_FILE, readFile, problems, `CONFIG_FILE (${env.CONFIG_FILE})`)
    for (const path of FILE_FORBIDDEN) {
      if (getPath(file, path) != null) {
        problems.push(`${path.join('.')}: secrets may not be set in CONFIG_FILE; use its environment variable or *_FILE`)
      }
    }
    if (holdsUserinfo(getPath(file, ['redis', 'url']))) {
      problems.push('redis.url: holds a user or password; secrets may not be set in CONFIG_FILE; give this URL as REDIS_URL (the value is not shown)')
    }
    fileSetsHost = file.host != null
    fileDeclaresTeams = file.teams != null
    // Renamed in the file itself: the setting in force shows CONFIG_FILE as its source.
    const renames = renamed(file)
    moved = renames.moved
    warnings.push(...renames.warnings, ...retired(file))
    deepMerge(raw, file)
  }
  if (env.TEAMS_FILE) {
    const teams = readTeamsFile(env.TEAMS_FILE, readFile, problems)
    // One source of truth for the teams: merged, a key revoked in one file could live on in the other.
    if (fileDeclaresTeams) {
      problems.push(`TEAMS_FILE: teams are declared both in CONFIG_FILE (${env.CONFIG_FILE}) and in TEAMS_FILE (${env.TEAMS_FILE}); keep them in TEAMS_FILE alone (remove teams: from CONFIG_FILE)`)
    } else if (teams !== undefined) {
      raw.teams = teams
    }
  }
  const envSources = applyEnv(raw, env, readFile, problems)
  // A problem of a setting written in a file says on which line (config/yaml-lines.ts).
  const yamlSources: YamlSource[] = [
    ...(env.CONFIG_FILE ? [{ variable: 'CONFIG_FILE', path: env.CONFIG_FILE, teamsOnly: false }] : []),
    ...(env.TEAMS_FILE ? [{ variable: 'TEAMS_FILE', path: env.TEAMS_FILE, teamsOnly: true }] : []),
  ]
  const refused = () => refusalInFileOrder(placesOf(problems.map((problem) => asWritten(problem, moved)), yamlSources, readFile, env.ADMIN_TOKENS_FILE ? { ADMIN_TOKENS_FILE: env.ADMIN_TOKENS_FILE } : {}))
  if (problems.length > 0) throw refused()
  validateSchema(raw, envSources, problems)
  // A timer past 24 days and an OTEL_* value the gateway cannot honour are told beside a
  // setting of the wrong type; the checks of one setting against another need every type
  // right and every timer within its bound first (a connectionTimeout told to outlast a
  // 30d platform.timeout would be told wrong).
  problems.push(...timerDurationProblems(raw))
  const tracing = tracingConfig(env, problems)
  if (problems.length > 0) throw refused()
  const mode = decideDemo(raw, env)
  if (!mode.demo && mode.problem) problems.push(mode.problem)
  const secretProblem = mode.demo ? null : redisWithoutSecret(raw)
  if (secretProblem) problems.push(secretProblem)
  const config = normalize(raw as RawConfig, env, readFile, problems, { credentialsInForce, tokenFileFaults, demo: mode.demo, tracing })
  if (problems.length > 0) throw refused()
  // The demo's sandbox and printed key are for this machine only, unless HOST says otherwise.
  const host = mode.demo && !env.HOST && !fileSetsHost ? '127.0.0.1' : config.host
  const settings = settingsInForce({ raw, file, envSources, env, credentials: config.credentials })
  const creativeSets = creativeSetsPassWarning(config.ownership.creativeSets.check, config.teams)
  if (creativeSets !== null) warnings.push(creativeSets)
  warnings.push(...shortLoginSecretWarnings(Object.values(config.credentials)))
  const jobsKeep = jobsKeepWarning({ ms: config.jobs.keepMs, written: String((raw as RawConfig).jobs.keep) }, { ms: config.webhooks.retryForMs, written: String((raw as RawConfig).jobs.webhookRetryFor) })
  if (jobsKeep !== null) warnings.push(jobsKeep)
  const redis = Boolean(config.redis.url || config.redis.sentinels || config.redis.cluster)
  const jobResults = jobResultsInMemory({ redis, resultBytesPerTeam: config.jobs.resultBytesPerTeam, resultsRoom: config.jobs.resultsRoom, teams: config.teams.length })
  const connections = config.server.maxConnections + config.admin.maxConnections
  const memory = memoryFitWarning({ l1MaxBytes: config.cache.l1MaxBytes, bufferTotalBytes: config.platform.bufferTotalBytes, jobResults, connections }, memoryLimit())
  if (memory !== null) warnings.push(memory)
  warnings.push(...bareDurationWarnings(raw))
  warnings.push(...misspelledVariables(env))
  return { ...config, host, demo: mode.demo, warnings, memoryWarning: memory, settings: host === config.host ? settings : settings.map((s) => (s.setting === 'host' ? { ...s, value: host, source: 'demo', from: 'demo mode' } : s)) }
}

/**
 * The configuration a start runs with, or what stops it before anything starts (main.ts
 * prints the message and exits 78): the settings' problems, a mistyped variable named
 * beside them (PLATFORM_TOKN is often why there is no token source), or both listeners on
 * one port where the second cannot bind (the names resolved as the listens will resolve them).
 */
export async function startConfig(options: LoadOptions = {}): Promise<Config | ConfigError> {
  let config: Config
  try {
    config = loadConfig(options)
  } catch (err) {
    if (err instanceof ConfigError) {
      return refusalInFileOrder([...err.places, ...placesOf(misspelledVariables(options.env ?? process.env))])
    }
    throw err
  }
  const clash = await listenerAddressProblem(config)
  return clash === null ? config : new ConfigError([clash])
}


/** A warning for each retired setting `file` sets; the setting is dropped. */
function retired(file: Record<string, unknown>): string[] {
  return RETIRED_SETTINGS.filter(([path]) => takeOut(file, path).found).map(([path, why]) => `${path.join('.')} no longer has an effect (${why}); remove it`)
}

/** A setting the file wrote under its old name, moved to its new one: [old, new] as dotted paths. */
type RenamedSetting = readonly [string, string]

/**
 * Moves each renamed setting that `file` sets under its old name to its new one; returns a
 * warning for each, and the settings moved. A file that sets both keeps the new name's value.
 */
function renamed(file: Record<string, unknown>): { warnings: string[]; moved: RenamedSetting[] } {
  const warnings: string[] = []
  const moved: RenamedSetting[] = []
  for (const [from, to] of RENAMED_SETTINGS) {
    const { found, value } = takeOut(file, from)
    if (!found || value === null) continue
    const [old, now] = [from.join('.'), to.join('.')]
    if (getPath(file, to) !== undefined) {
      warnings.push(`${old} is renamed ${now}, which is set too: ${old} is ignored; remove it`)
      continue
    }
    setPath(file, to, value)
    moved.push([old, now])
    warnings.push(`${old} is renamed ${now}: the old name is taken until the next release; set ${now} instead`)
  }
  return { warnings, moved }
}

/**
 * A problem of a setting the file wrote under its old name, named as the file writes it
 * (`platform.permitLease: must be …; it is renamed platform.seatLease`), so that it is found
 * there and placed at its line; it names the new name too, as a refused start logs no warning.
 */
export function asWritten(problem: string, moved: readonly RenamedSetting[]): string {
  for (const [old, now] of moved) {
    if (problem.startsWith(`${now}: `) || problem.startsWith(`${now}.`)) return `${old}${problem.slice(now.length)}; it is renamed ${now}`
  }
  return problem
}

/** Removes the setting at `path` from `file`: whether it was set, and its value. */
function takeOut(file: Record<string, unknown>, path: string[]): { found: boolean; value?: unknown } {
  const parent = getPath(file, path.slice(0, -1))
  const key = path[path.length - 1] as string
  if (!isPlainObject(parent) || !(key in parent)) return { found: false }
  const value = parent[key]
  delete parent[key]
  return { found: true, value }
}

/**
 * Whether `value` is a URL with a user or password (`scheme://user:password@host`): a
 * config file is no place for the Redis password (a ConfigMap, a repository), so a Redis
 * URL that holds one comes from REDIS_URL alone.
 */
function holdsUserinfo(value: unknown): boolean {
  return typeof value === 'string' && /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(value.trim())
}
