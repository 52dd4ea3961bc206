import { createHash, randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { Logger } from 'pino'
import { ConfigError, DEFAULT_CREDENTIAL, loadConfig, type AdminToken, type Config, type LoadOptions, type TeamConfig } from '../config.js'
import { ConfigRefusedError, ReloadUnavailableError } from '../errors.js'
import { placesOf } from '../config/yaml-lines.js'
import type { Metrics } from '../observe/metrics.js'
import type { SecretSet } from '../observe/logger.js'
import { digestFingerprint } from '../observe/fingerprint.js'
import type { RemovedKey } from '../observe/key-use.js'
import type { RedisBus } from '../redis/bus.js'
import type { AdminAuth } from './admin-auth.js'
import type { TeamDirectory } from './team-auth.js'
import { systemClock, type Clock, type Timer } from '../clock.js'
import { webhookSecretSpellings } from '../config/webhook-secret.js'
import { webhookRefusal } from '../config/webhook-hosts.js'
import { creativeSetsPassWarning } from '../config/risky-settings.js'
import { strayCredentialVariables } from '../config/env-names.js'
import { commandFailureInWords } from '../redis/client.js'

export type ReloadTrigger = 'file' | 'signal' | 'admin' | 'replica'

/**
 * A refused reload's problems in one line: those that name no file after the variables of
 * the files the teams are read from (`TEAMS_FILE: teams.x.write: …`); one that begins with the
 * variable of its own file (`TEAMS_FILE (<path>): not valid YAML …`, `ADMIN_TOKENS_FILE: line 3 …`)
 * as it is, so that no variable is said twice and none is named for another file's fault.
 */
export function refusedProblems(named: string, problems: readonly string[]): string {
  const namesItsFile = (problem: string) => /^[A-Z][A-Z0-9_]*_FILE[ :]/.test(problem)
  const unnamed = problems.filter((p) => !namesItsFile(p))
  return [...(unnamed.length > 0 ? [`${named}: ${unnamed.join('; ')}`] : []), ...problems.filter(namesItsFile)].join('; ')
}

/** An admin reload the other replicas were not told of: each reloads at its own look at the files. */
const OTHERS_BY_FILES = 'this replica; the others when they see the files change'

export interface ReloadOutcome {
  result: 'applied' | 'unchanged'
  teams: string[]
  keys: number
  addedKeys: string[]
  removedKeys: string[]
  /** The settings the files change that wait for a restart (as the config file names them); none: []. */
  restartNeeded: string[]
}

/** Whether the teams can be reloaded: the variables naming the files they come from, or why not. */
/** A refused reload as GET /admin/status says it: since when the running teams are not the files', and why. */
export interface ReloadRefusal {
  since: number
  problems: string[]
}

export interface ReloadAvailability {
  available: boolean
  files: string[]
  /** Why the teams cannot be reloaded; null when they can. */
  reason: string | null
}

export interface TeamReloaderDeps {
  /** The running config: its credentials bound what a reloaded team may name. */
  config: Config
  teams: TeamDirectory
  adminAuth: AdminAuth
  log: Logger
  /** The audit lines' log: a reload an admin asked for, and every reload applied. */
  auditLog: Logger
  metrics: Metrics
  /** The secrets scrubbed from every log line: an admin token read anew joins them. */
  secrets?: SecretSet
  bus: RedisBus | null
  /** A reload applied: the keys it removed (listed with their use for 30 days), and the ids it added. */
  onKeysChanged?: (change: { removed: RemovedKey[]; added: string[] }) => void
  /** Where the config is read from; null: nothing to reload (demo mode, or neither CONFIG_FILE nor TEAMS_FILE). */
  source: LoadOptions | null
  pollMs: number
  clock?: Clock
}

const BUS_CHANNEL = 'teams-reload'

/** What POST /admin/reload tells the other replicas: who asked it, so that their audit lines name the operator. */
interface ReloadAsked {
  from: string
  actor: string | null
}

/** A message of BUS_CHANNEL; a replica of an older release sends its id alone, and no actor. */
function reloadAsked(message: string): ReloadAsked {
  try {
    const parsed = JSON.parse(message) as Partial<ReloadAsked> | null
    if (typeof parsed?.from === 'string') return { from: parsed.from, actor: typeof parsed.actor === 'string' ? parsed.actor : null }
  } catch {
    // Not JSON: an older replica's id.
  }
  return { from: message, actor: null }
}

/**
 * Reloads the teams (and the named admin tokens) of CONFIG_FILE or TEAMS_FILE without a
 * restart: when any file the last load read changes (CONFIG_FILE, TEAMS_FILE,
 * ADMIN_TOKENS_FILE, token and secret files: read every `pollMs`, which also sees a
 * Kubernetes ConfigMap's or Secret's `..data` symlink swap), on SIGHUP, on
 * POST /admin/reload, and when another replica's admin call asks every replica to
 * re-read its own file. The files are validated whole like at start; a load that does
 * not validate is refused, the running teams stay, and it is tried again at every poll
 * until it succeeds, so that a revocation written while another file was broken still
 * takes effect. A token file that holds no token (empty, missing, `Bearer …`) refuses
 * nothing: the reload takes no token from it (its watcher does, and keeps the token in
 * use meanwhile), so a revocation never waits on it; the reload says it. Every other
 * setting needs a restart.
 */
export class TeamReloader {
  readonly #d: TeamReloaderDeps
  readonly #replica = randomUUID()
  /** The files the teams come from, as the environment names them; empty: nothing to reload. */
  readonly #files: { file?: string; teamsFile?: string }
  /** The variables naming those files: `CONFIG_FILE`, `TEAMS_FILE`, both or none. */
  readonly #variables: string[]
  /** Those files as their variables name them in log lines and refusals: `CONFIG_FILE`, `TEAMS_FILE` or both. */
  readonly #named: string
  /** The files' digest a poll last found changed, taken at the next poll that reads it again; null: none changing. */
  #changing: string | null = null
  /** The files the last load read, and their content's digest then. */
  #read: FilesRead = { paths: [], digest: '' }
  /** The digest of the files whose refusal was last logged; null while the running teams are the files'. */
  #refused: string | null = null
  /** The refused reload's problems, each with its file's line, and when the files were first refused; null while #refused is. */
  #refusal: ReloadRefusal | null = null
  readonly #refusedChanged: (() => void)[] = []
  #admins: string
  /** The memory warning last said (at start, or by a reload); null: none. */
  #memorySaid: string | null
  /** The stray CREDENTIAL_* variables last said, joined; '' at start, which refuses any. */
  #straySaid = ''
  #timer: Timer | null = null
  readonly #clock: Clock

  constructor(deps: TeamReloaderDeps) {
    this.#d = deps
    this.#clock = deps.clock ?? systemClock
    const env = deps.source?.env ?? {}
    this.#files = { ...(env.CONFIG_FILE ? { file: env.CONFIG_FILE } : {}), ...(env.TEAMS_FILE ? { teamsFile: env.TEAMS_FILE } : {}) }
    this.#variables = [env.CONFIG_FILE ? 'CONFIG_FILE' : null, env.TEAMS_FILE ? 'TEAMS_FILE' : null].filter((n) => n !== null)
    this.#named = this.#variables.join(' and ') || 'CONFIG_FILE'
    this.#admins = signature(deps.config.admin.tokens)
    this.#memorySaid = deps.config.memoryWarning
    deps.metrics.configReloadOk.set(1)
  }

  get enabled(): boolean {
    return Object.keys(this.#files).length > 0
  }

  /**
   * The files' last reload was refused: this replica runs teams and admin tokens that are
   * not its files' (a key revoked there still works here) until a reload of them is taken.
   */
  get refused(): boolean {
    return this.#refused !== null
  }

  /** Why the files' last reload was refused, and since when; null while the running teams are the files'. */
  get refusal(): ReloadRefusal | null {
    return this.#refusal
  }

  /** Calls `fn` each time `refused` turns true or false (a replica's announcement carries it: compose.ts). */
  onRefusedChange(fn: () => void): void {
    this.#refusedChanged.push(fn)
  }

  #setRefused(digest: string | null): void {
    const was = this.refused
    this.#refused = digest
    if (this.refused !== was) for (const fn of this.#refusedChanged) fn()
  }

  /** What GET /admin/status says of the reload, and what POST /admin/reload's refusal gives as its reason. */
  get availability(): ReloadAvailability {
    if (this.enabled) return { available: true, files: [...this.#variables], reason: null }
    return { available: false, files: [], reason: `the teams come from no file (${this.#d.config.demo ? 'demo mode' : 'neither CONFIG_FILE nor TEAMS_FILE is set'})` }
  }

  async start(): Promise<void> {
    if (!this.enabled) return
    // Which files a load reads, learnt by loading them as a reload would: the running
    // teams were loaded from them moments ago, so only a change since then is applied.
    try {
      this.#reload('file', null, { quietIfUnchanged: true })
    } catch {
      // Refused: logged and counted by reload; tried again at the next poll.
    }
    this.#timer = this.#clock.setInterval(() => this.#poll(), this.#d.pollMs)
    this.#timer.unref()
    await this.#d.bus?.subscribe(BUS_CHANNEL, (message) => {
      const { from, actor } = reloadAsked(message)
      if (from === this.#replica) return
      try {
        this.reload('replica', actor)
      } catch {
        // Refused: logged and counted by reload.
      }
    })
  }

  close(): void {
    if (this.#timer) this.#clock.clearInterval(this.#timer)
    this.#timer = null
  }

  /** POST /admin/reload: this replica now, and every other one through the bus; `replicas` says whether they were told. */
  async reloadEverywhere(actor: string | null): Promise<ReloadOutcome & { replicas: 'all' | typeof OTHERS_BY_FILES }> {
    const outcome = this.reload('admin', actor)
    const bus = this.#d.bus
    if (!bus) return { ...outcome, replicas: OTHERS_BY_FILES }
    const told = await bus.publish(BUS_CHANNEL, JSON.stringify({ from: this.#replica, actor } satisfies ReloadAsked)).then(
      () => true,
      (err: unknown) => {
        this.#d.log.warn({ err: { message: commandFailureInWords(err) } }, 'could not ask the other replicas to reload; each still reloads when its file changes')
        return false
      },
    )
    return { ...outcome, replicas: told ? 'all' : OTHERS_BY_FILES }
  }

  /** Reads and applies the files; throws ConfigRefusedError (the old teams stay). */
  reload(trigger: ReloadTrigger, actor: string | null = null): ReloadOutcome {
    return this.#reload(trigger, actor, { quietIfUnchanged: false })
  }

  #reload(trigger: ReloadTrigger, actor: string | null, { quietIfUnchanged }: { quietIfUnchanged: boolean }): ReloadOutcome {
    const { log, auditLog, metrics } = this.#d
    // Without a source there are no files, so the reason is set then too.
    const { reason } = this.availability
    if (reason !== null || !this.#d.source) {
      const why = reason ?? 'the teams come from no file'
      log.warn({ trigger }, `teams reload asked for, but ${why}`)
      throw new ReloadUnavailableError(why)
    }
    const read = new Map<string, string>()
    const tokenFileFaults: string[] = []
    let next: Config
    try {
      next = loadConfig({ ...this.#d.source, readFile: this.#recording(read), credentialsInForce: this.#namedCredentials(this.#d.config), tokenFileFaults })
      const problems = this.#unsupported(next)
      if (problems.length > 0) throw new ConfigError(problems)
    } catch (err) {
      const problems = err instanceof ConfigError ? err.problems : [(err as Error).message]
      // Each problem followed by the line of its file that writes the setting, where one does,
      // as a refused start says it: the answer says these (and each apart, `errors`), a log line both.
      const places = err instanceof ConfigError ? err.places : placesOf(problems)
      const located = err instanceof ConfigError ? err.located : problems
      this.#read = filesRead(read)
      // Tried again at every poll: said once per content of the files, not every time. The
      // files are the operator's input, no fault of the gateway's: warn lines (contract, "Logs").
      if (trigger !== 'file' || this.#refused !== this.#read.digest) {
        problems.forEach((problem, i) => log.warn({ trigger, ...this.#files, problem, located: located[i] ?? problem }, `${this.#named} reload refused: the running teams stay`))
        metrics.configProblems.inc(problems.length)
        metrics.configReloads.inc({ result: 'refused' })
      }
      // An admin's reload is audited whatever its outcome, with who asked.
      if (trigger === 'admin') auditLog.warn({ action: 'teams-reload', outcome: 'refused', trigger, actor, ...this.#files, problems: problems.length }, `admin reload refused: ${this.#named} did not validate`)
      this.#refusal = { since: this.#refusal?.since ?? this.#clock.now(), problems: located }
      this.#setRefused(this.#read.digest)
      metrics.configReloadOk.set(0)
      throw Object.assign(new ConfigRefusedError(refusedProblems(this.#named, located)), { errors: places })
    }
    this.#read = filesRead(read)
    this.#refusal = null
    this.#setRefused(null)
    metrics.configReloadOk.set(1)
    for (const problem of tokenFileFaults) log.warn({ trigger, ...this.#files, problem }, `${this.#named} reload took the teams; a token file it read is left to its watcher, which keeps the token in use`)
    this.#sayStrayVariables(next)
    // A setting the reload does not take is said whatever the teams did: an edit of it alone
    // is a reload whose teams are unchanged, and the operator is to know it waits.
    const waiting = restartOnlyChanges(this.#d.config, next)
    if (waiting.length > 0) {
      log.warn({ ...this.#files, settings: waiting }, `${this.#named} reload: settings other than the teams and the admin tokens changed (${waiting.join(', ')}); they take effect at the next restart`)
    }
    const outcome = { ...diff(this.#d.teams.teams, next.teams), restartNeeded: waiting }
    const admins = signature(next.admin.tokens)
    const sameAdmins = admins === this.#admins
    if (outcome.result === 'unchanged' && sameAdmins) {
      if (quietIfUnchanged) return outcome
      metrics.configReloads.inc({ result: 'unchanged' })
      const unchanged = { trigger, teams: outcome.teams.length }
      const message = `${this.#named} reloaded: the teams are unchanged`
      if (trigger === 'admin') auditLog.info({ action: 'teams-reload', outcome: 'unchanged', actor, ...unchanged }, message)
      else log.info(unchanged, message)
      return outcome
    }
    const adminTokenChanges = adminChanges(this.#d.config.admin.tokens, next.admin.tokens, this.#d.config.gatewaySecret)
    const keysChanged = keyChanges(this.#d.teams.teams, next.teams)
    // A team's new webhook secret is scrubbed from the log from now on, as the loaded ones are.
    for (const team of next.teams) for (const secret of team.webhook ? webhookSecretSpellings(team.webhook.secret) : []) this.#d.secrets?.addScrubbed(secret)
    this.#d.teams.replace(next.teams)
    if (keysChanged.removed.length > 0 || keysChanged.added.length > 0) this.#d.onKeysChanged?.(keysChanged)
    this.#d.adminAuth.replace(next.admin.tokens, [next.admin.token, next.admin.viewerToken])
    this.#admins = admins
    this.#adoptAdminTokens(next)
    metrics.configReloads.inc({ result: 'applied' })
    const what = outcome.result === 'applied' ? (sameAdmins ? 'teams' : 'teams and admin tokens') : 'admin tokens'
    auditLog.info(
      {
        action: 'teams-reload',
        trigger,
        actor,
        teams: outcome.teams,
        keys: outcome.keys,
        addedKeys: outcome.addedKeys,
        removedKeys: outcome.removedKeys,
        adminTokens: next.admin.tokens.map((t) => t.name),
        adminTokenChanges,
      },
      `${this.#named} reloaded: new ${what} in use`,
    )
    // The check in force is the running one's: a changed ownership waits for a restart.
    const creativeSets = creativeSetsPassWarning(this.#d.config.ownership.creativeSets.check, next.teams)
    if (creativeSets !== null) log.warn({ trigger, ...this.#files }, creativeSets)
    // Without Redis the teams' job results are among the memory budgets, a bound per team:
    // teams a reload adds may take them past the container's limit, which the start said
    // only for the teams it had.
    if (next.memoryWarning !== null && next.memoryWarning !== this.#memorySaid) log.warn({ trigger, ...this.#files, teams: next.teams.length }, next.memoryWarning)
    this.#memorySaid = next.memoryWarning
    return { ...outcome, result: 'applied' }
  }

  // The admin tokens in force from now on, in the running configuration too: GET
  // /admin/config gives the new ones' fingerprints, the next reload compares with them,
  // and the log scrubs the new secrets as it scrubbed the old.
  #adoptAdminTokens(next: Config): void {
    const running = this.#d.config
    running.admin.token = next.admin.token
    running.admin.viewerToken = next.admin.viewerToken
    running.admin.tokens = next.admin.tokens
    for (const path of ADMIN_TOKEN_SETTINGS) {
      const now = next.settings.find((s) => s.setting === path)
      const at = running.settings.findIndex((s) => s.setting === path)
      if (now !== undefined && at !== -1) running.settings[at] = now
    }
    this.#d.secrets?.add(next.admin.token)
    this.#d.secrets?.add(next.admin.viewerToken)
  }

  // The credentials a configuration declares under credentials: (not the default one).
  #namedCredentials(config: Config): string[] {
    return Object.keys(config.credentials).filter((name) => name !== DEFAULT_CREDENTIAL)
  }

  // A credential the files no longer declare runs, with its variables, until a restart;
  // the next start refuses those variables. Said once for each set of them.
  #sayStrayVariables(next: Config): void {
    const env = this.#d.source?.env ?? {}
    const variables = strayCredentialVariables(env, this.#namedCredentials(next))
    const said = variables.join(',')
    if (said === this.#straySaid) return
    this.#straySaid = said
    if (variables.length === 0) return
    this.#d.log.warn(
      { ...this.#files, variables },
      `${this.#named} reload: the next start refuses ${variables.join(', ')}, variables of no credential the files declare now (the running credentials read theirs until a restart); remove them, or declare their credentials again`,
    )
  }

  // What a running gateway cannot take on: a team of a credential it has no token for, a
  // webhook its deliverer refuses (it holds the jobs.webhookHosts it started with).
  #unsupported(next: Config): string[] {
    const running = new Set(Object.keys(this.#d.config.credentials))
    const { hosts, platformHosts } = this.#d.config.webhooks
    const credentials = next.teams
      .filter((t) => !running.has(t.credential))
      .map((t) => `teams.${t.name}.credential: credential ${t.credential} is not running; a new credential needs a restart`)
    const webhooks = next.teams.flatMap((t) => {
      const refusal = t.webhook && webhookRefusal(t.webhook.url, hosts, platformHosts)
      return refusal ? [`teams.${t.name}.webhook.url: ${refusal} as the gateway runs; a change of jobs.webhookHosts needs a restart`] : []
    })
    return [...credentials, ...webhooks]
  }

  #poll(): void {
    const now = this.#digest(this.#read.paths)
    if (this.#refused === null && now === this.#read.digest) {
      this.#changing = null
      return
    }
    // A change is taken once two polls in a row read it alike: a file caught half-written in
    // place (truncated, then written: `cat >`, many editors) whose first part validates alone
    // would revoke the keys of the part not yet written, on every replica, until the rest came.
    if (now !== this.#changing) {
      this.#changing = now
      return
    }
    this.#changing = null
    try {
      this.reload('file')
    } catch {
      // Refused: logged and counted by reload; tried again at the next poll.
    }
  }

  // Reads through the source's reader, keeping each file's digest (or why it could not
  // be read): what was validated is what is compared at the next poll.
  #recording(read: Map<string, string>): (path: string) => string {
    const readFile = this.#reader()
    return (path) => {
      try {
        const text = readFile(path)
        read.set(path, sha256(text))
        return text
      } catch (err) {
        read.set(path, unreadable(err))
        throw err
      }
    }
  }

  // The files' content now, read through any symlinks, so a ConfigMap's swap is seen.
  #digest(paths: readonly string[]): string {
    const readFile = this.#reader()
    const now = new Map<string, string>()
    for (const path of paths) {
      try {
        now.set(path, sha256(readFile(path)))
      } catch (err) {
        now.set(path, unreadable(err))
      }
    }
    return filesRead(now).digest
  }

  #reader(): (path: string) => string {
    return this.#d.source?.readFile ?? ((p: string) => readFileSync(p, 'utf8'))
  }
}

interface FilesRead {
  paths: string[]
  digest: string
}

function filesRead(read: Map<string, string>): FilesRead {
  const paths = [...read.keys()].sort()
  return { paths, digest: sha256(paths.map((p) => `${p}\0${read.get(p) as string}`).join('\n')) }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

function unreadable(err: unknown): string {
  return `unreadable:${(err as NodeJS.ErrnoException).code ?? 'error'}`
}

// A key is its hash, under its name (`<team>/<key id>`): a new key given the old one's id
// (a hash swapped inside its entry) is one key removed and one added, named both times.
function diff(before: readonly TeamConfig[], after: TeamConfig[]): Omit<ReloadOutcome, 'restartNeeded'> {
  const keys = (teams: readonly TeamConfig[]) => new Map(teams.flatMap((t) => t.keys.map((k) => [`${k.hash} ${t.name}/${k.id}`, `${t.name}/${k.id}`] as const)))
  const old = keys(before)
  const now = keys(after)
  const changed = signature(before.map(teamShape)) !== signature(after.map(teamShape))
  return {
    result: changed ? 'applied' : 'unchanged',
    teams: after.map((t) => t.name),
    keys: now.size,
    addedKeys: [...now].filter(([k]) => !old.has(k)).map(([, name]) => name),
    removedKeys: [...old].filter(([k]) => !now.has(k)).map(([, name]) => name),
  }
}

/** The keys (by id) a reload removes, as they were, and the ids it adds: a hash swapped under a kept id is neither. */
export function keyChanges(before: readonly TeamConfig[], after: readonly TeamConfig[]): { removed: RemovedKey[]; added: string[] } {
  const ids = (teams: readonly TeamConfig[]) => new Set(teams.flatMap((t) => t.keys.map((k) => k.id)))
  const [was, now] = [ids(before), ids(after)]
  const removed = before.flatMap((t) =>
    t.keys
      .filter((k) => !now.has(k.id))
      .map((k): RemovedKey => ({ team: t.name, id: k.id, lineage: k.lineage, replaces: k.replaces, successor: k.successor, graceUntil: k.graceUntil, createdAt: k.createdAt, expiresAt: k.expiresAt })),
  )
  return { removed, added: [...now].filter((id) => !was.has(id)) }
}

function teamShape(t: TeamConfig): unknown {
  return { ...t, advertisers: t.advertisers === null ? null : [...t.advertisers].sort((a, b) => a - b) }
}

function signature(value: unknown): string {
  return JSON.stringify(value)
}

/** The settings of the admin tokens that a reload takes on (their files are re-read): GET /admin/config's names. */
const ADMIN_TOKEN_SETTINGS = ['admin.token', 'admin.viewerToken']

/** One admin token changed by a reload: by name, with the fingerprints before and after (null: none). */
export interface AdminTokenChange {
  name: string
  role: AdminToken['role']
  before: string | null
  after: string | null
  /** Its role before, when the reload changed it. */
  roleBefore?: AdminToken['role']
}

/**
 * The admin tokens a reload changed, added or removed, in the order of the new list, then
 * the removed; each named by the fingerprint of its hash under `gatewaySecret`'s key, which
 * is what fingerprint() gives of the token itself (GET /admin/config, the token view, logs).
 */
export function adminChanges(before: readonly AdminToken[], after: readonly AdminToken[], gatewaySecret: string | null): AdminTokenChange[] {
  const tokenFingerprint = (t: AdminToken) => digestFingerprint(t.hash.slice('sha256:'.length), gatewaySecret)
  const old = new Map(before.map((t) => [t.name, t]))
  const changes: AdminTokenChange[] = []
  for (const t of after) {
    const was = old.get(t.name)
    if (was && was.hash === t.hash && was.role === t.role) continue
    const change: AdminTokenChange = { name: t.name, role: t.role, before: was ? tokenFingerprint(was) : null, after: tokenFingerprint(t) }
    if (was && was.role !== t.role) change.roleBefore = was.role
    changes.push(change)
  }
  const kept = new Set(after.map((t) => t.name))
  for (const t of before) if (!kept.has(t.name)) changes.push({ name: t.name, role: t.role, before: tokenFingerprint(t), after: null })
  return changes
}

// The settings that need a restart: everything but the teams and the admin tokens (which
// a reload takes on). A renamed setting moved to its new name changes its warning, not a
// value in force.
function restartOnly(config: Config): Record<string, unknown> {
  return { ...config, teams: null, admin: { ...config.admin, token: null, viewerToken: null, tokens: null }, secrets: null, settings: null, warnings: null, memoryWarning: null }
}

/**
 * The settings that differ as they run and wait for a restart, by their names in the config
 * file (GET /admin/config's), else by their paths in the running configuration; never their
 * values. A value written another way (`2s`, `2000ms`) runs the same: no change.
 */
export function restartOnlyChanges(running: Config, next: Config): string[] {
  const [before, after] = [restartOnly(running), restartOnly(next)]
  const changed: string[] = []
  const walk = (a: unknown, b: unknown, path: string) => {
    if (signature(a) === signature(b)) return
    if (!plain(a) || !plain(b)) {
      changed.push(path)
      return
    }
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) walk(a[key], b[key], path === '' ? key : `${path}.${key}`)
  }
  walk(before, after, '')
  if (changed.length === 0) return []
  const value = (config: Config) => new Map(config.settings.filter((s) => !ADMIN_TOKEN_SETTINGS.includes(s.setting)).map((s) => [s.setting, signature(s.value ?? null)]))
  const [was, now] = [value(running), value(next)]
  // A setting written differently is named unless its path runs the same value on both sides;
  // a setting whose name is no path of the running configuration is named as written.
  const runsTheSame = (setting: string) => {
    const [a, b] = [at(before, setting), at(after, setting)]
    return a !== undefined && b !== undefined && signature(a) === signature(b)
  }
  const named = [...new Set([...was.keys(), ...now.keys()])].filter((setting) => was.get(setting) !== now.get(setting) && !runsTheSame(setting))
  return named.length > 0 ? named : changed
}

function plain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** The value at a dotted path of a configuration, undefined where the path is none of it. */
function at(config: Record<string, unknown>, path: string): unknown {
  let here: unknown = config
  for (const key of path.split('.')) {
    if (!plain(here) || !Object.hasOwn(here, key)) return undefined
    here = here[key]
  }
  return here
}
