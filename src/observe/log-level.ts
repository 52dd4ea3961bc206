import type { Logger } from 'pino'
import type { RedisBus } from '../redis/bus.js'
import type { Clock } from '../clock.js'

/** The levels the log takes (LOG_LEVEL's). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevelName = (typeof LOG_LEVELS)[number]

const CHANNEL = 'log-level'

/** A change asked on replica `from`, for every replica (`replica` null) or for one. */
interface Change {
  level: LogLevelName
  replica: string | null
  actor: string | null
  from: string
}

function isChange(value: unknown): value is Change {
  const v = value as Partial<Change> | null
  return (
    typeof v === 'object' &&
    v !== null &&
    (LOG_LEVELS as readonly unknown[]).includes(v.level) &&
    (v.replica === null || typeof v.replica === 'string') &&
    (v.actor === null || typeof v.actor === 'string') &&
    typeof v.from === 'string'
  )
}

/**
 * The log level, changed at run time by an operator: on this replica, and on every
 * replica or one named replica through the bus (sealed like every bus message). Each
 * replica that changes its level writes one audit line, through the audit log, which no
 * level silences (`error`, `silent`).
 */
export class LogLevel {
  readonly #log: Logger
  readonly #auditLog: Logger
  readonly #bus: RedisBus | null
  readonly #replica: string
  readonly #clock: Clock
  /** When, and by whom, it was last changed at run time; null: still LOG_LEVEL's. */
  #changed: { by: string | null; at: number } | null = null

  constructor(opts: { log: Logger; auditLog: Logger; bus: RedisBus | null; replica: string; clock: Clock }) {
    this.#log = opts.log
    this.#auditLog = opts.auditLog
    this.#bus = opts.bus
    this.#replica = opts.replica
    this.#clock = opts.clock
  }

  get level(): string {
    return this.#log.level
  }

  /** Who changed it at run time and when; null while it is the configured one. */
  get changed(): { by: string | null; at: number } | null {
    return this.#changed
  }

  async start(): Promise<void> {
    await this.#bus?.subscribe(CHANNEL, (message) => {
      let change: unknown
      try {
        change = JSON.parse(message)
      } catch {
        return
      }
      // The replica that asked has set its own level already.
      if (!isChange(change) || change.from === this.#replica || (change.replica !== null && change.replica !== this.#replica)) return
      this.#apply(change.level, change.actor, 'replica', change.replica === null ? 'all' : change.replica)
    })
  }

  /**
   * Sets the level here, and on every replica (`replica` null) or on the one named,
   * through the bus. Resolves to the level this replica had before; throws when the bus
   * could not carry the change (the level here is set all the same).
   */
  async change(level: LogLevelName, replica: string | null, actor: string | null): Promise<string> {
    const previous = this.level
    if (replica === null || replica === this.#replica) this.#apply(level, actor, 'admin', replica ?? 'all')
    if (replica !== this.#replica && this.#bus) await this.#bus.publish(CHANNEL, JSON.stringify({ level, replica, actor, from: this.#replica } satisfies Change))
    return previous
  }

  #apply(level: LogLevelName, actor: string | null, trigger: 'admin' | 'replica', target: string): void {
    const previous = this.#log.level
    this.#log.level = level
    // `logLevel`, not `level`: pino's `level` is the line's own (info).
    this.#auditLog.info({ action: 'log-level', logLevel: level, previous, target, trigger, actor }, `log level set to ${level} (was ${previous})`)
    this.#changed = { by: actor, at: this.#clock.now() }
  }
}
