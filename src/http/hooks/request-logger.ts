import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino'

type LogFn = (...args: unknown[]) => void

/**
 * Fastify's `childLoggerFactory`: a request's logger whose pino child is made
 * the first time something logs through it. Most requests log nothing (the access line
 * is written by request-log.ts), yet a pino child costs more than a cache hit: its
 * bindings go through the redaction of every line (`*.token` reaches every value), and
 * Fastify's empty options object sends pino down its slow path on top.
 */
export function lazyRequestLogger(parent: FastifyBaseLogger, bindings: Bindings, opts: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyChild(parent as Logger, bindings, opts) as unknown as FastifyBaseLogger
}

class LazyChild {
  readonly #parent: Logger
  readonly #bindings: Bindings
  readonly #opts: ChildLoggerOptions
  #child: Logger | null = null

  constructor(parent: Logger, bindings: Bindings, opts: ChildLoggerOptions) {
    this.#parent = parent
    this.#bindings = bindings
    this.#opts = opts
  }

  #real(): Logger {
    this.#child ??= Object.keys(this.#opts).length === 0 ? this.#parent.child(this.#bindings) : this.#parent.child(this.#bindings, this.#opts)
    return this.#child
  }

  // The child keeps its parent's level unless the options set one: until it exists, the
  // parent says what is logged, and a level nobody logs costs nothing.
  #decides(): Logger {
    return this.#child ?? (this.#opts.level === undefined ? this.#parent : this.#real())
  }

  #log(level: Level, args: unknown[]): void {
    if (this.#decides().isLevelEnabled(level)) (this.#real()[level] as LogFn)(...args)
  }

  get level(): string {
    return this.#decides().level
  }

  set level(level: string) {
    this.#real().level = level
  }

  isLevelEnabled(level: string): boolean {
    return this.#decides().isLevelEnabled(level)
  }

  child(bindings: Bindings, opts?: ChildLoggerOptions): Logger {
    return this.#real().child(bindings, opts)
  }

  bindings(): Bindings {
    return this.#real().bindings()
  }

  silent(): void {}

  // pino's levels, each a method of the class (no closure per request).
  fatal(...args: unknown[]): void { this.#log('fatal', args) }
  error(...args: unknown[]): void { this.#log('error', args) }
  warn(...args: unknown[]): void { this.#log('warn', args) }
  info(...args: unknown[]): void { this.#log('info', args) }
  debug(...args: unknown[]): void { this.#log('debug', args) }
  trace(...args: unknown[]): void { this.#log('trace', args) }
}
