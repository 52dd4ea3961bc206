import type { Socket } from 'node:net'

// The room a hit's answer is written in before it goes to its connection as one buffer
// (http/socket-entrance.ts): one buffer, used again for each answer whose write completed
// at once. Each answer used to take Buffer.allocUnsafe's pool, whose 64 KiB slabs (Node
// 24's Buffer.poolSize) are memory outside V8's heap, freed only by a collection: at 40,000
// hits a second that was 200 MB a second of it, and V8 answers such a rate of external
// memory with a full collection every 0.3 s (measured: `--trace-gc`, docs/benchmarks.md,
// "Where an L1 hit's time goes"), its marking on the server's own core.
//
// What it relies on (Node 24, lib/net.js and stream_base): a socket's write that the
// kernel took whole before write() returned leaves nothing pending (`writableLength` 0)
// and keeps no reference to the bytes, so they may be written over; a write taken in
// part, or queued behind another, keeps the buffer until it is written, and the room is
// then left to it and a new one made for the next answer.

/** The room's size: an answer of the largest body written as one buffer (16 KiB) and its head. */
export const ROOM_BYTES = 32 * 1024

/** One connection listener's room for its answers, used again while writes complete at once. */
export class AnswerRoom {
  #room: Buffer | null = null

  /** A buffer of `length` bytes to write one answer in: a view of the room, or a buffer of its own when longer than a room. */
  take(length: number): Buffer {
    let room = this.#room
    if (room === null || room.length < length) {
      room = Buffer.allocUnsafeSlow(Math.max(length, ROOM_BYTES))
      this.#room = room
    }
    return room.subarray(0, length)
  }

  /** Called once the answer taken last was written on `socket`: a write still pending keeps the room, and the next answer gets another. */
  written(socket: Pick<Socket, 'writableLength'>): void {
    if (socket.writableLength !== 0) this.#room = null
  }
}
