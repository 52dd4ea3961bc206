import { Readable, Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it, vi } from 'vitest'
import { CONTENDED_STALL_MS, PlatformAnswers, type AnswerReader } from '../../src/platform/client/answer-buffer.js'
import { MAX_ROOM_RETRY_AFTER_S } from '../../src/platform/client/answer-budget.js'
import { BLOCK_BYTES, PIECE_BYTES } from '../../src/platform/client/answer-blocks.js'
import { waitFor } from '../helpers/wait.js'

const KiB = 1024
const MiB = 1024 * KiB

function reader(team = 'growth'): AnswerReader & { warnings: unknown[]; lines: string[] } {
  const warnings: unknown[] = []
  const lines: string[] = []
  const warn = (obj: unknown, line?: string) => {
    warnings.push(obj)
    lines.push(line ?? "")
  }
  return { credential: 'default', team, path: '/api/v1/campaign/get', log: { warn }, warnings, lines }
}

function answers(opts: { totalBytes: number; readIdleMs?: number }) {
  const slow: string[] = []
  const a = new PlatformAnswers({ readIdleMs: 1000, ...opts, onSlowReader: (credential) => void slow.push(credential) })
  return Object.assign(a, { slow })
}

/** A platform body of `count` chunks of `size` bytes (chunk i filled with i). */
function body(count: number, size: number, opts: { everyMs?: number; failAt?: number } = {}): Readable {
  return Readable.from(
    (async function* () {
      for (let i = 0; i < count; i++) {
        if (opts.everyMs) await sleep(opts.everyMs)
        if (i === opts.failAt) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })
        yield Buffer.alloc(size, i % 256)
      }
    })(),
    { objectMode: false },
  )
}

function expected(count: number, size: number): Buffer {
  return Buffer.concat(Array.from({ length: count }, (_, i) => Buffer.alloc(size, i % 256)))
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** A consumer that takes one write and then never another: a caller that stopped reading. */
function stalled(): Writable {
  return new Writable({ highWaterMark: 1, write: () => undefined })
}

describe('PlatformAnswers.receive', () => {
  it('receives an answer whole before its caller reads a byte, and frees its bytes block by block as the caller takes them', async () => {
    const a = answers({ totalBytes: 4 * MiB })
    const source = body(48, 64 * KiB)
    const answer = await a.receive(source, String(3 * MiB), reader())
    // The platform body has ended: the platform's work is done whatever the caller's pace.
    expect(source.readableEnded).toBe(true)
    expect(answer.length).toBe(3 * MiB)
    expect(a.budget.used).toBe(3 * MiB)
    const stream = answer.stream()
    const read: Buffer[] = []
    // A block's bytes count until its last piece is taken: the first block's, then they are freed.
    for (let got = 0; got < BLOCK_BYTES + PIECE_BYTES; ) {
      const piece = stream.read() as Buffer | null
      if (piece === null) {
        await new Promise((resolve) => stream.once('readable', resolve))
        continue
      }
      read.push(piece)
      got += piece.length
    }
    expect(a.budget.used).toBeLessThanOrEqual(3 * MiB - BLOCK_BYTES)
    expect(a.budget.used).toBeGreaterThan(0)
    expect(Buffer.concat([...read, await readAll(stream)]).equals(expected(48, 64 * KiB))).toBe(true)
    expect(a.budget.used).toBe(0)
  })

  it('gives the memory of an answer dropped before its caller took it back at once, not at the next collection', async () => {
    const a = answers({ totalBytes: 64 * MiB })
    const cut = await a.receive(body(128, 64 * KiB), String(8 * MiB), reader())
    const kept = await a.receive(body(128, 64 * KiB), undefined, reader())
    const stream = cut.stream()
    const before = process.memoryUsage().arrayBuffers
    // A piece taken is a copy of its own: the socket's writes hold no block.
    const piece = stream.read() as Buffer
    expect(piece.buffer.byteLength).toBe(piece.length)
    stream.destroy()
    kept.release()
    // Every block of both answers, 16 MiB, the first one begun included; the piece taken is the caller's.
    expect(before - process.memoryUsage().arrayBuffers).toBeGreaterThanOrEqual(16 * MiB - PIECE_BYTES)
    await waitFor('the answer dropped', () => a.budget.used === 0)
  })

  it('reserves an answer without a declared length as it arrives, and frees it when dropped', async () => {
    const a = answers({ totalBytes: 1024 * KiB })
    const answer = await a.receive(body(3, 10 * KiB), undefined, reader())
    expect(answer.length).toBe(30 * KiB)
    expect(a.budget.used).toBe(30 * KiB)
    const stream = answer.stream()
    stream.destroy()
    await waitFor('the answer dropped', () => a.budget.used === 0)
  })

  it('gives an answer the gateway reads itself in a buffer of its own, counted until it is released', async () => {
    const a = answers({ totalBytes: 1024 * KiB })
    const answer = await a.receive(body(3, 10 * KiB), undefined, reader())
    expect(answer.bytes().equals(expected(3, 10 * KiB))).toBe(true)
    expect(a.budget.used).toBe(30 * KiB)
    answer.release()
    answer.release()
    expect(a.budget.used).toBe(0)
  })

  it('joins an answer of several blocks once for the gateway: what peek() read is what bytes() hands over', async () => {
    const a = answers({ totalBytes: 4 * MiB })
    const answer = await a.receive(body(3, MiB), undefined, reader())
    const peeked = answer.peek()
    expect(peeked.equals(expected(3, MiB))).toBe(true)
    expect(answer.bytes() === peeked).toBe(true)
    answer.release()
    expect(a.budget.used).toBe(0)
  })

  it('refuses an answer the budget has no room for, 503 GW_ANSWER_BUDGET with retry-after (transient: a report job tries again), dropping its platform body and holding nothing of it', async () => {
    const a = answers({ totalBytes: 50 * KiB })
    const first = await a.receive(body(4, 10 * KiB), String(40 * KiB), reader())
    const source = body(4, 10 * KiB)
    await expect(a.receive(source, String(40 * KiB), reader('other'))).rejects.toMatchObject({ code: 'GW_ANSWER_BUDGET', statusCode: 503, retryAfterSec: MAX_ROOM_RETRY_AFTER_S, transient: true })
    expect(source.destroyed).toBe(true)
    // Undeclared, it is refused once it outgrows the room left.
    await expect(a.receive(body(4, 10 * KiB), undefined, reader('other'))).rejects.toMatchObject({ code: 'GW_ANSWER_BUDGET' })
    expect(a.budget.used).toBe(40 * KiB)
    await readAll(first.stream())
    expect(a.budget.used).toBe(0)
    expect((await a.receive(body(4, 10 * KiB), String(40 * KiB), reader())).length).toBe(40 * KiB)
  })

  it('refuses an answer larger than the whole budget as the platform\'s failure, 502 GW_UPSTREAM', async () => {
    const a = answers({ totalBytes: 30 * KiB })
    await expect(a.receive(body(4, 10 * KiB), String(40 * KiB), reader())).rejects.toMatchObject({ code: 'GW_UPSTREAM', statusCode: 502 })
    await expect(a.receive(body(4, 10 * KiB), undefined, reader())).rejects.toMatchObject({ code: 'GW_UPSTREAM' })
    expect(a.budget.used).toBe(0)
  })

  it('gives back what a body shorter than declared did not use', async () => {
    const a = answers({ totalBytes: 1024 * KiB })
    const answer = await a.receive(body(2, 10 * KiB), String(40 * KiB), reader())
    expect(answer.length).toBe(20 * KiB)
    expect(a.budget.used).toBe(20 * KiB)
  })

  it('is the call\'s GW_UPSTREAM error when the body fails while it is received, and holds nothing', async () => {
    const a = answers({ totalBytes: 1024 * KiB })
    await expect(a.receive(body(4, 10 * KiB, { failAt: 2 }), String(40 * KiB), reader())).rejects.toMatchObject({ code: 'GW_UPSTREAM' })
    expect(a.budget.used).toBe(0)
  })
})

describe('room for an answer', () => {
  it('is made by cutting off another team\'s caller that took nothing for CONTENDED_STALL_MS, never the same team\'s', async () => {
    const a = answers({ totalBytes: 1024 * KiB, readIdleMs: 60_000 })
    const who = reader()
    const held = (await a.receive(body(10, 64 * KiB), undefined, who)).stream()
    held.pipe(stalled())
    await sleep(CONTENDED_STALL_MS + 50)
    await expect(a.receive(body(10, 64 * KiB), undefined, reader())).rejects.toMatchObject({ code: 'GW_ANSWER_BUDGET' })
    expect(held.destroyed).toBe(false)
    const answer = await a.receive(body(10, 64 * KiB), undefined, reader('other'))
    expect(answer.length).toBe(640 * KiB)
    expect(held.destroyed).toBe(true)
    expect(a.slow).toEqual(['default'])
    expect(who.lines).toEqual(['caller stopped reading while another team waited for its room: answer cut off'])
  })

  it('is made by cutting off another team\'s caller too slow to read what it holds within readIdleTimeout, never the same team\'s', async () => {
    // The answers' clock is the test's: the caller's pace is what the test reads at the times
    // it says, however late this worker's timers run.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    try {
      const a = answers({ totalBytes: 2048 * KiB, readIdleMs: 500 })
      const slowTeam = reader('slow')
      const held = (await a.receive(body(28, 64 * KiB), undefined, slowTeam)).stream()
      // 32 KiB every 100 ms (320 KiB/s): what it holds would take it over 3 s, and it never
      // stalls for readIdleMs; its pace is judged once it has read for CONTENDED_STALL_MS.
      for (let ms = 0; ms <= CONTENDED_STALL_MS; ms += 100) {
        held.read(32 * KiB)
        vi.advanceTimersByTime(100)
      }
      // Its own team's next answer does not cut it off: refused.
      await expect(a.receive(body(15, 64 * KiB), undefined, reader('slow'))).rejects.toMatchObject({ code: 'GW_ANSWER_BUDGET' })
      expect(held.destroyed).toBe(false)
      const answer = await a.receive(body(15, 64 * KiB), undefined, reader('other'))
      expect(answer.length).toBe(960 * KiB)
      expect(held.destroyed).toBe(true)
      expect(slowTeam.lines).toEqual(['caller read too slowly while another team waited for its room: answer cut off'])
    } finally {
      vi.useRealTimers()
    }
  })
})

describe('the read-idle watchdog', () => {
  it('cuts off a caller that stops reading, frees what it held, and says so once', async () => {
    const a = answers({ totalBytes: 1024 * KiB, readIdleMs: 100 })
    const who = reader()
    const answer = (await a.receive(body(10, 64 * KiB), String(640 * KiB), who)).stream()
    expect(a.budget.used).toBe(640 * KiB)
    answer.pipe(stalled())
    await expect(finished(answer)).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' })
    expect(a.slow).toEqual(['default'])
    expect(who.warnings).toEqual([{ credential: 'default', team: 'growth', path: '/api/v1/campaign/get', readIdleMs: 100 }])
    expect(a.budget.used).toBe(0)
  })

  it('does not cut off a caller that reads slowly but steadily', async () => {
    const a = answers({ totalBytes: 4096 * KiB, readIdleMs: 150 })
    const answer = (await a.receive(body(40, 64 * KiB), undefined, reader())).stream()
    const got: Buffer[] = []
    // A chunk every 30 ms: the answer backs up between reads, never for readIdleMs.
    const steady = new Writable({
      highWaterMark: 1,
      write: (chunk: Buffer, _enc, done) => {
        got.push(chunk)
        setTimeout(done, 30)
      },
    })
    answer.pipe(steady)
    await finished(steady)
    expect(Buffer.concat(got).equals(expected(40, 64 * KiB))).toBe(true)
    expect(a.slow).toEqual([])
    expect(a.budget.used).toBe(0)
  })

  it('does not cut off a caller whose take came while the gateway\'s loop was held past readIdleMs: it is judged after the loop has read what came', async () => {
    const a = answers({ totalBytes: 1024 * KiB, readIdleMs: 100 })
    const answer = (await a.receive(body(10, 64 * KiB), String(640 * KiB), reader())).stream() as Readable & { stalledSince: number | null }
    let taken = 0
    let held: Promise<void> | null = null
    // A caller that holds its first piece while the loop is held, then takes it: its socket's
    // word that it took one comes in the loop's next turn, after its timers. The hold is queued
    // as the piece comes, in the turn the answer's clock starts: nothing of the test's runs
    // between the clock's start and the hold, so the loop's own lateness cannot end the clock first.
    const caller = new Writable({
      highWaterMark: 1,
      write: (chunk: Buffer, _enc, done) => {
        taken += chunk.length
        if (held !== null) return done()
        held = new Promise<void>((resolve) => setImmediate(() => {
          expect(answer.stalledSince).not.toBeNull()
          setImmediate(done)
          const until = performance.now() + 150
          while (performance.now() < until);
          resolve()
        }))
      },
    })
    answer.pipe(caller)
    await waitFor('the caller\'s first piece held', () => held !== null)
    await held
    // The timers' turn, then the take's.
    for (let i = 0; i < 2; i++) await new Promise((resolve) => setImmediate(resolve))
    expect(a.slow).toEqual([])
    await waitFor('the caller to take more', () => taken > 64 * KiB)
    answer.destroy()
  })
})

describe('HeldAnswer.streamEdited', () => {
  it('sends the edited body, counted in the budget until its caller has taken it, and leaves small buffers of the process whole', async () => {
    const a = answers({ totalBytes: 4 * MiB })
    const held = await a.receive(body(3, 10 * KiB), undefined, reader())
    const neighbour = Buffer.from('a small buffer of the shared pool')
    const { body: sent, length, edited } = held.streamEdited((bytes) => Buffer.from(`{"length":${bytes.length}}`))
    expect([length, edited]).toEqual([16, true])
    expect(a.budget.used).toBe(16)
    expect((await readAll(sent)).toString()).toBe('{"length":30720}')
    expect(a.budget.used).toBe(0)
    // The edited body was a view of Node's pool: given back as a block of its own, the pool is not detached.
    expect(neighbour.toString()).toBe('a small buffer of the shared pool')
  })

  it('sends the bytes as they came when the edit makes none, one block or several', async () => {
    const a = answers({ totalBytes: 4 * MiB })
    for (const [count, size] of [[1, 2 * KiB], [3, BLOCK_BYTES]] as const) {
      const held = await a.receive(body(count, size), count === 1 ? String(size) : undefined, reader())
      const { body: sent, edited } = held.streamEdited(() => null)
      expect(edited).toBe(false)
      expect((await readAll(sent)).equals(expected(count, size))).toBe(true)
      expect(a.budget.used).toBe(0)
    }
  })

  it('fails a body the edit makes longer than the budget has room for, and gives its bytes back', async () => {
    const a = answers({ totalBytes: 64 * KiB })
    const held = await a.receive(body(1, 32 * KiB), String(32 * KiB), reader())
    expect(() => held.streamEdited(() => Buffer.alloc(128 * KiB))).toThrow(/does not fit/)
    expect(a.budget.used).toBe(0)
  })
})
