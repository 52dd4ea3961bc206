import { Readable, Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { ByteBudget, PlatformAnswers, type AnswerReader } from '../../src/platform/client/answer-buffer.js'
import { waitFor } from '../helpers/wait.js'

const KiB = 1024

function reader(): AnswerReader & { warnings: unknown[] } {
  const warnings: unknown[] = []
  return { credential: 'default', team: 'growth', path: '/api/v1/campaign/get', log: { warn: (obj: unknown) => void warnings.push(obj) }, warnings }
}

function answers(opts: { callBytes: number; totalBytes: number; readIdleMs?: number }) {
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

describe('ByteBudget', () => {
  it('reserves what fits, refuses what does not without taking any of it, and frees', () => {
    const budget = new ByteBudget(100)
    expect(budget.reserve(60)).toBe(true)
    expect(budget.reserve(41)).toBe(false)
    expect(budget.used).toBe(60)
    expect(budget.reserve(40)).toBe(true)
    expect(budget.used).toBe(100)
    budget.free(60)
    expect(budget.used).toBe(40)
    expect(budget.reserve(0)).toBe(true)
  })
})

describe('PlatformAnswers.receive', () => {
  it('holds an answer within bufferBytes whole, its bytes counted until it has been read', async () => {
    const a = answers({ callBytes: 64 * KiB, totalBytes: 1024 * KiB })
    const source = body(4, 10 * KiB)
    const answer = await a.receive(source, String(40 * KiB), reader())
    // The platform body has ended: its connection is free before the caller reads a byte.
    expect(source.readableEnded).toBe(true)
    expect(answer.length).toBe(40 * KiB)
    expect(a.budget.used).toBe(40 * KiB)
    expect((await readAll(answer.body)).equals(expected(4, 10 * KiB))).toBe(true)
    expect(a.budget.used).toBe(0)
  })

  it('reserves an answer without a declared length as it arrives', async () => {
    const a = answers({ callBytes: 64 * KiB, totalBytes: 1024 * KiB })
    const answer = await a.receive(body(3, 10 * KiB), undefined, reader())
    expect(answer.length).toBe(30 * KiB)
    expect(a.budget.used).toBe(30 * KiB)
    answer.body.destroy()
    await waitFor('the answer dropped', () => a.budget.used === 0)
  })

  it('streams an answer declared larger than bufferBytes without holding any of it', async () => {
    const a = answers({ callBytes: 16 * KiB, totalBytes: 1024 * KiB })
    const source = body(4, 10 * KiB)
    const answer = await a.receive(source, String(40 * KiB), reader())
    expect(answer.length).toBeNull()
    expect(a.budget.used).toBe(0)
    expect(source.readableEnded).toBe(false)
    expect((await readAll(answer.body)).equals(expected(4, 10 * KiB))).toBe(true)
  })

  it('streams an answer the total budget cannot take, and holds the next one once memory is free again', async () => {
    const a = answers({ callBytes: 64 * KiB, totalBytes: 50 * KiB })
    const first = await a.receive(body(4, 10 * KiB), String(40 * KiB), reader())
    const second = await a.receive(body(4, 10 * KiB), String(40 * KiB), reader())
    expect([first.length, second.length]).toEqual([40 * KiB, null])
    expect(a.budget.used).toBe(40 * KiB)
    await readAll(first.body)
    expect((await readAll(second.body)).equals(expected(4, 10 * KiB))).toBe(true)
    expect(a.budget.used).toBe(0)
    expect((await a.receive(body(4, 10 * KiB), String(40 * KiB), reader())).length).toBe(40 * KiB)
  })

  it('streams the rest of an undeclared answer that outgrows bufferBytes, its head counted until the answer is done', async () => {
    const a = answers({ callBytes: 25 * KiB, totalBytes: 1024 * KiB })
    const answer = await a.receive(body(6, 10 * KiB), undefined, reader())
    expect(answer.length).toBeNull()
    // The two chunks within bufferBytes; the third went over it and was not counted.
    expect(a.budget.used).toBe(20 * KiB)
    expect((await readAll(answer.body)).equals(expected(6, 10 * KiB))).toBe(true)
    expect(a.budget.used).toBe(0)
  })

  it('gives back what a body shorter than declared did not use', async () => {
    const a = answers({ callBytes: 64 * KiB, totalBytes: 1024 * KiB })
    const answer = await a.receive(body(2, 10 * KiB), String(40 * KiB), reader())
    expect(answer.length).toBe(20 * KiB)
    expect(a.budget.used).toBe(20 * KiB)
  })

  it('is the call\'s GW_UPSTREAM error when the body fails while it is received, and holds nothing', async () => {
    const a = answers({ callBytes: 64 * KiB, totalBytes: 1024 * KiB })
    await expect(a.receive(body(4, 10 * KiB, { failAt: 2 }), String(40 * KiB), reader())).rejects.toMatchObject({ code: 'GW_UPSTREAM' })
    expect(a.budget.used).toBe(0)
  })
})

describe('the read-idle watchdog', () => {
  it('cuts off a caller that stops reading a streamed answer, ends the platform body, and says so once', async () => {
    const a = answers({ callBytes: 16 * KiB, totalBytes: 1024 * KiB, readIdleMs: 100 })
    const source = body(1000, 64 * KiB)
    const who = reader()
    const answer = await a.receive(source, undefined, who)
    answer.body.pipe(stalled())
    await expect(finished(answer.body)).rejects.toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' })
    await waitFor('the platform body ended', () => source.destroyed)
    expect(a.slow).toEqual(['default'])
    expect(who.warnings).toEqual([{ credential: 'default', team: 'growth', path: '/api/v1/campaign/get', readIdleMs: 100 }])
    expect(a.budget.used).toBe(0)
  })

  it('cuts off a caller that stops reading a held answer, and frees its memory', async () => {
    const a = answers({ callBytes: 1024 * KiB, totalBytes: 1024 * KiB, readIdleMs: 100 })
    const answer = await a.receive(body(10, 64 * KiB), String(640 * KiB), reader())
    expect(a.budget.used).toBe(640 * KiB)
    answer.body.pipe(stalled())
    await waitFor('the answer cut off', () => answer.body.destroyed)
    expect(a.slow).toEqual(['default'])
    expect(a.budget.used).toBe(0)
  })

  it('ends the platform body at once when the caller goes away while a chunk is awaited', async () => {
    const a = answers({ callBytes: 1, totalBytes: 1024 * KiB })
    // One chunk, then a platform that sends nothing more within the test.
    const source = Readable.from(
      (async function* () {
        yield Buffer.alloc(10 * KiB)
        await sleep(5000)
        yield Buffer.alloc(10 * KiB)
      })(),
      { objectMode: false },
    )
    const answer = await a.receive(source, undefined, reader())
    answer.body.resume()
    await sleep(20)
    answer.body.destroy()
    await waitFor('the platform body ended', () => source.destroyed, 100)
    expect(a.slow).toEqual([])
  })

  it('does not count the platform\'s slowness against a caller that reads at once', async () => {
    const a = answers({ callBytes: 1, totalBytes: 1024 * KiB, readIdleMs: 50 })
    // Chunks 120 ms apart: longer than readIdleMs each time.
    const answer = await a.receive(body(4, 10 * KiB, { everyMs: 120 }), undefined, reader())
    expect((await readAll(answer.body)).equals(expected(4, 10 * KiB))).toBe(true)
    expect(a.slow).toEqual([])
  })

  it('does not cut off a caller that reads slowly but steadily', async () => {
    const a = answers({ callBytes: 1, totalBytes: 1024 * KiB, readIdleMs: 150 })
    const answer = await a.receive(body(40, 64 * KiB), undefined, reader())
    const got: Buffer[] = []
    // A chunk every 30 ms: the answer backs up between reads, never for readIdleMs.
    const steady = new Writable({
      highWaterMark: 1,
      write: (chunk: Buffer, _enc, done) => {
        got.push(chunk)
        setTimeout(done, 30)
      },
    })
    answer.body.pipe(steady)
    await finished(steady)
    expect(Buffer.concat(got).equals(expected(40, 64 * KiB))).toBe(true)
    expect(a.slow).toEqual([])
  })
})
