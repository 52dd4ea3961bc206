/**
 * Where a held answer's bytes live: blocks of the gateway's own, each a memory allocation
 * of its own, the platform's chunks copied in as they arrive. The socket's read buffers
 * the chunks came in are then short-lived (freed by the young generation's collections
 * and reused by the next reads) rather than held for as long as a caller reads, and a
 * block nobody was handed is given back to the allocator the moment its answer is
 * dropped (`free`), in step with the answers' budget, not at V8's next full collection:
 * with 64 KiB socket buffers held for minutes, the gateway's resident size grew past the
 * budget by a cut-off answer's bytes until that collection, and by the holes they left.
 */

/** The largest block an answer is copied into: the most one caller holds outside the budget while its socket takes a block's last piece. */
export const BLOCK_BYTES = 1024 * 1024

/** The pieces a block is handed to its caller's socket in. */
export const PIECE_BYTES = 64 * 1024

/** Gives each buffer's memory back to the allocator at once (it must be one nobody else holds). */
export function freeAll(blocks: Buffer[]): void {
  // ArrayBuffer.prototype.transfer (ES2024; Node 22 and later): detaches the buffer, whose memory goes back now.
  for (const block of blocks) (block.buffer as ArrayBuffer & { transfer(length: number): ArrayBuffer }).transfer(0)
  blocks.length = 0
}

/** An answer's bytes as they arrive: copied into blocks sized by its declared length, else growing with what came. */
export class AnswerBlocks {
  /** Its declared length (content-length), null without one. */
  readonly declared: number | null
  /** Bytes copied in so far. */
  length = 0
  readonly #blocks: Buffer[] = []
  #current: Buffer | null = null
  #filled = 0

  constructor(declared: number | null) {
    this.declared = declared
  }

  add(chunk: Buffer): void {
    for (let from = 0; from < chunk.length; ) {
      if (this.#current === null || this.#filled === this.#current.length) this.#next(chunk.length - from)
      const block = this.#current as Buffer
      const copied = chunk.copy(block, this.#filled, from)
      this.#filled += copied
      this.length += copied
      from += copied
    }
  }

  /** The blocks, the last one cut to what it holds: a buffer of its own each. */
  done(): Buffer[] {
    const last = this.#current
    if (last !== null && this.#filled > 0) {
      if (this.#filled === last.length) this.#blocks.push(last)
      else {
        const exact = Buffer.allocUnsafeSlow(this.#filled)
        last.copy(exact, 0, 0, this.#filled)
        this.#blocks.push(exact)
        freeAll([last])
      }
    }
    this.#current = null
    return this.#blocks
  }

  /** Gives every block back: the answer is not held. */
  drop(): void {
    if (this.#current !== null) freeAll([this.#current])
    this.#current = null
    freeAll(this.#blocks)
  }

  /** A new block: the declared length's next part, else as large as what came so far (at least the chunk's rest), within BLOCK_BYTES. */
  #next(rest: number): void {
    if (this.#current !== null) this.#blocks.push(this.#current)
    const size = this.declared !== null && this.length < this.declared ? this.declared - this.length : Math.max(rest, this.length)
    this.#current = Buffer.allocUnsafeSlow(Math.min(BLOCK_BYTES, size))
    this.#filled = 0
  }
}
