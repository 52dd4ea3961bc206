import { EventEmitter } from 'node:events'
import type { Server, ServerResponse } from 'node:http'
import { describe, expect, it } from 'vitest'
import type { ClosedAtBound } from '../../src/http/connection-bound.js'
import { closeSilentConnections } from '../../src/http/hooks/silent-connections.js'
import { carries } from '../../src/http/connection-teams.js'

// The connection bound's cost when the listener is full of answers under way: a connection
// past the bound looks at every open connection for one with no answer under way; a look
// that finds none is not repeated by each connection that comes right after it (each would
// pay a pass over every connection to be closed anyway), only once the look's own cost
// has been left to the rest of the process many times over. A listener full of one team's answers
// under way cuts that team's longest silent instead (http/connection-teams.ts); the answers
// of the first test are four teams', none past its part (each answer marked with its team). A fake server and fake
// sockets on a fake clock: each read of a socket's byte count costs the clock 10 µs.

class FakeSocket extends EventEmitter {
  reads = 0
  destroyed = false
  _httpMessage: object | null
  readonly writableLength = 0
  readonly bytesWritten = 0
  constructor(
    private readonly clock: { t: number },
    busy: boolean,
  ) {
    super()
    this._httpMessage = busy ? {} : null
  }
  get bytesRead(): number {
    this.reads++
    this.clock.t += 0.01
    return 0
  }
  destroy(): void {
    this.destroyed = true
  }
}

describe('the connection bound at a listener full of answers under way', () => {
  it('closes the connections that come right after a look found none idle without looking again, and looks again later', () => {
    const clock = { t: 0 }
    const server = new EventEmitter()
    const closed: Record<ClosedAtBound, number> = { idle: 0, busy: 0, new: 0 }
    closeSilentConnections(server as unknown as Server, 60_000, { max: 4, closed: (which, count) => (closed[which] += count) }, () => clock.t)
    // Four teams' answers, one each: none past its part of the bound (one of four, with the newcomer's team).
    const busy = Array.from({ length: 4 }, () => new FakeSocket(clock, true))
    busy.forEach((socket, i) => {
      carries(socket._httpMessage as ServerResponse, `team-${i}`)
      server.emit('connection', socket)
    })

    const first = new FakeSocket(clock, false)
    server.emit('connection', first)
    expect(first.destroyed).toBe(true)
    const readsAfterFirst = busy.map((s) => s.reads)
    const next = Array.from({ length: 9 }, () => new FakeSocket(clock, false))
    for (const socket of next) server.emit('connection', socket)
    expect(next.every((s) => s.destroyed)).toBe(true)
    expect(closed).toEqual({ idle: 0, busy: 0, new: 10 })
    expect(busy.map((s) => s.reads)).toEqual(readsAfterFirst)

    // One answer done, and long after: a connection past the bound looks, and closes the idle one to make room.
    busy[0]!._httpMessage = null
    clock.t += 1000
    const later = new FakeSocket(clock, false)
    server.emit('connection', later)
    expect(later.destroyed).toBe(false)
    expect(busy[0]!.destroyed).toBe(true)
    expect(closed).toEqual({ idle: 1, busy: 0, new: 10 })
  })

  it('with every connection one team\'s answer under way, cuts the team\'s longest silent for the new one', () => {
    const clock = { t: 0 }
    const server = new EventEmitter()
    const closed: Record<ClosedAtBound, number> = { idle: 0, busy: 0, new: 0 }
    closeSilentConnections(server as unknown as Server, 60_000, { max: 4, closed: (which, count) => (closed[which] += count) }, () => clock.t)
    const busy = Array.from({ length: 4 }, () => new FakeSocket(clock, true))
    for (const socket of busy) {
      carries(socket._httpMessage as ServerResponse, 'flood')
      server.emit('connection', socket)
      clock.t += 1
    }
    const other = new FakeSocket(clock, false)
    server.emit('connection', other)
    expect(other.destroyed).toBe(false)
    expect(busy.map((s) => s.destroyed)).toEqual([true, false, false, false])
    expect(closed).toEqual({ idle: 0, busy: 1, new: 0 })
  })

  it('after a look that cut less than a room of a team\'s answers, closes the connections that come right after it without looking again', () => {
    const clock = { t: 0 }
    const server = new EventEmitter()
    const closed: Record<ClosedAtBound, number> = { idle: 0, busy: 0, new: 0 }
    // A bound of 16 (a room of 2): team a holds 3, thirteen teams 1 each. a's part is 2 (16 over 15): one of a's is cut.
    closeSilentConnections(server as unknown as Server, 60_000, { max: 16, closed: (which, count) => (closed[which] += count) }, () => clock.t)
    const busy = Array.from({ length: 16 }, (_, i) => {
      const socket = new FakeSocket(clock, true)
      carries(socket._httpMessage as ServerResponse, i < 3 ? 'a' : `team-${i}`)
      server.emit('connection', socket)
      return socket
    })
    const first = new FakeSocket(clock, false)
    server.emit('connection', first)
    expect(first.destroyed).toBe(false)
    expect(closed).toEqual({ idle: 0, busy: 1, new: 0 })
    const reads = busy.map((s) => s.reads)
    const next = new FakeSocket(clock, false)
    server.emit('connection', next)
    expect(next.destroyed).toBe(true)
    expect(closed).toEqual({ idle: 0, busy: 1, new: 1 })
    expect(busy.map((s) => s.reads)).toEqual(reads)
  })
})
