import { EventEmitter, getEventListeners } from 'node:events'
import { describe, expect, it } from 'vitest'
import { CallerGroup, CallersGoneError, firstAsker, hangUpOf, seatFollowing } from '../../src/platform/client/caller-group.js'
import { CredentialSeats } from '../../src/platform/governor/seats.js'
import { PRIORITIES, type Priority } from '../../src/platform/governor/fair-queue.js'
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
    const response = () => Object.assign(new EventEmitter(), { writableFinished: false })
    const [a, b] = [response(), response()]
    const group = new CallerGroup()
    group.join(hangUpOf(a), 'a')
    group.join(hangUpOf(b), 'b')
    a.emit('close')
    expect([group.signal.aborted, group.team]).toEqual([false, 'b'])
    b.writableFinished = true
    b.emit('close')
    expect(group.signal.aborted).toBe(false)

    const c = response()
    const alone = new CallerGroup()
    alone.join(hangUpOf(c), 'c')
    c.emit('close')
    expect(alone.signal.reason).toBeInstanceOf(CallersGoneError)
  })

  it('aborts when its only caller had hung up before joining', () => {
    const gone = new AbortController()
    gone.abort()
    const group = new CallerGroup()
    group.join(gone.signal, 'a')
    expect(group.signal.aborted).toBe(true)
  })

  it('names the team of its earliest caller still waiting, and says when it changes', () => {
    const group = new CallerGroup()
    const [a1, b, a2] = [new AbortController(), new AbortController(), new AbortController()]
    const changes: (string | null)[] = []
    group.onChange(() => changes.push(group.team))
    group.join(a1.signal, 'a')
    group.join(b.signal, 'b')
    group.join(a2.signal, 'a')
    expect(group.team).toBe('a')
    a2.abort()
    expect(changes).toEqual([])
    a1.abort()
    expect(group.team).toBe('b')
    expect(changes).toEqual(['b'])
  })

  it('lets callers that may no longer be answered leave when asked (admitted), as a hang-up does, and refuses the call once none waits; a background asker keeps it', () => {
    const group = new CallerGroup()
    const live = { a: true, b: true }
    const [a, b] = [new AbortController(), new AbortController()]
    group.join(a.signal, 'a', 'caller', () => live.a)
    group.join(b.signal, 'b', 'caller', () => live.b)
    live.a = false
    group.admitted()
    expect([group.signal.aborted, group.team]).toEqual([false, 'b'])
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
    expect([pinned.signal.aborted, pinned.team, pinned.priority]).toEqual([false, 'r', 'ahead'])
  })

  it('is charged to its first asker while that one waits, else to the asker whose queue it waits in', () => {
    const group = new CallerGroup<string>()
    const [a, b, c] = [new AbortController(), new AbortController(), new AbortController()]
    group.join(a.signal, 'a', 'warm', undefined, 'tally a')
    group.join(b.signal, 'b', 'caller', undefined, 'tally b')
    group.join(c.signal, 'c', 'caller', undefined, 'tally c')
    expect([group.team, group.chargedTo]).toEqual(['b', 'tally a'])
    a.abort()
    expect(group.chargedTo).toBe('tally b')
    b.abort()
    expect(group.chargedTo).toBe('tally c')
  })

  it('waits at the priority of its most pressing asker: a caller who joins a refresh makes it a caller\'s call', () => {
    const group = new CallerGroup()
    group.join(undefined, 'a', 'ahead')
    expect([group.team, group.priority]).toEqual(['a', 'ahead'])
    group.join(new AbortController().signal, 'b')
    expect([group.team, group.priority]).toEqual(['b', 'caller'])
  })

  it('names the earliest asker of the highest priority after every join and hang-up, in any order of them', () => {
    // A seeded walk: 2,000 steps of joins (every priority, three teams) and hang-ups of any caller still waiting.
    let seed = 54
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
    const group = new CallerGroup()
    group.join(undefined, 'pinned', 'warm')
    const waiting: { team: string; priority: Priority; hangUp: AbortController }[] = []
    const changes: string[] = []
    group.onChange(() => changes.push(`${group.team}/${group.priority}`))
    let expectedChanges = 0
    for (let step = 0; step < 2000; step += 1) {
      const before = firstAsker([{ team: 'pinned', priority: 'warm' as Priority }, ...waiting])
      if (waiting.length > 0 && random(3) === 0) {
        const [gone] = waiting.splice(random(waiting.length), 1)
        gone!.hangUp.abort()
      } else {
        const caller = { team: `t${random(3)}`, priority: PRIORITIES[random(PRIORITIES.length)]!, hangUp: new AbortController() }
        waiting.push(caller)
        group.join(caller.hangUp.signal, caller.team, caller.priority)
      }
      const first = firstAsker([{ team: 'pinned', priority: 'warm' as Priority }, ...waiting])!
      if (first !== before) expectedChanges += 1
      expect([group.team, group.priority]).toEqual([first.team, first.priority])
    }
    expect(changes).toHaveLength(expectedChanges)
  })
})

describe('firstAsker', () => {
  it('is the earliest of the most pressing priority, undefined for none', () => {
    const [a, b, c, d] = [{ priority: 'swr' as Priority }, { priority: 'caller' as Priority }, { priority: 'job' as Priority }, { priority: 'caller' as Priority }]
    expect(firstAsker([a, b, c, d])).toBe(b)
    expect(firstAsker([a, c])).toBe(c)
    expect(firstAsker([])).toBeUndefined()
  })
})

/** Seats of 2 on a fake clock, each team held to one call in flight. */
function seats() {
  return new CredentialSeats({ credential: 'default', maxConcurrent: 2, limit: 2, queueLimit: 10, queueTimeoutMs: 10_000, work: new WorkEstimates(), clock: fakeClock(), limitsOf: () => ({ maxConcurrent: 1 }) })
}

const ask = (s: CredentialSeats) => (team: string, signal: AbortSignal | undefined, priority: Priority) =>
  s.ask({ team, workClass: 'w', priority, deadline: Infinity, ...(signal ? { signal } : {}) })

describe('seatFollowing', () => {
  it('waits in the queue of the earliest caller\'s team, and moves to the next team\'s queue when that caller hangs up', async () => {
    const s = seats()
    const heldByA = await ask(s)('a', undefined, 'caller')
    const group = new CallerGroup()
    const [a, b] = [new AbortController(), new AbortController()]
    group.join(a.signal, 'a')
    group.join(b.signal, 'b')
    let started = false
    const seat = seatFollowing('a', group, [], ask(s)).then((seat) => {
      started = true
      return seat
    })
    await settle()
    // Team a holds its one seat: the shared call waits in a's queue although a seat is free.
    expect([started, s.queued]).toEqual([false, 1])
    a.abort()
    const moved = await seat
    expect([started, s.running('b'), s.queued]).toEqual([true, 1, 0])
    moved.end({ kind: 'answer', status: 200, latencyMs: 1 })
    heldByA.end({ kind: 'answer', status: 200, latencyMs: 1 })
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

  it('without callers to follow, waits under its own team, as a caller\'s call', async () => {
    const s = seats()
    const seat = await seatFollowing('a', undefined, [], ask(s))
    expect(s.running('a')).toBe(1)
    seat.end({ kind: 'answer', status: 200, latencyMs: 1 })
  })
})
