import { Readable } from 'node:stream'
import type { Logger } from 'pino'
import { AnswerBudgetError, UpstreamError } from '../../errors.js'
import { upstreamError } from './platform-client.js'
import { transient } from './transient.js'
import { ByteBudget } from './answer-budget.js'
import { AnswerBlocks, freeAll, PIECE_BYTES } from './answer-blocks.js'

export interface AnswerLimits {
  /** Every byte of answers on their way to callers at once on this replica (platform.bufferTotalBytes). */
  totalBytes: number
  /** How long a caller may take nothing before its answer is cut off (platform.readIdleTimeout). */
  readIdleMs: number
}

/**
 * How long a caller may take nothing of its answer while another team's answer needs the
 * room it holds: then it is cut off at once rather than at readIdleTimeout. A caller
 * reading at any pace takes something far more often.
 */
export const CONTENDED_STALL_MS = 1000

/** Whose answer it is: named in the warning when its caller is cut off. */
export interface AnswerReader {
  credential: string
  team: string
  /** The call's path, without the query. */
  path: string
  log: Pick<Logger, 'warn'>
}

/** Why a caller's answer was cut off: it took nothing for readIdleTimeout, or, while another team needed its room, nothing for CONTENDED_STALL_MS, or too little to give its room back within readIdleTimeout. */
type Cut = 'idle' | 'stalled' | 'slow'

const CUT_LINES: Record<Cut, string> = {
  idle: 'caller stopped reading: answer cut off',
  stalled: 'caller stopped reading while another team waited for its room: answer cut off',
  slow: 'caller read too slowly while another team waited for its room: answer cut off',
}

/**
 * Every answer on its way from the platform to a caller, within one memory budget
 * (platform.bufferTotalBytes). An answer is received whole at the platform's pace, each
 * byte counted as it arrives, so that the platform's work on it ends when it has sent it,
 * whatever its caller's pace (docs/governor.md: a seat covers the platform's work), held
 * in blocks of its own (answer-blocks.ts) freed as its caller takes them. An answer that finds no room makes some from
 * other teams' answers (a team's callers take no room from each other): those whose
 * callers stopped taking anything for CONTENDED_STALL_MS are cut off, then those whose
 * callers read too slowly to give their room back within platform.readIdleTimeout, the
 * slowest first; with still no room it is refused, 503 GW_ANSWER_BUDGET with the
 * `retry-after` the readers' pace gives, and one larger than the whole budget 502
 * GW_UPSTREAM. A caller that takes nothing for platform.readIdleTimeout is cut off.
 */
export class PlatformAnswers {
  readonly budget: ByteBudget
  readonly #readIdleMs: number
  readonly #onSlowReader: (credential: string) => void
  readonly #onRefused: (credential: string) => void
  // The answers being sent to their callers: what an answer that needs room may take back.
  readonly #open = new Set<WatchedAnswer>()

  constructor(limits: AnswerLimits & { onSlowReader: (credential: string) => void; onRefused?: (credential: string) => void }) {
    this.budget = new ByteBudget(limits.totalBytes)
    this.#readIdleMs = limits.readIdleMs
    this.#onSlowReader = limits.onSlowReader
    this.#onRefused = limits.onRefused ?? (() => undefined)
  }

  /**
   * Receives a platform answer body whole at the platform's pace, within the budget. A body
   * that fails while it is received is the call's GW_* error; one that finds no room is
   * refused (its platform body dropped).
   */
  async receive(body: Readable, contentLength: string | undefined, reader: AnswerReader): Promise<HeldAnswer> {
    let held = 0
    // A declared length is reserved at once: answers arriving together do not each take a part of the budget and then all fail.
    const declared = contentLength === undefined ? NaN : Number(contentLength)
    const blocks = new AnswerBlocks(Number.isSafeInteger(declared) && declared > 0 ? declared : null)
    try {
      if (blocks.declared !== null) {
        this.#room(blocks.declared, blocks.declared, reader)
        held = blocks.declared
      }
      for await (const chunk of body as AsyncIterable<Buffer>) {
        const size = blocks.length + chunk.length
        if (size > held) {
          this.#room(size - held, size, reader)
          held = size
        }
        blocks.add(chunk)
      }
    } catch (err) {
      this.budget.free(held)
      blocks.drop()
      body.destroy()
      throw upstreamError(err)
    }
    // A body shorter than declared gives back what it did not use.
    this.budget.free(held - blocks.length)
    const chunks = blocks.done()
    return new HeldAnswer(chunks, blocks.length, this.budget, (held) => this.#watched(held, reader))
  }

  /** Takes `bytes` more of the budget for `reader`'s answer of `total` bytes so far, making room; else throws the refusal. */
  #room(bytes: number, total: number, reader: AnswerReader): void {
    if (total > this.budget.limit) throw new UpstreamError(`an answer larger than platform.bufferTotalBytes (${this.budget.limit} bytes)`)
    for (;;) {
      if (this.budget.reserve(bytes)) return
      const cut = this.#stalled(reader.team) ?? this.#slowest(reader.team)
      if (cut === null) break
      cut.answer.cut(cut.why)
    }
    const retryAfterSec = this.budget.retryAfterSec(bytes)
    this.#onRefused(reader.credential)
    // Room frees as the readers take their answers: a report job's later try may find it (transient.ts).
    throw transient(Object.assign(new AnswerBudgetError(`the answers on their way to callers hold platform.bufferTotalBytes (${this.budget.limit} bytes); retry in ${retryAfterSec} s`), { retryAfterSec }))
  }

  /**
   * Takes `bytes` of the budget for a request body of `team`'s (access/body-room.ts), making
   * room as an answer does: other teams' answers whose callers stopped taking them, then the
   * slowest, are cut; false when none could be made. A body that found no room was refused
   * at once, cutting nothing: a team holding the budget with answers it never reads (queued on
   * a connection behind a call the platform is slow to answer) held every other team's calls
   * with a body out, 503 GW_BODY_BUDGET.
   */
  reserveForBody(team: string, bytes: number): boolean {
    if (bytes > this.budget.limit) return false
    for (;;) {
      if (this.budget.reserve(bytes)) return true
      const cut = this.#stalled(team) ?? this.#slowest(team)
      if (cut === null) return false
      cut.answer.cut(cut.why)
    }
  }

  /** The answer of a team other than `team` whose caller has taken nothing for longest, past CONTENDED_STALL_MS. */
  #stalled(team: string): { answer: WatchedAnswer; why: Cut } | null {
    const now = performance.now()
    let found: WatchedAnswer | null = null
    for (const a of this.#open) {
      if (a.reader.team === team || a.stalledSince === null || now - a.stalledSince < CONTENDED_STALL_MS || a.unsent === 0) continue
      if (found === null || a.stalledSince < (found.stalledSince as number)) found = a
    }
    return found && { answer: found, why: 'stalled' }
  }

  /** The answer of a team other than `team` that would take its caller longest to read, past readIdleTimeout at its pace. */
  #slowest(team: string): { answer: WatchedAnswer; why: Cut } | null {
    const now = performance.now()
    let found: WatchedAnswer | null = null
    let longest = this.#readIdleMs
    for (const a of this.#open) {
      if (a.reader.team === team || a.unsent === 0) continue
      const ms = a.drainMs(now)
      if (ms > longest) {
        found = a
        longest = ms
      }
    }
    return found && { answer: found, why: 'slow' }
  }

  #watched(chunks: Buffer[], reader: AnswerReader): Readable {
    const answer: WatchedAnswer = new WatchedAnswer(chunks, this.budget, reader, this.#readIdleMs, {
      cut: (why) => {
        this.#onSlowReader(reader.credential)
        const fields = { credential: reader.credential, team: reader.team, path: reader.path }
        const detail = why === 'idle' ? { readIdleMs: this.#readIdleMs } : { wanted: 'room', ...(why === 'stalled' ? { stalledMs: CONTENDED_STALL_MS } : { readIdleMs: this.#readIdleMs }) }
        reader.log.warn({ ...fields, ...detail }, CUT_LINES[why])
      },
      closed: () => this.#open.delete(answer),
    })
    this.#open.add(answer)
    return answer
  }
}

/**
 * A platform answer received whole, its bytes counted in the budget: sent to one caller
 * (stream), or read by the gateway itself (bytes) and given back (release).
 */
export class HeldAnswer {
  /** Its length in bytes. */
  readonly length: number
  readonly #chunks: Buffer[]
  readonly #budget: ByteBudget
  readonly #watch: (chunks: Buffer[]) => Readable
  #gone = false
  // The blocks joined by peek(): what bytes() hands over then, so that they are joined once.
  #joined: Buffer | null = null

  constructor(chunks: Buffer[], length: number, budget: ByteBudget, watch: (chunks: Buffer[]) => Readable) {
    this.#chunks = chunks
    this.length = length
    this.#budget = budget
    this.#watch = watch
  }

  /**
   * Its body in a buffer of its own (never a view of a larger one the platform's chunks
   * came in, which a cache entry would keep whole); its bytes stay counted until release().
   */
  bytes(): Buffer {
    // One block is handed over as it is (release() then has nothing to give back to the allocator).
    if (this.#chunks.length === 1) return this.#chunks.pop() as Buffer
    const joined = this.#joined ?? Buffer.concat(this.#chunks, this.length)
    this.#joined = null
    return joined
  }

  /**
   * Its body's bytes to read while it stays held (to decide what it is before it is sent
   * or kept): its one block as it is, or its blocks joined in a copy, the one bytes() then
   * hands over. Nothing read from it is to outlive release().
   */
  peek(): Buffer {
    if (this.#chunks.length === 1) return this.#chunks[0] as Buffer
    this.#joined ??= Buffer.concat(this.#chunks, this.length)
    return this.#joined
  }

  /** The body as its caller reads it, each block's bytes freed once it is taken; once. */
  stream(): Readable {
    if (this.#gone) throw new Error('a held answer is sent or released once')
    this.#gone = true
    this.#joined = null
    return this.#watch(this.#chunks)
  }

  /**
   * Its body as `edit` makes it of its bytes (a refusal without its debug fields, decoded
   * for its caller), as its caller reads it: watched and counted as stream()'s is; once.
   * `edit` returns null to send the bytes as they are (`edited` false). Throws
   * (GW_UPSTREAM) when the made body is longer than the bytes and the budget has no room
   * for the difference.
   */
  streamEdited(edit: (bytes: Buffer) => Buffer | null): { body: Readable; length: number; edited: boolean } {
    if (this.#gone) throw new Error('a held answer is sent or released once')
    // One block: bytes() hands it over; several: it joins them in a copy, the blocks kept.
    const handed = this.#chunks.length === 1
    const bytes = this.bytes()
    const made = edit(bytes)
    if (made === null) {
      if (handed) this.#chunks.push(bytes)
      return { body: this.stream(), length: this.length, edited: false }
    }
    const extra = made.length - this.length
    if (extra > 0 && !this.#budget.reserve(extra)) {
      if (handed) this.#chunks.push(bytes)
      this.release()
      throw new UpstreamError(`a platform refusal rewritten for its caller does not fit platform.bufferTotalBytes (${this.#budget.limit} bytes)`)
    }
    if (extra < 0) this.#budget.free(-extra)
    const block = ownBlock(made)
    // The platform's blocks are given back now; the made body is a block of its own, given back as it is read.
    freeAll(handed ? [bytes] : this.#chunks)
    this.#chunks.length = 0
    this.#chunks.push(block)
    return { body: this.stream(), length: block.length, edited: true }
  }

  /** Frees its bytes: nobody reads it. Nothing after a stream(). */
  release(): void {
    if (this.#gone) return
    this.#gone = true
    this.#joined = null
    this.#budget.free(this.length)
    freeAll(this.#chunks)
  }
}

/**
 * `bytes` in a block of its own: a watched answer gives its blocks' memory back
 * (freeAll detaches them), which a view of Node's shared pool (a small Buffer.from or
 * concat) or of any other buffer must never be.
 */
function ownBlock(bytes: Buffer): Buffer {
  const block = Buffer.alloc(bytes.length)
  bytes.copy(block)
  return block
}

/** What a watched answer tells its owner: cut off (why), closed. */
interface AnswerEvents {
  cut: (why: Cut) => void
  closed: () => void
}

/**
 * The caller's side of a held answer. It is handed to the caller's socket in pieces of
 * PIECE_BYTES, each a copy; a block's bytes are freed, and its memory given back to the
 * allocator, once its caller has taken its last piece, the rest when it closes. Its clock runs only while the caller holds it up:
 * from a push the consumer has no room for to the consumer's next read.
 */
class WatchedAnswer extends Readable {
  readonly reader: AnswerReader
  /** When its caller last held it up (monotonic ms), or null while it reads. */
  stalledSince: number | null = null
  /** Bytes still to be taken by its caller. */
  unsent: number
  readonly #chunks: Buffer[]
  readonly #budget: ByteBudget
  readonly #idleMs: number
  readonly #on: AnswerEvents
  #sent = 0
  // Bytes of the first block already taken; what the budget still counts of this answer (the blocks not all taken).
  #at = 0
  #counted: number
  // When its caller first had no room for a push, and what it had taken by then.
  #backedUp: { at: number; sent: number } | null = null
  #timer: NodeJS.Timeout | null = null

  constructor(chunks: Buffer[], budget: ByteBudget, reader: AnswerReader, idleMs: number, on: AnswerEvents) {
    super()
    this.#chunks = chunks
    this.#budget = budget
    this.unsent = chunks.reduce((sum, c) => sum + c.length, 0)
    this.#counted = this.unsent
    this.reader = reader
    this.#idleMs = idleMs
    this.#on = on
  }

  /**
   * How long its caller would take to read what it still holds, at the pace it has read
   * since its answer first backed up (before that it took all it was given); 0 while that
   * pace is under CONTENDED_STALL_MS old, too soon to tell.
   */
  drainMs(now: number): number {
    if (this.#backedUp === null) return 0
    const elapsed = now - this.#backedUp.at
    if (elapsed < CONTENDED_STALL_MS) return 0
    const taken = this.#sent - this.#backedUp.sent
    return taken === 0 ? Infinity : (this.unsent * elapsed) / taken
  }

  /** Cuts the answer off: another team's answer needs the room it holds. */
  cut(why: Cut): void {
    if (this.destroyed) return
    this.#on.cut(why)
    // Without an error: the reply sees a premature close and cuts the caller's connection.
    this.destroy()
  }

  override _read(): void {
    this.#stopClock()
    while (this.#chunks.length > 0) {
      const block = this.#chunks[0] as Buffer
      // A copy: the socket's writes hold the piece, not the block, so a block's memory goes
      // back to the allocator once its last piece is taken rather than at V8's next full
      // collection (a block lives as long as its answer, into the old generation).
      const piece = Buffer.from(block.subarray(this.#at, this.#at + PIECE_BYTES))
      this.#at += piece.length
      if (this.#at === block.length) {
        this.#chunks.shift()
        this.#at = 0
        this.#counted -= block.length
        this.#budget.free(block.length)
        freeAll([block])
      }
      this.unsent -= piece.length
      this.#sent += piece.length
      if (!this.push(piece)) return this.#startClock()
    }
    this.push(null)
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.#stopClock()
    freeAll(this.#chunks)
    this.#budget.free(this.#counted)
    this.#counted = 0
    this.unsent = 0
    this.#on.closed()
    callback(err)
  }

  #startClock(): void {
    const since = performance.now()
    this.stalledSince = since
    this.#backedUp ??= { at: since, sent: this.#sent }
    // Judged once the loop has read what came meanwhile (an immediate runs after its I/O): a
    // loop held past the clock's end runs its timers first, before a take of the caller's
    // that came while it was held (in slow-readers.test.ts, read 1 ms after the cut).
    this.#timer = setTimeout(() => setImmediate(() => {
      if (this.stalledSince !== since || this.destroyed) return
      this.#on.cut('idle')
      // Without an error: the reply sees a premature close and cuts the caller's connection.
      this.destroy()
    }), this.#idleMs)
    this.#timer.unref()
  }

  #stopClock(): void {
    this.stalledSince = null
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
  }
}
