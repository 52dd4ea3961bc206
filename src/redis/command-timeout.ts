import { createRequire } from 'node:module'
import { Command } from 'ioredis'

// ioredis times a command (commandTimeout) with a timer that rejects it when due. Timers
// due run before the poll phase reads the sockets, so a process stalled past the timeout
// (a GC pause, CPU throttling, synchronous work: 300 to 800 ms measured on a loaded
// 2-core machine) failed commands whose replies had come in time and only waited in the
// socket, and opened the circuit on a Redis that had answered at once. The patched
// timeout rejects after one more poll phase (setImmediate): a reply already received is
// read first; a Redis that does not answer still fails the command, one loop turn later.
//
// The patch replaces a method of ioredis's own and relies on its private fields, so it is
// installed only on the ioredis minor version it was checked with (package.json pins it)
// and only when those fields are what it expects. Otherwise ioredis is left as it is, with
// a warning: its own timeout is safe, only more often wrong about Redis while the process
// stalls. A timed-out command gets the fallback every Redis call already has (Redis is an
// accelerator, never a dependency), and the breaker ignores a timeout that fired well past
// its due time; the gateway then goes to the platform more often, it never answers wrongly.

/** The ioredis version (major.minor) whose Command internals the patch was checked against. */
export const CHECKED_IOREDIS_MINOR = '5.11'

/** What the patch reads and writes of an ioredis Command. */
interface TimedCommand {
  setTimeout(ms: number): void
  /** ioredis keeps the command's timeout timer here; its _clearTimers ends it once the command is answered or failed. */
  _commandTimeoutTimer?: NodeJS.Timeout
  _clearTimers(): void
  isResolved: boolean
  resolve(reply: unknown): unknown
  reject(err: Error): void
}

/** Where the warning of a patch left out goes (a pino Logger). */
export interface PatchLog {
  warn(fields: Record<string, unknown>, msg: string): void
}

/** The ioredis the patch goes on: its Command class and its version. */
export interface Ioredis {
  Command: new (name: string) => unknown
  version: string
}

/** The installed ioredis's version, from its package.json. */
export function installedIoredisVersion(): string {
  return (createRequire(import.meta.url)('ioredis/package.json') as { version: string }).version
}

// Per Command prototype: whether the patch is on it. A second call changes and logs nothing.
const outcomes = new WeakMap<object, boolean>()

/**
 * Patches ioredis's command timeout (above) for every client of the process, once; to be
 * called before the first Redis client is made. Returns whether the patch is installed:
 * false, with a warning, when the installed ioredis is not the version or shape it was
 * checked with.
 */
export function installIoredisCommandTimeoutPatch(log: PatchLog, ioredis: Ioredis = { Command, version: installedIoredisVersion() }): boolean {
  const prototype = ioredis.Command.prototype as TimedCommand
  const known = outcomes.get(prototype)
  if (known !== undefined) return known
  const mismatch = ioredisMismatch(ioredis)
  if (mismatch === null) {
    prototype.setTimeout = function (this: TimedCommand, ms: number): void {
      if (this._commandTimeoutTimer) return
      this._commandTimeoutTimer = setTimeout(() => {
        setImmediate(() => {
          if (!this.isResolved) this.reject(new Error('Command timed out'))
        })
      }, ms)
    }
  } else {
    log.warn(
      { ioredis: ioredis.version, checked: CHECKED_IOREDIS_MINOR, mismatch },
      "ioredis command timeout left unpatched: this ioredis is not the one the patch was checked with, so a stalled process may fail commands whose replies came in time",
    )
  }
  outcomes.set(prototype, mismatch === null)
  return mismatch === null
}

/** What differs from the ioredis the patch was checked with, or null when nothing does. */
function ioredisMismatch({ Command: Made, version }: Ioredis): string | null {
  const minor = version.split('.').slice(0, 2).join('.')
  if (minor !== CHECKED_IOREDIS_MINOR) return `ioredis ${version}, the patch was checked with ${CHECKED_IOREDIS_MINOR}.x`
  const prototype = Made.prototype as Partial<Record<keyof TimedCommand, unknown>>
  if (typeof prototype.setTimeout !== 'function') return 'Command.prototype.setTimeout is not a function'
  if (typeof prototype._clearTimers !== 'function') return 'Command.prototype._clearTimers is not a function'
  let command: Partial<Record<keyof TimedCommand, unknown>>
  try {
    command = new Made('ping') as typeof command
  } catch (err) {
    return `a Command could not be made: ${(err as Error).message}`
  }
  if (command.isResolved !== false) return "a new Command's isResolved is not false"
  if (typeof command.reject !== 'function') return "a new Command's reject is not a function"
  if (typeof command.resolve !== 'function') return "a new Command's resolve is not a function"
  // Answered, the command must be marked resolved and its timer, kept where the patch
  // keeps it, ended and removed: else the patched timer would fail an answered command.
  const timer = setTimeout(() => undefined, 60_000)
  timer.unref()
  try {
    command._commandTimeoutTimer = timer
    const resolve = command.resolve as (this: unknown, reply: unknown) => unknown
    resolve.call(command, 'PONG')
    // Read again: resolve changes it (TypeScript still holds it to the false checked above).
    if ((command.isResolved as unknown) !== true) return "an answered Command's isResolved is not true"
    if (command._commandTimeoutTimer !== undefined) return "an answered Command keeps its _commandTimeoutTimer"
  } catch (err) {
    return `a Command could not be answered: ${(err as Error).message}`
  } finally {
    clearTimeout(timer)
  }
  return null
}
