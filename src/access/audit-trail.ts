import { pino, type DestinationStream, type Logger } from 'pino'
import { holdsKeyRun } from '../observe/key-runs.js'
import { SecretSet, loggerOptions } from '../observe/logger.js'

/** How many audit lines of each kind (teams' writes; refused admin calls; every other) a replica keeps for the console. */
export const AUDIT_LINES = 50

/** The actions of refused admin calls (a token missing, wrong or a viewer's; a Host the listener does not answer to). */
const REFUSALS: ReadonlySet<string> = new Set(['admin-auth', 'admin-host'])

/** The fields of a refused admin call's line that hold what its caller wrote (not kept for the console: AuditTrail.take). */
const GUESSER_TEXTS = ['path', 'host'] as const

/**
 * The audit log: `log` with `"kind":"audit"` on every line, held at info whatever level
 * `log` is set to (LOG_LEVEL, PUT /admin/log-level; `error` and `silent` too), so that no
 * level silences the record of who changed what. A child of `log`, it writes to its
 * destination through its redaction and its secret scrubbing.
 */
export function auditLog(log: Logger): Logger {
  const audit = log.child({ kind: 'audit' })
  // Set on the child itself: a child whose level was never set follows its parent's.
  audit.level = 'info'
  return audit
}

/**
 * The last audit lines (`"kind":"audit"`) this replica logged, newest first, for the
 * operations console. It reads the serialized log lines, so what it keeps went through
 * the logger's redaction like every line; but a team's write, whose line holds the team's
 * text, it keeps as its own log writes it (keepWrite): scrubbed of every value the log
 * scrubs but a word a team may write (SecretSet.scrubShown). Teams' writes
 * (`"action":"write"`, one per audited call of a team) and refused admin calls (`"action":"admin-auth"`: a viewer's
 * change, a missing or wrong token, an address locked out; `"action":"admin-host"`: a
 * Host the listener does not answer to, which any web page an operator opens can send) are each kept apart from every
 * other line (the operators' admin calls, reloads, token changes): each has its last
 * `size`, so a team writing often, a viewer's token sending changes or a caller without a
 * token calling from many addresses pushes out only its own kind, never an operator's line.
 */
export class AuditTrail {
  readonly #writes: Kept[] = []
  readonly #refusals: Kept[] = []
  readonly #others: Kept[] = []
  readonly #size: number
  #taken = 0
  // The teams' writes as the trail keeps them: a log of its own, at info whatever LOG_LEVEL
  // is, whose lines are scrubbed as a copy a caller reads is (its own scrub and its own cut of
  // a long path: the log's, of a login's short password, would show a viewer `[REDACTED]`
  // where a write held it and the text as sent where it held another guess).
  readonly #writesLog: Logger
  // The time of the log's line of the write keepWrite keeps next, which its copy is written
  // at: a clock read apart may have passed a millisecond between the two lines.
  #writeTime: number | null = null

  constructor(size = AUDIT_LINES, secrets = new SecretSet()) {
    this.#size = size
    const options = loggerOptions('info', secrets, (text) => secrets.scrubShown(text))
    const timestamp = () => (this.#writeTime === null ? pino.stdTimeFunctions.epochTime() : `,"time":${this.#writeTime}`)
    this.#writesLog = auditLog(pino({ ...options, timestamp }, { write: (line: string) => this.#keep(line, true) }))
  }

  /**
   * A log destination that writes every line to `dest` and keeps the audit ones. Without
   * `dest`, to stdout (pino's, sonic-boom): its `flush(cb)` then calls back once every byte
   * handed to it is written, or with the EPIPE stdout met (no reader), before or since, so that
   * main.ts exits after the log's last lines; pino's own flush of stdout at the exit retries
   * a write that met EPIPE for ever. A given `dest` flushes as it does.
   */
  tee(dest?: DestinationStream): DestinationStream {
    if (dest) {
      const flushable = dest as DestinationStream & { flush?: (cb?: (err?: Error) => void) => void }
      return {
        write: (line: string) => {
          this.take(line)
          return dest.write(line)
        },
        flush: (cb?: (err?: Error) => void) => (flushable.flush ? flushable.flush(cb) : cb?.()),
      } as DestinationStream
    }
    const stdout = pino.destination(1)
    // Bytes handed to stdout and not yet written (sonic-boom says each write it made), and
    // the flushes waiting for them.
    let unwritten = 0
    const waiting: ((err?: Error) => void)[] = []
    // EPIPE once met stays: pino then makes every write a no-op, so nothing handed on is
    // written any more, and a flush asked at any time after calls back with it.
    let broken: Error | null = null
    const settle = (err?: Error) => {
      for (const cb of waiting.splice(0)) cb(err)
    }
    stdout.on('write', (bytes: number) => {
      unwritten = Math.max(0, unwritten - bytes)
      if (unwritten === 0) settle()
    })
    stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') {
        broken = err
        return settle(err)
      }
      // Any other failure is pino's to throw (it re-emits it with this listener alone left).
      if (stdout.listenerCount('error') === 1) throw err
    })
    return {
      write: (line: string) => {
        this.take(line)
        unwritten += Buffer.byteLength(line)
        return stdout.write(line)
      },
      flush: (cb?: (err?: Error) => void) => {
        if (!cb) return
        if (broken !== null) return cb(broken)
        if (unwritten === 0) return cb()
        waiting.push(cb)
      },
    } as DestinationStream
  }

  /** Keeps the line of a team's write (`"action":"write"`, auditWrite) as the trail's own log writes it, its log's line written apart. */
  keepWrite(fields: Record<string, unknown>, msg: string): void {
    this.#writesLog.info({ ...fields, action: 'write' }, msg)
    this.#writeTime = null
  }

  /** Keeps a line of the log when it is an audit line of any action but a team's write (kept by keepWrite). */
  take(line: string): void {
    this.#keep(line, false)
  }

  /**
   * Keeps `line` when its own `kind` is `audit`, a team's write's from the trail's own log
   * (`write`) and every other from the log. The text `"kind":"audit"` alone does not make
   * one: a team's object in a line (the accounts of a request line, as the caller wrote them)
   * can hold it, and the team's line would then take an operator's place.
   */
  #keep(line: string, write: boolean): void {
    if (!line.includes('"kind":"audit"')) return
    let parsed: unknown
    try {
      parsed = JSON.parse(line)
    } catch {
      return // not one whole JSON line: not the logger's
    }
    if (typeof parsed !== 'object' || parsed === null || (parsed as { kind?: unknown }).kind !== 'audit') return
    const kept = parsed as Record<string, unknown>
    if (kept.action === 'write' && !write) {
      // The log's line of a write: its copy, written next by keepWrite, takes its time.
      this.#writeTime = typeof kept.time === 'number' ? kept.time : null
      return
    }
    if (kept.action !== 'write' && write) return
    const refused = REFUSALS.has(kept.action as string)
    // A refused call's path and Host are a guesser's text, written [REDACTED] where they held
    // a secret of the gateway's: kept, a viewer would read whether each did. Its route says
    // which call it was; the log's line keeps them for the operators.
    if (refused) for (const field of GUESSER_TEXTS) delete kept[field]
    // A write's request id is its caller's x-request-id where it sent one: written through the
    // scrub of each team's webhook secret by value (scrubShown keeps it), it would show a viewer `[REDACTED]`
    // for a team's secret and a guess as sent. One that may hold a secret (key-runs.ts), or
    // holds a redaction, is kept `[REDACTED]` whole, whatever it is; the log's line keeps it.
    if (typeof kept.reqId === 'string' && holdsKeyRun(kept.reqId)) kept.reqId = '[REDACTED]'
    const ring = kept.action === 'write' ? this.#writes : refused ? this.#refusals : this.#others
    ring.unshift({ order: this.#taken++, line: kept })
    if (ring.length > this.#size) ring.length = this.#size
  }

  /** Every kind's last lines, newest first (in the order they were logged). */
  lines(): Record<string, unknown>[] {
    return [...this.#writes, ...this.#refusals, ...this.#others].sort((a, b) => b.order - a.order).map((kept) => kept.line)
  }
}

/** A line kept, and its place among every line kept. */
interface Kept {
  order: number
  line: Record<string, unknown>
}
