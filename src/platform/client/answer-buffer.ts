import { Readable } from 'node:stream'
import type { Logger } from 'pino'
import { upstreamError } from './platform-client.js'

/**
 * Bytes of platform answers held in memory at once on this replica (platform.bufferTotalBytes):
 * reserved before an answer is held, freed once it has been sent or dropped.
 */
export class ByteBudget {
  readonly limit: number
  #used = 0

  constructor(limit: number) {
    this.limit = limit
  }

  get used(): number {
    return this.#used
  }

  /** Takes `bytes` if they fit; false leaves the budget as it was. */
  reserve(bytes: number): boolean {
    if (this.#used + bytes > this.limit) return false
    this.#used += bytes
    return true
  }

  free(bytes: number): void {
    this.#used -= bytes
  }
}

export interface AnswerLimits {
  /** Most bytes of one answer held (platform.bufferBytes). */
  callBytes: number
  /** How long a caller may take nothing before its answer is cut off (platform.readIdleTimeout). */
  readIdleMs: number
}

/**
 * How long a caller may take nothing of its answer while another team's answer needs the
 * buffer room it holds: then it is cut off at once rather than at readIdleTimeout. A
 * caller reading at any pace takes something far more often.
 */
export const CONTENDED_STALL_MS = 1000

/** Whose answer it is: named in the warning when its caller stops reading. */
export interface AnswerReader {
  credential: string
  team: string
  /** The call's path, without the query. */
  path: string
  log: Pick<Logger, 'warn'>
}

/** What is still to come of a platform answer: its chunks, and the body they are read from. */
export interface AnswerRest {
  chunks: AsyncIterator<Buffer>
  /** Destroyed to end the platform call at once, even while a chunk is awaited. */
  body: Readable
}

/** A platform answer as its caller gets it. */
export interface HeldAnswer {
  /** Its length when it was received whole; null while its rest streams from the platform. */
  length: number | null
  body: Readable
}

/**
 * What a caller reads of a platform answer. The governor's seat ends with the answer's
 * headers (the platform's work is done: docs/governor.md); an answer within
 * platform.bufferBytes, and within what all held answers may take, is received whole at
 * the platform's speed, a larger one streams as its caller reads. Either way a caller that
 * takes nothing for platform.readIdleTimeout is cut off, which frees the connection and
 * the memory it held; and one that takes nothing for CONTENDED_STALL_MS while another
 * team's answer needs the room it holds is cut off then.
 */
export class PlatformAnswers {
  readonly budget: ByteBudget
  readonly #limits: AnswerLimits
  readonly #onSlowReader: (credential: string) => void
  // The answers whose callers are reading them: what a team waiting for room may take back.
  readonly #open = new Set<WatchedAnswer>()

  constructor(limits: AnswerLimits & { totalBytes: number; onSlowReader: (credential: string) => void }) {
    this.#limits = limits
    this.budget = new ByteBudget(limits.totalBytes)
    this.#onSlowReader = limits.onSlowReader
  }

  /** Room for `bytes` of `team`'s answer: held answers of other teams whose callers stalled are cut off until it fits. */
  #roomFor(bytes: number, team: string): boolean {
    for (;;) {
      if (this.budget.reserve(bytes)) return true
      const stalled = this.#longestStalled((a) => a.held > 0 && a.reader.team !== team)
      if (stalled === null) return false
      stalled.cut()
    }
  }

  #longestStalled(which: (a: WatchedAnswer) => boolean): WatchedAnswer | null {
    const now = performance.now()
    let found: WatchedAnswer | null = null
    for (const a of this.#open) {
      if (a.stalledSince === null || now - a.stalledSince < CONTENDED_STALL_MS || !which(a)) continue
      if (found === null || (a.stalledSince as number) < (found.stalledSince as number)) found = a
    }
    return found
  }

  /**
   * Receives a platform answer body whole when it fits, else as much as fits and the
   * rest as it streams. A body that fails while it is received is the call's GW_* error.
   */
  async receive(body: Readable, contentLength: string | undefined, reader: AnswerReader): Promise<HeldAnswer> {
    const rest: AnswerRest = { chunks: body[Symbol.asyncIterator](), body }
    let held = 0
    // A declared length is reserved at once: answers arriving together do not each take
    // a part of the budget and then all stream.
    const declared = contentLength === undefined ? NaN : Number(contentLength)
    if (Number.isSafeInteger(declared)) {
      if (declared > this.#limits.callBytes || !this.#roomFor(declared, reader.team)) return { length: null, body: this.#watched([], rest, 0, reader) }
      held = declared
    }
    const head: Buffer[] = []
    let size = 0
    try {
      // Driven by hand: leaving a for-await loop early would destroy the body, whose rest is still to stream.
      for (let next = await rest.chunks.next(); !next.done; next = await rest.chunks.next()) {
        head.push(next.value)
        size += next.value.length
        if (size <= held) continue
        if (size > this.#limits.callBytes || !this.#roomFor(size - held, reader.team)) return { length: null, body: this.#watched(head, rest, held, reader) }
        held = size
      }
    } catch (err) {
      this.budget.free(held)
      throw upstreamError(err)
    }
    // A body shorter than declared gives back what it did not use.
    this.budget.free(held - size)
    return { length: size, body: this.#watched(head, null, size, reader) }
  }

  /** An answer's `head`, already read, then its `rest` from the platform, watched for a caller that stops reading. */
  stream(head: Buffer[], rest: AnswerRest, reader: AnswerReader): Readable {
    return this.#watched(head, rest, 0, reader)
  }

  #watched(head: Buffer[], rest: AnswerRest | null, held: number, reader: AnswerReader): Readable {
    const answer: WatchedAnswer = new WatchedAnswer(head, rest, held, reader, this.#limits.readIdleMs, {
      idle: (contended) => {
        this.#onSlowReader(reader.credential)
        const fields = { credential: reader.credential, team: reader.team, path: reader.path }
        if (contended) reader.log.warn({ ...fields, stalledMs: CONTENDED_STALL_MS, wanted: 'room' }, 'caller stopped reading while another team waited for its room: answer cut off')
        else reader.log.warn({ ...fields, readIdleMs: this.#limits.readIdleMs }, 'caller stopped reading: answer cut off')
      },
      closed: () => {
        this.#open.delete(answer)
        this.budget.free(held)
      },
    })
    this.#open.add(answer)
    return answer
  }
}

/** What a watched answer tells its owner: cut off (`contended`: another team waited for its room; else readIdleTimeout), closed. */
interface AnswerEvents {
  idle: (contended: boolean) => void
  closed: () => void
}

/**
 * The caller's side of an answer. Its clock runs only while the caller holds it up: from
 * a push the consumer has no room for to the consumer's next read. A platform that is
 * slow to send leaves the buffer below its mark, and the clock stopped.
 */
class WatchedAnswer extends Readable {
  readonly held: number
  readonly reader: AnswerReader
  /** When its caller last held it up (monotonic ms), or null while it reads. */
  stalledSince: number | null = null
  readonly #head: Buffer[]
  readonly #rest: AnswerRest | null
  readonly #idleMs: number
  readonly #on: AnswerEvents
  #timer: NodeJS.Timeout | null = null

  constructor(head: Buffer[], rest: AnswerRest | null, held: number, reader: AnswerReader, idleMs: number, on: AnswerEvents) {
    super()
    this.#head = head
    this.#rest = rest
    this.held = held
    this.reader = reader
    this.#idleMs = idleMs
    this.#on = on
  }

  /** Cuts the answer off: its caller took nothing while another team's answer needed the room it holds. */
  cut(): void {
    if (this.destroyed) return
    this.#on.idle(true)
    // Without an error: the reply sees a premature close and cuts the caller's connection.
    this.destroy()
  }

  override _read(): void {
    this.#stopClock()
    while (this.#head.length > 0) {
      if (!this.push(this.#head.shift())) return this.#startClock()
    }
    if (this.#rest) void this.#pull(this.#rest)
    else this.push(null)
  }

  async #pull(rest: AnswerRest): Promise<void> {
    try {
      const next = await rest.chunks.next()
      if (this.destroyed) return
      if (next.done) this.push(null)
      else if (!this.push(next.value)) this.#startClock()
    } catch (err) {
      this.destroy(err as Error)
    }
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.#stopClock()
    // Ends the platform body, if it is still open: its connection is free again.
    this.#rest?.body.destroy()
    this.#on.closed()
    callback(err)
  }

  #startClock(): void {
    this.stalledSince = performance.now()
    this.#timer = setTimeout(() => {
      this.#on.idle(false)
      // Without an error: the reply sees a premature close and cuts the caller's connection.
      this.destroy()
    }, this.#idleMs)
    this.#timer.unref()
  }

  #stopClock(): void {
    this.stalledSince = null
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
  }
}
