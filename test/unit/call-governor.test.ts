import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { CallGovernor, NoIdleSeatError, type GovernorOptions, type Priority, type Release } from '../../src/platform/governor/call-governor.js'
import { CallerGroup, CallersGoneError, slotFollowing } from '../../src/platform/client/caller-group.js'
import { fakeClock, type FakeClock } from '../helpers/clock.js'

// The governor's scheduling, on a clock that moves only when told.

/** A governor on `clock`, the reasons it refused calls, and `order` for the calls of a test to record their turns in. */
function governor(clock: FakeClock, opts: Partial<GovernorOptions> = {}) {
  const refused: string[] = []
  const g = new CallGovernor({
    credential: 'default',
    maxConcurrent: 2,
    queueLimit: 10,
    queueTimeoutMs: 10_000,
    log: pino({ level: 'silent' }),
    clock,
    onRefused: (reason) => refused.push(reason),
    // Scheduling tests below see the whole credential; the bulkhead has tests of its own.
    limitsOf: () => ({ maxConcurrent: opts.maxConcurrent ?? 2, queue: opts.queueLimit ?? 10 }),
    ...opts,
  })
  return { g, refused, order: [] as string[] }
}

/** Records when a slot asked for comes (`name` pushed on `order`, its release kept), or its error. */
function tracked(slot: Promise<{ release: Release }>, order: string[], name: string) {
  const state: { release: Release | null; error: (Error & { code?: string; retryAfterSec?: number }) | null } = { release: null, error: null }
  const done = slot.then(
    ({ release }) => {
      order.push(name)
      state.release = release
    },
    (err: Error) => {
      state.error = err
    },
  )
  return Object.assign(state, { done })
}

/** Starts a call and records when it gets its slot (or its error). */
function call(g: CallGovernor, team: string, order: string[], signal?: AbortSignal, deadline?: number) {
  return tracked(g.acquire(team, signal, deadline), order, team)
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

/** With maxConcurrent 1: submits calls, then ends the running one, `n` times, recording who ran. */
function oneAtATime(g: CallGovernor) {
  const order: string[] = []
  let holder: Release | null = null
  return {
    order,
    submit(team: string) {
      void g.acquire(team).then(({ release }) => {
        order.push(team)
        holder = release
      })
    },
    async run(n: number) {
      for (let i = 0; i < n; i++) {
        await settle()
        const current = holder
        holder = null
        current?.()
      }
      await settle()
    },
  }
}

describe('CallGovernor', () => {
  it('lets maxConcurrent calls through and queues the rest until a slot is given back', async () => {
    const clock = fakeClock()
    const { g, order } = governor(clock)
    const calls = [call(g, 'a', order), call(g, 'a', order), call(g, 'a', order)]
    await settle()
    expect(order).toEqual(['a', 'a'])
    expect([g.inFlight, g.queued]).toEqual([2, 1])
    calls[0]?.release?.()
    calls[0]?.release?.() // a second release gives back nothing more
    await settle()
    expect(order).toHaveLength(3)
    expect([g.inFlight, g.queued]).toEqual([2, 0])
  })

  it('serves queued calls by fair share: a late team does not wait for the busy one\'s backlog', async () => {
    const clock = fakeClock()
    const { g } = governor(clock, { maxConcurrent: 1 })
    const one = oneAtATime(g)
    for (let i = 0; i < 6; i++) one.submit('busy')
    one.submit('late')
    await one.run(7)
    // The first busy call got the free slot; the late team's call is the next one.
    expect(one.order).toEqual(['busy', 'late', 'busy', 'busy', 'busy', 'busy', 'busy'])
  })

  it('gives a team slots in proportion to its weight while both wait', async () => {
    const clock = fakeClock()
    const { g } = governor(clock, { maxConcurrent: 1, weightOf: (team) => (team === 'heavy' ? 3 : 1) })
    const one = oneAtATime(g)
    one.submit('x')
    for (let i = 0; i < 6; i++) one.submit('heavy')
    for (let i = 0; i < 3; i++) one.submit('light')
    await one.run(10)
    expect(one.order.slice(1)).toEqual(['heavy', 'light', 'heavy', 'heavy', 'heavy', 'light', 'heavy', 'heavy', 'light'])
  })

  it('refuses a call when the queue is full, with GW_OVERLOADED and a retry-after', async () => {
    const clock = fakeClock()
    const { g, refused, order } = governor(clock, { maxConcurrent: 1, queueLimit: 1 })
    call(g, 'a', order)
    call(g, 'a', order)
    const third = call(g, 'b', order)
    await third.done
    expect(third.error).toMatchObject({ code: 'GW_OVERLOADED', statusCode: 503, retryAfterSec: 1 })
    expect(refused).toEqual(['queue_full'])
  })

  it('refuses a queued call after queueTimeout, or at its deadline when that comes first', async () => {
    const clock = fakeClock()
    const { g, refused, order } = governor(clock, { maxConcurrent: 1, queueTimeoutMs: 1000 })
    call(g, 'a', order)
    const waiting = call(g, 'a', order)
    const hurried = call(g, 'b', order, undefined, clock.now() + 300)
    clock.advance(299)
    await settle()
    expect([waiting.error, hurried.error]).toEqual([null, null])
    clock.advance(1)
    await settle()
    expect(hurried.error).toMatchObject({ code: 'GW_OVERLOADED' })
    expect(waiting.error).toBeNull()
    clock.advance(700)
    await settle()
    expect(waiting.error).toMatchObject({ code: 'GW_OVERLOADED' })
    expect(refused).toEqual(['queue_timeout', 'queue_timeout'])
    expect(g.queued).toBe(0)
  })

  it('takes a call out of the queue when its signal aborts', async () => {
    const clock = fakeClock()
    const { g, order } = governor(clock, { maxConcurrent: 1 })
    const running = call(g, 'a', order)
    const abort = new AbortController()
    const aborted = call(g, 'b', order, abort.signal)
    const next = call(g, 'c', order)
    await settle()
    abort.abort(new Error('caller gone'))
    await settle()
    expect(aborted.error?.message).toBe('caller gone')
    expect(g.queued).toBe(1)
    running.release?.()
    await settle()
    expect(order).toEqual(['a', 'c'])
    expect(next.release).not.toBeNull()
  })

  it('starts nothing while the credential is paused, and starts the queued calls once the pause ends', async () => {
    const clock = fakeClock()
    const pause = { until: clock.now() + 3000 }
    const { g, order } = governor(clock, { pausedUntil: () => pause.until })
    const waiting = call(g, 'a', order)
    clock.advance(2999)
    await settle()
    expect(order).toEqual([])
    clock.advance(1)
    // The pauses' home tells the governor when a pause ends (expired, or the platform answered).
    g.wake()
    await settle()
    expect(order).toEqual(['a'])
    expect(waiting.error).toBeNull()
  })

  it('refuses at once a call whose wait would outlast queueTimeout while paused, and those already queued', async () => {
    const clock = fakeClock()
    const pause = { until: 0 }
    const { g, refused, order } = governor(clock, { maxConcurrent: 1, queueTimeoutMs: 5000, pausedUntil: () => pause.until })
    call(g, 'a', order)
    const queued = call(g, 'b', order)
    await settle()
    pause.until = clock.now() + 30_000
    g.paused()
    const late = call(g, 'c', order)
    await settle()
    expect(queued.error).toMatchObject({ code: 'GW_OVERLOADED', retryAfterSec: 30 })
    expect(late.error).toMatchObject({ code: 'GW_OVERLOADED', retryAfterSec: 30 })
    expect(refused).toEqual(['paused', 'paused'])
  })
})

describe('CallGovernor shares: work-conserving, fair when teams compete', () => {
  it('lets a team alone use every slot and the whole queue', async () => {
    const clock = fakeClock()
    const { g, refused, order } = governor(clock, { maxConcurrent: 4, queueLimit: 6, limitsOf: () => undefined })
    const calls = Array.from({ length: 11 }, () => call(g, 'alone', order))
    await settle()
    expect([g.inFlight, g.queued, g.running('alone')]).toEqual([4, 6, 4])
    expect(calls[10]?.error).toMatchObject({ code: 'GW_OVERLOADED', statusCode: 503 })
    expect(refused).toEqual(['queue_full'])
  })

  it('gives a team that arrives while another holds every seat the seats that free up to its share, and room in a full queue', async () => {
    const clock = fakeClock()
    const { g, refused, order } = governor(clock, { maxConcurrent: 4, queueLimit: 6, limitsOf: () => undefined })
    const burst = Array.from({ length: 10 }, () => call(g, 'burst', order))
    await settle()
    const late = [call(g, 'late', order), call(g, 'late', order)]
    await settle()
    // Each of the late team's calls took the place of the burst's newest.
    expect([burst[9]?.error?.code, burst[8]?.error?.code]).toEqual(['GW_OVERLOADED', 'GW_OVERLOADED'])
    expect(refused).toEqual(['displaced', 'displaced'])
    expect(late.map((c) => c.error)).toEqual([null, null])
    burst[0]?.release?.()
    await settle()
    expect(order.slice(4)).toEqual(['late'])
    burst[1]?.release?.()
    await settle()
    // The burst borrowed every seat while alone: past its share (2 of 4) now that another
    // team waits, it starts nothing until the late team holds its own share.
    expect(order.slice(4)).toEqual(['late', 'late'])
    burst[2]?.release?.()
    await settle()
    expect(order.slice(4)).toEqual(['late', 'late', 'burst'])
  })

  it('keeps a team within the ceilings an operator set, bounded by the credential\'s', async () => {
    const clock = fakeClock()
    const { g, refused, order } = governor(clock, { maxConcurrent: 8, queueLimit: 100, limitsOf: (team) => (team === 'small' ? { maxConcurrent: 1, queue: 1 } : team === 'big' ? { maxConcurrent: 20, queue: 300 } : undefined) })
    expect(g.limitsOf('big')).toEqual({ maxConcurrent: 8, queue: 100 })
    expect(g.limitsOf('other')).toEqual({ maxConcurrent: null, queue: null })
    const small = [call(g, 'small', order), call(g, 'small', order), call(g, 'small', order)]
    await settle()
    expect([g.running('small'), g.queued]).toEqual([1, 1])
    expect(small[2]?.error).toMatchObject({ code: 'GW_OVERLOADED' })
    expect(refused).toEqual(['team_queue_full'])
    // Its waiting call does not hold up another team's.
    call(g, 'other', order)
    await settle()
    expect(order).toEqual(['small', 'other'])
  })

  it('starts queued calls as soon as a higher limit is in force, and none past a lower one', async () => {
    const clock = fakeClock()
    const { g, order } = governor(clock, { maxConcurrent: 8, limit: 2, limitsOf: () => undefined })
    const calls = Array.from({ length: 5 }, () => call(g, 'a', order))
    await settle()
    expect([g.limit, g.inFlight, g.queued]).toEqual([2, 2, 3])
    g.setLimit(4)
    await settle()
    expect([g.inFlight, g.queued]).toEqual([4, 1])
    g.setLimit(1)
    calls[0]?.release?.()
    calls[1]?.release?.()
    await settle()
    expect([g.inFlight, g.queued]).toEqual([2, 1])
    g.setLimit(100)
    expect(g.limit).toBe(8)
  })
})

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
})

describe('slotFollowing', () => {
  it('waits in the queue of the earliest caller\'s team, and moves to the next team\'s queue when that caller hangs up', async () => {
    const clock = fakeClock()
    const { g } = governor(clock, { maxConcurrent: 2, limitsOf: () => ({ maxConcurrent: 1 }) })
    const { release: heldByA } = await g.acquire('a')
    const group = new CallerGroup()
    const [a, b] = [new AbortController(), new AbortController()]
    group.join(a.signal, 'a')
    group.join(b.signal, 'b')
    let started = false
    const slot = slotFollowing('a', group, undefined, (team, signal) => g.acquire(team, signal)).then(({ release }) => {
      started = true
      return release
    })
    await Promise.resolve()
    // Team a holds its one slot: the shared call waits in a's queue although a slot is free.
    expect([started, g.queued]).toEqual([false, 1])
    a.abort()
    const release = await slot
    expect([started, g.running('b'), g.queued]).toEqual([true, 1, 0])
    release()
    heldByA()
  })

  it('without callers to follow, waits under its own team', async () => {
    const { g } = governor(fakeClock())
    const { release } = await slotFollowing('a', undefined, undefined, (team, signal) => g.acquire(team, signal))
    expect(g.running('a')).toBe(1)
    release()
  })
})

/** Starts a background call of `priority` and records when it gets its slot (or its error). */
function backgroundCall(g: CallGovernor, priority: Priority, order: string[], name: string, urgency?: () => number, team = 'a') {
  return tracked(g.acquire(team, undefined, Infinity, { priority, ...(urgency ? { urgency } : {}) }), order, name)
}

describe('priorities: a caller before a refresh ahead, before a stale-while-revalidate refresh, before a warm-up', () => {
  it('lets background work use every idle slot, and gives each freed slot to a waiting caller first', async () => {
    const clock = fakeClock()
    const { g, order } = governor(clock, { maxConcurrent: 2 })
    const running = [backgroundCall(g, 'swr', order, 'swr-1'), backgroundCall(g, 'warm', order, 'warm-1')]
    await settle()
    expect(g.inFlight).toBe(2)
    backgroundCall(g, 'warm', order, 'warm-2')
    backgroundCall(g, 'swr', order, 'swr-2')
    backgroundCall(g, 'ahead', order, 'ahead-1')
    call(g, 'a', order)
    await settle()
    running[0]?.release?.()
    await settle()
    expect(order.slice(2)).toEqual(['a'])
    running[1]?.release?.()
    await settle()
    expect(order.slice(3)).toEqual(['ahead-1'])
  })

  it('gives a team\'s refreshes ahead its share while another team floods the queue with misses', async () => {
    const clock = fakeClock()
    const { g, order } = governor(clock, { maxConcurrent: 1, queueLimit: 100 })
    const calls = [call(g, 'flood', order), ...Array.from({ length: 20 }, () => call(g, 'flood', order))]
    calls.push(backgroundCall(g, 'ahead', order, 'refresh', undefined, 'dashboard'), backgroundCall(g, 'ahead', order, 'refresh', undefined, 'dashboard'))
    // One slot: each call ends once it has it, and the next takes its place.
    for (let i = 0; i < 4; i++) {
      await settle()
      for (const c of calls) if (c.release) c.release()
    }
    await settle()
    // The flood's callers do not go before the dashboard team's refreshes: the slot alternates.
    expect(order.slice(0, 5)).toEqual(['flood', 'refresh', 'flood', 'refresh', 'flood'])
  })

  it('runs the most urgent refresh ahead first, and drops background work quietly when its time is up', async () => {
    const clock = fakeClock()
    const { g, refused, order } = governor(clock, { maxConcurrent: 1, queueTimeoutMs: 1000 })
    const holder = call(g, 'a', order)
    await settle()
    const cold = backgroundCall(g, 'ahead', order, 'cold', () => 0.1)
    backgroundCall(g, 'ahead', order, 'hot', () => 5)
    await settle()
    holder.release?.()
    await settle()
    expect(order).toEqual(['a', 'hot'])
    clock.advance(1000)
    await settle()
    expect(cold.error).toBeInstanceOf(NoIdleSeatError)
    expect(refused).toEqual(['queue_timeout'])
  })

  it('lets a caller displace background work from a full queue', async () => {
    const clock = fakeClock()
    const { g, refused, order } = governor(clock, { maxConcurrent: 1, queueLimit: 1 })
    call(g, 'a', order)
    await settle()
    const queued = backgroundCall(g, 'swr', order, 'swr')
    const caller = call(g, 'b', order)
    await settle()
    expect(queued.error).toBeInstanceOf(NoIdleSeatError)
    expect(caller.error).toBeNull()
    expect(refused).toEqual(['displaced'])
    // A background call finds no room behind a caller's.
    const late = backgroundCall(g, 'ahead', order, 'ahead')
    await late.done
    expect(late.error).toBeInstanceOf(NoIdleSeatError)
  })

  it('starts nothing while the credential is paused', async () => {
    const clock = fakeClock()
    const pause = { until: clock.now() + 5000 }
    const { g, order } = governor(clock, { maxConcurrent: 8, pausedUntil: () => pause.until })
    backgroundCall(g, 'ahead', order, 'ahead')
    await settle()
    expect([order, g.queued]).toEqual([[], 1])
    clock.advance(5_001)
    g.wake()
    await settle()
    expect(order).toEqual(['ahead'])
  })
})

/**
 * Teams that keep `backlog` calls each waiting or in flight, each call holding its seat
 * for its team's `ms`, for `warmupMs` and then `durationMs` of the fake clock; each team's
 * seat-seconds over the latter.
 */
async function seatTimeOf(g: CallGovernor, clock: FakeClock, teams: Record<string, { ms: number; backlog: number }>, durationMs: number, warmupMs = 10_000): Promise<Record<string, number>> {
  const open = new Map<string, number>()
  const submit = (team: string): void => {
    open.set(team, (open.get(team) ?? 0) + 1)
    void g.acquire(team).then(({ release }) => {
      clock.setTimeout(() => {
        release()
        open.set(team, (open.get(team) ?? 1) - 1)
      }, teams[team]!.ms)
    }, () => open.set(team, (open.get(team) ?? 1) - 1))
  }
  let start: Record<string, number> = {}
  for (let t = 0; t < warmupMs + durationMs; t += 10) {
    if (t === warmupMs) start = Object.fromEntries(Object.keys(teams).map((team) => [team, g.seatSeconds(team)]))
    for (const [team, { backlog }] of Object.entries(teams)) while ((open.get(team) ?? 0) < backlog) submit(team)
    await settle()
    clock.advance(10)
  }
  return Object.fromEntries(Object.keys(teams).map((t) => [t, g.seatSeconds(t) - (start[t] ?? 0)]))
}

describe('shares of the platform\'s time: seats held for as long as calls run', () => {
  it('gives a team of year-long reports and a team of short ones equal seat-time, and seat-time by weight', async () => {
    const clock = fakeClock()
    const { g } = governor(clock, { maxConcurrent: 16, queueLimit: 200, limitsOf: () => undefined })
    // Team A: 24 callers of 4.5 s reports; team B: 24 callers of 128 ms ones.
    const even = await seatTimeOf(g, clock, { a: { ms: 4500, backlog: 24 }, b: { ms: 128, backlog: 24 } }, 60_000)
    expect(even.b! / even.a!).toBeGreaterThan(0.9)
    expect(even.b! / even.a!).toBeLessThan(1.1)
    expect(even.a! + even.b!).toBeGreaterThan(0.95 * 16 * 60)

    const weighted = governor(clock, { maxConcurrent: 16, queueLimit: 200, limitsOf: () => undefined, weightOf: (team) => (team === 'b' ? 3 : 1) }).g
    const byWeight = await seatTimeOf(weighted, clock, { a: { ms: 4500, backlog: 24 }, b: { ms: 128, backlog: 24 } }, 60_000)
    expect(byWeight.b! / byWeight.a!).toBeGreaterThan(2.7)
    expect(byWeight.b! / byWeight.a!).toBeLessThan(3.3)
  })

  it('gives weights their turns when one seat is all there is', async () => {
    const clock = fakeClock()
    const { g } = governor(clock, { maxConcurrent: 1, queueLimit: 200, limitsOf: () => undefined, weightOf: (team) => (team === 'heavy' ? 3 : 1) })
    const held = await seatTimeOf(g, clock, { heavy: { ms: 100, backlog: 4 }, light: { ms: 100, backlog: 4 } }, 20_000)
    expect(held.heavy! / held.light!).toBeGreaterThan(2.5)
    expect(held.heavy! / held.light!).toBeLessThan(3.5)
  })

  it('takes back the seats a team borrowed while alone once another waits: it starts nothing past its share', async () => {
    const clock = fakeClock()
    const { g, order } = governor(clock, { maxConcurrent: 8, queueLimit: 100, limitsOf: () => undefined })
    const borrowed = Array.from({ length: 20 }, () => call(g, 'long', order))
    await settle()
    expect(g.running('long')).toBe(8)
    const waiting = Array.from({ length: 6 }, () => call(g, 'short', order))
    await settle()
    // Each seat the long team gives back goes to the short team until it holds its share (4).
    for (let i = 0; i < 4; i++) {
      borrowed[i]?.release?.()
      await settle()
    }
    expect([g.running('long'), g.running('short')]).toEqual([4, 4])
    // Then they share the seats that free: the long team no longer takes all.
    borrowed[4]?.release?.()
    await settle()
    expect([g.running('long'), g.running('short')]).toEqual([4, 4])
    expect(waiting.filter((c) => c.release !== null)).toHaveLength(4)
  })

  it('counts every call of a team against its ceiling: callers, refreshes and warm-ups', async () => {
    const clock = fakeClock()
    const { g, order } = governor(clock, { maxConcurrent: 8, queueLimit: 100, limitsOf: (team) => (team === 'capped' ? { maxConcurrent: 2 } : undefined) })
    for (let i = 0; i < 20; i++) backgroundCall(g, i % 2 ? 'swr' : 'ahead', order, 'refresh', undefined, 'capped')
    backgroundCall(g, 'warm', order, 'warm', undefined, 'capped')
    call(g, 'capped', order)
    await settle()
    expect(g.running('capped')).toBe(2)
    // The seats its ceiling leaves go to the others.
    const other = Array.from({ length: 6 }, () => call(g, 'other', order))
    await settle()
    expect(other.every((c) => c.release !== null)).toBe(true)
    expect(g.inFlight).toBe(8)
  })

  it('holds a braked team to its brake, and lets it go', async () => {
    const clock = fakeClock()
    const { g, order } = governor(clock, { maxConcurrent: 8, queueLimit: 100, limitsOf: () => undefined })
    g.setBrakes(new Map([['failing', 1]]))
    const calls = Array.from({ length: 5 }, () => call(g, 'failing', order))
    await settle()
    expect([g.running('failing'), g.brakeOf('failing')]).toEqual([1, 1])
    g.setBrakes(new Map())
    await settle()
    expect(g.running('failing')).toBe(5)
    for (const c of calls) c.release?.()
  })

  it('asks for the seat of a caller that stopped reading, of a team past its share, when a team below its share waits', async () => {
    const clock = fakeClock()
    const asked: string[] = []
    const { g, order } = governor(clock, {
      maxConcurrent: 4,
      queueLimit: 100,
      limitsOf: () => undefined,
      reclaim: (waiting, overShare) => {
        asked.push(`${waiting}:${['reader', 'waiter'].filter(overShare).join(',')}`)
        return false
      },
    })
    Array.from({ length: 4 }, () => call(g, 'reader', order))
    await settle()
    expect(g.othersWaitFor('reader')).toBe(false)
    call(g, 'waiter', order)
    await settle()
    expect(asked).toEqual(['waiter:reader'])
    expect(g.othersWaitFor('reader')).toBe(true)
    expect(g.othersWaitFor('waiter')).toBe(false)
  })
})

describe('a cut of the limit is taken from the teams that borrowed', () => {
  it('lets the team below its share keep its seats as its short calls end, while the borrower\'s long ones run down', async () => {
    const clock = fakeClock()
    const { g, order } = governor(clock, { maxConcurrent: 8, queueLimit: 100, limitsOf: () => undefined })
    // The long team holds 6 of 8 (it borrowed while the short team asked for 2), the short team 2.
    const long = Array.from({ length: 6 }, () => call(g, 'long', order))
    await settle()
    const short = Array.from({ length: 2 }, () => call(g, 'short', order))
    Array.from({ length: 4 }, () => call(g, 'long', order))
    await settle()
    expect([g.running('long'), g.running('short')]).toEqual([6, 2])
    // The limit falls to 6: the short team's calls end and come back; they get their seats
    // again rather than waiting for the long team's calls to end.
    g.setLimit(6)
    for (let i = 0; i < 3; i++) {
      short.filter((c) => c.release !== null).forEach((c) => c.release?.())
      short.splice(0, short.length, ...Array.from({ length: 2 }, () => call(g, 'short', order)))
      await settle()
      expect(g.running('short')).toBe(2)
    }
    // Nothing starts past the seats in force before the cut, and the long team starts nothing.
    expect(g.inFlight).toBeLessThanOrEqual(8)
    expect(g.running('long')).toBe(6)
    long.forEach((c) => c.release?.())
    await settle()
    expect(g.inFlight).toBeLessThanOrEqual(6)
  })
})
