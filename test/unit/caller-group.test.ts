import { EventEmitter, getEventListeners, once } from 'node:events'
import { createServer, request, type ServerResponse } from 'node:http'
import { describe, expect, it } from 'vitest'
import { CallerGroup, CallersGoneError, hangUpOf, ownRefusal, seatFollowing } from '../../src/platform/client/caller-group.js'
import { CredentialSeats } from '../../src/platform/governor/seats.js'
import { PRIORITIES, type Priority } from '../../src/platform/governor/fair-queue.js'
import type { Seat } from '../../src/platform/governor/seat.js'
import { WorkEstimates } from '../../src/platform/governor/work-estimates.js'
import { fakeClock } from '../helpers/clock.js'

// The callers of one shared platform call (a report fill): who it waits for, and in whose queue.

const settle = () => new Promise((resolve) => setImmediate(resolve))

describe('CallerGroup', () => {
  it('aborts once every caller that joined has hung up, unless a background refresh joined', () => {
    const group = new CallerGroup()
    const [a, b] = [new AbortController(), new AbortController()]
    group.join(a.signal, 'a')
    group.join(b.signal, 'b')
    a.abort()
    expect(group.signal.aborted).toBe(false)
    b.abort()
    expect(group.signal.reason).toBeInstanceOf(CallersGoneError)

    const pinned = new CallerGroup()
    const c = new AbortController()
    pinned.join(c.signal, 'c')
    pinned.join(undefined, 'd')
    c.abort()
    expect(pinned.signal.aborted).toBe(false)
  })

  it('follows a response\'s hang-up without a signal of its own: a close before the answer is complete leaves, one after does not', () => {
    const response = () => Object.assign(new EventEmitter(), { writableFinished: false, destroyed: false })
    const [a, b] = [response(), response()]
    const group = new CallerGroup()
    group.join(hangUpOf(a), 'a')
    group.join(hangUpOf(b), 'b')
    a.emit('close')
    expect([group.signal.aborted, [...group.teams.keys()]]).toEqual([false, ['b']])
    b.writableFinished = true
    b.emit('close')
    expect(group.signal.aborted).toBe(false)

    const c = response()
    const alone = new CallerGroup()
    alone.join(hangUpOf(c), 'c')
    c.emit('close')
    expect(alone.signal.reason).toBeInstanceOf(CallersGoneError)
  })

  it('leaves at once for a caller whose connection closed before it joined (its response\'s close is heard no more)', async () => {
    const server = createServer()
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as { port: number }
    try {
      const answering = once(server, 'request') as Promise<[unknown, ServerResponse]>
      const asking = request({ host: '127.0.0.1', port, path: '/' })
      asking.on('error', () => undefined)
      asking.end()
      const [, res] = await answering
      asking.destroy()
      await once(res, 'close')
      const group = new CallerGroup()
      group.join(hangUpOf(res), 'a')
      expect(group.signal.reason).toBeInstanceOf(CallersGoneError)
    } finally {
      server.close()
    }
  })

  it('aborts when its only caller had hung up before joining', () => {
    const gone = new AbortController()
    gone.abort()
    const group = new CallerGroup()
    group.join(gone.signal, 'a')
    expect(group.signal.aborted).toBe(true)
  })

  it('names every team with a caller still waiting, and says when they change', () => {
    const group = new CallerGroup()
    const [a1, b, a2] = [new AbortController(), new AbortController(), new AbortController()]
    const changes: string[][] = []
    group.join(a1.signal, 'a')
    group.onChange(() => changes.push([...group.teams.keys()]))
    group.join(b.signal, 'b')
    group.join(a2.signal, 'a')
    expect([...group.teams]).toEqual([['a', 'caller'], ['b', 'caller']])
    a2.abort()
    expect(changes).toEqual([['a', 'b']])
    a1.abort()
    expect([...group.teams.keys()]).toEqual(['b'])
    expect(changes).toEqual([['a', 'b'], ['b']])
  })

  it('lets callers that may no longer be answered leave when asked (admitted), as a hang-up does, and refuses the call once none waits; a background asker keeps it', () => {
    const group = new CallerGroup()
    const live = { a: true, b: true }
    const [a, b] = [new AbortController(), new AbortController()]
    group.join(a.signal, 'a', 'caller', () => live.a)
    group.join(b.signal, 'b', 'caller', () => live.b)
    live.a = false
    group.admitted()
    expect([group.signal.aborted, [...group.teams.keys()]]).toEqual([false, ['b']])
    // The refused caller's later hang-up leaves nothing more.
    a.abort()
    expect(group.signal.aborted).toBe(false)
    live.b = false
    expect(() => group.admitted()).toThrow(CallersGoneError)
    expect(group.signal.reason).toBeInstanceOf(CallersGoneError)

    const pinned = new CallerGroup()
    pinned.join(undefined, 'r', 'ahead', () => false)
    pinned.join(new AbortController().signal, 'c', 'caller', () => false)
    pinned.admitted()
    expect([pinned.signal.aborted, [...pinned.teams]]).toEqual([false, [['r', 'ahead']]])
  })

  it('is charged to the earliest asker of the team whose seat it is sent on, else to its first asker while that one waits', () => {
    const group = new CallerGroup<string>()
    const [a, b1, c, b2] = [new AbortController(), new AbortController(), new AbortController(), new AbortController()]
    group.join(a.signal, 'a', 'warm', undefined, 'tally a')
    group.join(b1.signal, 'b', 'caller', undefined, 'tally b1')
    group.join(c.signal, 'c', 'caller', undefined, 'tally c')
    group.join(b2.signal, 'b', 'caller', undefined, 'tally b2')
    expect([group.chargedTo('c'), group.chargedTo('b'), group.chargedTo('gone'), group.chargedTo()]).toEqual(['tally c', 'tally b1', 'tally a', 'tally a'])
    a.abort()
    expect([group.chargedTo('a'), group.chargedTo()]).toEqual(['tally b1', 'tally b1'])
    b1.abort()
    expect([group.chargedTo('b'), group.chargedTo('a')]).toEqual(['tally b2', 'tally b2'])
  })

  it('names each team at the priority of its most pressing asker: a caller who joins a refresh makes it a caller\'s call', () => {
    const group = new CallerGroup()
    group.join(undefined, 'a', 'ahead')
    expect([...group.teams]).toEqual([['a', 'ahead']])
    group.join(new AbortController().signal, 'b')
    expect([...group.teams]).toEqual([['a', 'ahead'], ['b', 'caller']])
    group.join(new AbortController().signal, 'a', 'job')
    expect(group.teams.get('a')).toBe('job')
  })

  it('names each team\'s most pressing asker after every join and hang-up, in any order of them', () => {
    // A seeded walk: 2,000 steps of joins (every priority, three teams) and hang-ups of any caller still waiting.
    let seed = 54
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
    const group = new CallerGroup()
    group.join(undefined, 'pinned', 'warm')
    const waiting: { team: string; priority: Priority; hangUp: AbortController }[] = []
    let changes = 0
    group.onChange(() => (changes += 1))
    const expected = () => {
      const teams = new Map<string, Priority>([['pinned', 'warm']])
      for (const { team, priority } of waiting) {
        const held = teams.get(team)
        if (held === undefined || PRIORITIES.indexOf(priority) < PRIORITIES.indexOf(held)) teams.set(team, priority)
      }
      return teams
    }
    let expectedChanges = 0
    for (let step = 0; step < 2000; step += 1) {
      const before = expected()
      if (waiting.length > 0 && random(3) === 0) {
        const [gone] = waiting.splice(random(waiting.length), 1)
        gone!.hangUp.abort()
      } else {
        const caller = { team: `t${random(3)}`, priority: PRIORITIES[random(PRIORITIES.length)]!, hangUp: new AbortController() }
        waiting.push(caller)
        group.join(caller.hangUp.signal, caller.team, caller.priority)
      }
      const now = expected()
      expectedChanges += [...new Set([...before.keys(), ...now.keys()])].filter((team) => before.get(team) !== now.get(team)).length
      expect(new Map(group.teams)).toEqual(now)
    }
    expect(changes).toBe(expectedChanges)
  })
})

/** Seats of 2 on a fake clock, each team held to one call in flight. */
function seats(clock = fakeClock()) {
  return new CredentialSeats({ credential: 'default', maxConcurrent: 2, limit: 2, queueLimit: 10, queueTimeoutMs: 10_000, maxPauseMs: 60_000, work: new WorkEstimates(), clock, limitsOf: () => ({ maxConcurrent: 1 }) })
}

const ask = (s: CredentialSeats) => (team: string, signal: AbortSignal | undefined, priority: Priority) =>
  s.ask({ team, workClass: 'w', priority, deadline: Infinity, ...(signal ? { signal } : {}) })

describe('seatFollowing', () => {
  it('waits in the queue of every caller\'s team and takes the first seat given: a team whose seats are busy holds no other team\'s caller back', async () => {
    const s = seats()
    const heldByA = await ask(s)('a', undefined, 'caller')
    const group = new CallerGroup()
    group.join(new AbortController().signal, 'a')
    group.join(new AbortController().signal, 'b')
    // Team a holds its one seat; b's is free: the shared call is seated at once, on b's.
    const seat = await seatFollowing('a', group, [], ask(s))
    expect([s.running('b'), s.queued]).toEqual([1, 0])
    seat.end({ kind: 'answer', status: 200, latencyMs: 1 })
    heldByA.end({ kind: 'answer', status: 200, latencyMs: 1 })
    expect(s.inFlight).toBe(0)
  })

  it('gives up the place of a team whose callers left, takes one for a team that joins, and keeps the others\'', async () => {
    const s = seats()
    const [heldByA, heldByB] = [await ask(s)('a', undefined, 'caller'), await ask(s)('b', undefined, 'caller')]
    const group = new CallerGroup()
    const [a, c] = [new AbortController(), new AbortController()]
    group.join(a.signal, 'a')
    let seated: Seat | undefined
    void seatFollowing('a', group, [], ask(s)).then((seat) => (seated = seat))
    await settle()
    expect(s.queued).toBe(1)
    group.join(c.signal, 'c')
    await settle()
    expect(s.queued).toBe(2)
    a.abort()
    await settle()
    expect([s.queued, seated]).toEqual([1, undefined])
    // A seat frees: c's place takes it.
    heldByB.end({ kind: 'answer', status: 200, latencyMs: 1 })
    await settle()
    expect([s.running('c'), s.queued]).toEqual([1, 0])
    seated!.end({ kind: 'answer', status: 200, latencyMs: 1 })
    heldByA.end({ kind: 'answer', status: 200, latencyMs: 1 })
    expect(s.inFlight).toBe(0)
  })

  it('gives back, unsent, a second seat given in the same turn: free at once, its team charged nothing', async () => {
    const clock = fakeClock()
    const s = seats(clock)
    const [heldByA, heldByB] = [await ask(s)('a', undefined, 'caller'), await ask(s)('b', undefined, 'caller')]
    const group = new CallerGroup()
    group.join(new AbortController().signal, 'a')
    group.join(new AbortController().signal, 'b')
    const seat = seatFollowing('a', group, [], ask(s))
    await settle()
    expect(s.queued).toBe(2)
    heldByA.end({ kind: 'answer', status: 200, latencyMs: 1 })
    heldByB.end({ kind: 'answer', status: 200, latencyMs: 1 })
    const won = await seat
    await settle()
    // The seat given back was never used: free at once, not held to a call's expected end.
    expect([s.inFlight, s.queued]).toEqual([1, 0])
    won.end({ kind: 'answer', status: 200, latencyMs: 1 })
    expect(s.inFlight).toBe(0)
  })

  it('gives up its wait when the call\'s own signal aborts, and leaves no listener on it once seated', async () => {
    const s = seats()
    const heldByA = await ask(s)('a', undefined, 'caller')
    const group = new CallerGroup()
    group.join(new AbortController().signal, 'a')
    const deadline = new AbortController()
    const waiting = seatFollowing('a', group, [deadline.signal], ask(s))
    await settle()
    expect(s.queued).toBe(1)
    const late = new Error('deadline')
    deadline.abort(late)
    await expect(waiting).rejects.toBe(late)
    expect(s.queued).toBe(0)

    const other = new CallerGroup()
    other.join(new AbortController().signal, 'b')
    const signal = new AbortController().signal
    const seat = await seatFollowing('b', other, [signal], ask(s))
    expect(getEventListeners(signal, 'abort')).toHaveLength(0)
    seat.end({ kind: 'answer', status: 200, latencyMs: 1 })
    heldByA.end({ kind: 'answer', status: 200, latencyMs: 1 })
  })

  it('waits on one signal of its own listening on each of the call\'s ends, aborts with the first, and leaves no listener on them', async () => {
    const s = seats()
    const heldByA = await ask(s)('a', undefined, 'caller')
    const group = new CallerGroup()
    group.join(new AbortController().signal, 'a')
    const [deadline, gone] = [new AbortController(), new AbortController()]
    const waiting = seatFollowing('a', group, [deadline.signal, gone.signal], ask(s))
    await settle()
    expect([getEventListeners(deadline.signal, 'abort').length, getEventListeners(gone.signal, 'abort').length]).toEqual([1, 1])
    const reason = new Error('every caller hung up')
    gone.abort(reason)
    await expect(waiting).rejects.toBe(reason)
    expect([s.queued, getEventListeners(deadline.signal, 'abort').length]).toEqual([0, 0])
    heldByA.end({ kind: 'answer', status: 200, latencyMs: 1 })
  })

  it('gives up the wait that replaced a place given up in the turn that place was seated: no wait is left in a queue', async () => {
    // Each wait's seat is given when the test says: a grant and a change of the teams in one turn.
    const waits: { team: string; priority: Priority; signal: AbortSignal; give: (seat: Seat) => void }[] = []
    const acquire = (team: string, signal: AbortSignal | undefined, priority: Priority) =>
      new Promise<Seat>((give) => waits.push({ team, priority, signal: signal!, give }))
    const group = new CallerGroup()
    group.join(undefined, 'a', 'warm')
    const seat = seatFollowing('a', group, [], acquire)
    expect(waits.map((w) => w.priority)).toEqual(['warm'])
    const ended: string[] = []
    waits[0]!.give({ end: (outcome) => ended.push(outcome.kind) } as Seat)
    // A caller of team a joins before the grant is seen: a's place moves to a caller's.
    group.join(new AbortController().signal, 'a', 'caller')
    expect(waits.map((w) => w.priority)).toEqual(['warm', 'caller'])
    await seat
    expect(waits[1]!.signal.aborted).toBe(true)
    expect(ended).toEqual([])
  })

  it('is refused with the first refusal, which holds each team\'s own', async () => {
    const refusedA = new Error('team a is full')
    const refusedB = new Error('no seat in time')
    let refuseB: (err: Error) => void = () => undefined
    const acquire = (team: string) => (team === 'a' ? Promise.reject(refusedA) : new Promise<Seat>((_, reject) => (refuseB = reject)))
    const group = new CallerGroup()
    group.join(new AbortController().signal, 'a')
    group.join(new AbortController().signal, 'b')
    const refused = seatFollowing('a', group, [], acquire)
    await settle()
    refuseB(refusedB)
    const err = (await refused.then(() => null, (e: unknown) => e as Error))!
    expect([err, ownRefusal(err, 'a'), ownRefusal(err, 'b'), ownRefusal(err, 'c')]).toEqual([refusedA, refusedA, refusedB, undefined])
    expect(ownRefusal(new Error('wrapped', { cause: err }), 'b')).toBe(refusedB)
  })

  it('without callers to follow, waits under its own team, as a caller\'s call', async () => {
    const s = seats()
    const seat = await seatFollowing('a', undefined, [], ask(s))
    expect(s.running('a')).toBe(1)
    seat.end({ kind: 'answer', status: 200, latencyMs: 1 })
  })
})
