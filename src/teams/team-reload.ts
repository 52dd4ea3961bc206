import { createHash, randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { Logger } from 'pino'
import { ConfigError, loadConfig, type Config, type LoadOptions, type TeamConfig } from '../config.js'
import { ConfigRefusedError, ReloadUnavailableError } from '../errors.js'
import type { Metrics } from '../metrics.js'
import type { RedisBus } from '../redis.js'
import type { AdminAuth } from '../routes/admin-auth.js'
import type { TeamDirectory } from './team-auth.js'

export type ReloadTrigger = 'file' | 'signal' | 'admin' | 'replica'

export interface ReloadOutcome {
  result: 'applied' | 'unchanged'
  teams: string[]
  keys: number
  addedKeys: string[]
  removedKeys: string[]
}

export interface TeamReloaderDeps {
  /** The running config: its credentials bound what a reloaded team may name. */
  config: Config
  teams: TeamDirectory
  adminAuth: AdminAuth
  log: Logger
  metrics: Metrics
  bus: RedisBus | null
  /** Where the config is read from; null: nothing to reload (no CONFIG_FILE, demo mode). */
  source: LoadOptions | null
  pollMs: number
}

const BUS_CHANNEL = 'teams-reload'

/**
 * Reloads the teams (and the named admin tokens) of CONFIG_FILE without a restart
 * (issue #8): when the file's content changes (read every `pollMs`, which also sees a
 * Kubernetes ConfigMap's `..data` symlink swap), on SIGHUP, on POST /admin/reload, and
 * when another replica's admin call asks every replica to re-read its own file. The
 * new file is validated whole like at start; one that does not validate is refused and
 * the running teams stay. Every other setting needs a restart.
 */
export class TeamReloader {
  readonly #d: TeamReloaderDeps
  readonly #replica = randomUUID()
  readonly #file: string | null
  #seen: string | null = null
  #admins: string
  #timer: NodeJS.Timeout | null = null

  constructor(deps: TeamReloaderDeps) {
    this.#d = deps
    this.#file = deps.source?.env?.CONFIG_FILE ?? null
    this.#admins = signature(deps.config.admin.tokens)
    deps.metrics.configReloadOk.set(1)
  }

  get enabled(): boolean {
    return this.#file !== null
  }

  async start(): Promise<void> {
    if (!this.#file) return
    this.#seen = this.#digest()
    this.#timer = setInterval(() => this.#poll(), this.#d.pollMs)
    this.#timer.unref()
    await this.#d.bus?.subscribe(BUS_CHANNEL, (message) => {
      if (message === this.#replica) return
      try {
        this.reload('replica')
      } catch {
        // Refused: logged and counted by reload.
      }
    })
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
  }

  /** POST /admin/reload: this replica now, and every other one through the bus. */
  async reloadEverywhere(actor: string | null): Promise<ReloadOutcome> {
    const outcome = this.reload('admin', actor)
    await this.#d.bus?.publish(BUS_CHANNEL, this.#replica).catch((err: Error) => {
      this.#d.log.warn({ err: { message: err.message } }, 'could not ask the other replicas to reload; each still reloads when its file changes')
    })
    return outcome
  }

  /** Reads and applies the file; throws ConfigRefusedError (the old teams stay). */
  reload(trigger: ReloadTrigger, actor: string | null = null): ReloadOutcome {
    const { log, metrics } = this.#d
    if (!this.#d.source || !this.#file) {
      log.warn({ trigger }, 'teams reload asked for, but there is no CONFIG_FILE to reload (or the gateway runs in demo mode)')
      throw new ReloadUnavailableError('no CONFIG_FILE is set (or the gateway runs in demo mode)')
    }
    this.#seen = this.#digest()
    let next: Config
    try {
      next = loadConfig(this.#d.source)
      const problems = this.#unsupported(next)
      if (problems.length > 0) throw new ConfigError(problems)
    } catch (err) {
      const problems = err instanceof ConfigError ? err.problems : [(err as Error).message]
      for (const problem of problems) log.error({ trigger, file: this.#file, problem }, 'CONFIG_FILE reload refused: the running teams stay')
      metrics.configProblems.inc(problems.length)
      metrics.configReloads.inc({ result: 'refused' })
      metrics.configReloadOk.set(0)
      throw new ConfigRefusedError(problems.join('; '))
    }
    metrics.configReloadOk.set(1)
    const outcome = diff(this.#d.teams.teams, next.teams)
    const admins = signature(next.admin.tokens)
    const sameAdmins = admins === this.#admins
    if (outcome.result === 'unchanged' && sameAdmins) {
      metrics.configReloads.inc({ result: 'unchanged' })
      log.info({ trigger, teams: outcome.teams.length }, 'CONFIG_FILE reloaded: the teams are unchanged')
      return outcome
    }
    this.#d.teams.replace(next.teams)
    this.#d.adminAuth.replace(next.admin.tokens)
    this.#admins = admins
    metrics.configReloads.inc({ result: 'applied' })
    log.info(
      { kind: 'audit', action: 'teams-reload', trigger, actor, teams: outcome.teams, keys: outcome.keys, addedKeys: outcome.addedKeys, removedKeys: outcome.removedKeys, adminTokens: next.admin.tokens.map((t) => t.name) },
      'CONFIG_FILE reloaded: new teams in use',
    )
    if (restartOnly(next) !== restartOnly(this.#d.config)) {
      log.warn({ file: this.#file }, 'CONFIG_FILE also changed settings other than teams and admin tokens; those take effect at the next restart')
    }
    return { ...outcome, result: 'applied' }
  }

  // What a running gateway cannot take on: a team of a credential it has no token for.
  #unsupported(next: Config): string[] {
    const running = new Set(Object.keys(this.#d.config.credentials))
    return next.teams
      .filter((t) => !running.has(t.credential))
      .map((t) => `teams.${t.name}.credential: credential ${t.credential} is not running; a new credential needs a restart`)
  }

  #poll(): void {
    const digest = this.#digest()
    if (digest === this.#seen) return
    try {
      this.reload('file')
    } catch {
      // Refused: logged and counted by reload; tried again when the file changes again.
    }
  }

  // The file's content, read through any symlinks, so a ConfigMap's swap is seen.
  #digest(): string {
    try {
      const read = this.#d.source?.readFile ?? ((p: string) => readFileSync(p, 'utf8'))
      return createHash('sha256').update(read(this.#file as string)).digest('hex')
    } catch (err) {
      return `unreadable:${(err as NodeJS.ErrnoException).code ?? 'error'}`
    }
  }
}

function diff(before: readonly TeamConfig[], after: TeamConfig[]): ReloadOutcome {
  const ids = (teams: readonly TeamConfig[]) => new Set(teams.flatMap((t) => t.keys.map((k) => `${t.name}/${k.id}`)))
  const old = ids(before)
  const now = ids(after)
  const changed = signature(before.map(teamShape)) !== signature(after.map(teamShape))
  return {
    result: changed ? 'applied' : 'unchanged',
    teams: after.map((t) => t.name),
    keys: now.size,
    addedKeys: [...now].filter((k) => !old.has(k)),
    removedKeys: [...old].filter((k) => !now.has(k)),
  }
}

function teamShape(t: TeamConfig): unknown {
  return { ...t, advertisers: t.advertisers === null ? null : [...t.advertisers].sort((a, b) => a - b) }
}

function signature(value: unknown): string {
  return JSON.stringify(value)
}

// The settings that need a restart: everything but the teams and the admin tokens.
function restartOnly(config: Config): string {
  return signature({ ...config, teams: null, admin: { ...config.admin, tokens: null }, secrets: null })
}
