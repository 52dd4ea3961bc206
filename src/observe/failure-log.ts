import type { Logger } from 'pino'
import { systemClock, type Clock, type Timer } from '../clock.js'
import { commandFailureInWords } from '../redis/client.js'

/** How long a flood of one failure is counted before its one summary line. */
export const FAILURE_SUMMARY_MS = 10_000

/**
 * A failure the gateway answered as the contract says (a 502, 503 or 504 with its GW_*
 * code: the platform failed or timed out, the queue is full, the token was refused), not
 * a fault of its own: a warn line with the code, never an error with a stack.
 */
export function handledFailure(status: number, code: string | undefined): boolean {
  return (status === 502 || status === 503 || status === 504) && code !== undefined && code.startsWith('GW_')
}

/** A handled failure's warn line: where it is written, its message, the error it answers and fields of its own. */
export interface HandledLine {
  log: Pick<Logger, 'warn'>
  msg: string
  err?: unknown
  fields?: Record<string, unknown>
}

/**
 * What a handled failure's line says of its error: its message (`reason`), its own code
 * where it is not the line's (`errorCode`: a driver's, say) and its cause's message, a
 * Redis command's failure in the gateway's words (the driver's name its options);
 * never a stack, which is for what the gateway did not expect (contract, "Logs").
 */
export function failureFields(code: string | undefined, err: unknown): { reason?: string; errorCode?: string; cause?: string } {
  if (!(err instanceof Error)) return {}
  const own = (err as { code?: unknown }).code
  return {
    reason: commandFailureInWords(err),
    ...(typeof own === 'string' && own !== code ? { errorCode: own } : {}),
    ...(err.cause instanceof Error ? { cause: commandFailureInWords(err.cause) } : {}),
  }
}

interface Flood {
  code: string
  /** How it was answered, when that is not the code's error (a stale copy served). */
  how: string | undefined
  count: number
  since: number
  timer: Timer
}

/**
 * The log of handled failures, so that a flood of one of them does not bury the rest:
 * the first of a kind is logged in full at once; the same kind again within
 * `intervalMs` is only counted, and each interval that counted some ends with one line
 * giving their number. A kind quiet for a whole interval is logged in full again.
 */
export class FailureLog {
  readonly #log: Pick<Logger, 'warn'>
  readonly #intervalMs: number
  readonly #clock: Clock
  readonly #floods = new Map<string, Flood>()

  constructor(opts: { log: Pick<Logger, 'warn'>; intervalMs?: number; clock?: Clock }) {
    this.#log = opts.log
    this.#intervalMs = opts.intervalMs ?? FAILURE_SUMMARY_MS
    this.#clock = opts.clock ?? systemClock
  }

  /** A failure of code `code`, answered as `how` when not with its error; `first` logs it in full. */
  note(code: string, first: () => void, how?: string): void {
    const kind = how === undefined ? code : `${code} ${how}`
    const flood = this.#floods.get(kind)
    if (flood) {
      flood.count += 1
      return
    }
    first()
    this.#open(kind, code, how)
  }

  /** A handled failure of code `code`, answered as `how` when not with its error: its warn line (`line`) in full the first time. */
  warn(code: string, line: HandledLine, how?: string): void {
    this.note(code, () => line.log.warn({ code, ...line.fields, ...failureFields(code, line.err) }, line.msg), how)
  }

  /** Ends every interval now: their counts are logged (the gateway is closing). */
  close(): void {
    for (const flood of this.#floods.values()) {
      this.#clock.clearTimeout(flood.timer)
      this.#summarize(flood)
    }
    this.#floods.clear()
  }

  #open(kind: string, code: string, how: string | undefined): void {
    this.#floods.set(kind, { code, how, count: 0, since: this.#clock.now(), timer: this.#clock.setTimeout(() => this.#end(kind), this.#intervalMs).unref() })
  }

  #end(kind: string): void {
    const flood = this.#floods.get(kind)
    if (!flood) return
    this.#floods.delete(kind)
    // A flood that goes on gets one line per interval; a quiet kind is forgotten.
    if (this.#summarize(flood)) this.#open(kind, flood.code, flood.how)
  }

  #summarize({ code, how, count, since }: Flood): boolean {
    if (count === 0) return false
    const seconds = Math.max(1, Math.round((this.#clock.now() - since) / 1000))
    this.#log.warn({ code, ...(how === undefined ? {} : { how }), count, seconds }, `${code}${how === undefined ? '' : ` (${how})`}: ${count} more in the last ${seconds} s`)
    return true
  }
}
