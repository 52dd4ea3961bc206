import { createServer, connect, type Server, type Socket } from 'node:net'
import { once } from 'node:events'
import { afterEach, describe, expect, it } from 'vitest'
import { AnswerRoom, ROOM_BYTES } from '../../src/perf/answer-room.js'

describe('AnswerRoom', () => {
  it('writes answers in one room while each write completes at once', () => {
    const room = new AnswerRoom()
    const first = room.take(4700)
    room.written({ writableLength: 0 })
    const second = room.take(300)
    expect(first.length).toBe(4700)
    expect(second.length).toBe(300)
    expect(second.buffer).toBe(first.buffer)
    expect(second.byteOffset).toBe(first.byteOffset)
  })

  it('leaves the room to a write still pending: the next answer is written elsewhere, the pending bytes untouched', () => {
    const room = new AnswerRoom()
    const pending = room.take(4700).fill(1)
    room.written({ writableLength: 4700 })
    room.take(4700).fill(2)
    expect(pending.every((b) => b === 1)).toBe(true)
  })

  it('gives an answer longer than a room a buffer of that length', () => {
    const room = new AnswerRoom()
    expect(room.take(ROOM_BYTES + 1).length).toBe(ROOM_BYTES + 1)
  })

  // What the room relies on, on real connections: a write the kernel took whole leaves
  // writableLength 0, and writing over its bytes afterwards changes nothing the peer reads;
  // a peer that does not read leaves writes pending (writableLength > 0).
  describe('guard: Node\'s sockets', () => {
    let server: Server | undefined
    const sockets: Socket[] = []
    afterEach(async () => {
      for (const s of sockets.splice(0)) s.destroy()
      if (server) await new Promise((resolve) => server!.close(resolve))
      server = undefined
    })

    const pair = async (): Promise<[Socket, Socket]> => {
      server = createServer()
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      const { port } = server.address() as { port: number }
      const accepted = once(server, 'connection')
      const client = connect(port, '127.0.0.1')
      const [near] = (await accepted) as [Socket]
      sockets.push(near, client)
      return [near, client]
    }

    it('a write taken whole leaves nothing pending, and its bytes may be written over at once', async () => {
      const [near, far] = await pair()
      const room = new AnswerRoom()
      const sent: Buffer[] = []
      const received: Buffer[] = []
      far.on('data', (chunk: Buffer) => received.push(chunk))
      for (let i = 0; i < 10; i++) {
        const out = room.take(4700).fill(i)
        sent.push(Buffer.from(out))
        near.write(out)
        expect(near.writableLength).toBe(0)
        room.written(near)
        out.fill(255)
      }
      const total = 10 * 4700
      while (received.reduce((n, c) => n + c.length, 0) < total) await once(far, 'data')
      expect(Buffer.concat(received).equals(Buffer.concat(sent))).toBe(true)
    })

    it('a peer that does not read leaves a write pending, and the room is left to it', async () => {
      const [near, far] = await pair()
      far.pause()
      const room = new AnswerRoom()
      let pendingAt = -1
      const sent: Buffer[] = []
      for (let i = 0; i < 20_000 && pendingAt === -1; i++) {
        const out = room.take(4700).fill(i % 256)
        sent.push(Buffer.from(out))
        near.write(out)
        if (near.writableLength !== 0) pendingAt = i
        room.written(near)
      }
      expect(pendingAt).toBeGreaterThan(-1)
      room.take(4700).fill(255)
      const received: Buffer[] = []
      far.on('data', (chunk: Buffer) => received.push(chunk))
      far.resume()
      const total = sent.length * 4700
      while (received.reduce((n, c) => n + c.length, 0) < total) await once(far, 'data')
      expect(Buffer.concat(received).equals(Buffer.concat(sent))).toBe(true)
    })
  })
})
