import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { CallGovernor, parseRetryAfter, type GovernorOptions, type Release } from '../../src/platform/call-governor.js'
import { CallerGroup, CallersGoneError, slotFollowing } from '../../src/platform/caller-group.js'
import { fakeClock, type FakeClock } from '../helpers/clock.js'
import { captureLogs } from '../helpers/build-gateway.js'

// Issue #8: the governor's scheduling, on a clock that moves only when told.

function governor(clock: FakeClock, opts: Partial<GovernorOptions> = {}) {
  const refused: string[] = []
  const g = new CallGovernor({
    credential: 'default',
    maxConcurrent: 2,
    queueLimit: 10,
    queueTimeoutMs: 10_000,
    log: pino({ level: 'silent' }),
    now: clock.now,
    timers: clock.timers,
    onRefused: (reason) => refused.push(reason),
    // Scheduling tests below see the whole credential; the bulkhead has tests of its own.
    limitsOf: () => ({ maxConcurrent: opts.maxConcurrent ?? 2, queue: opts.queueLimit ?? 10 }),
    ...opts,
  })
  return { g, refused }
}

/** Starts a call and records when it gets its slot (or its error). */
function call(g: CallGovernor, team: string, order: string[], signal?: AbortSignal, deadline?: number) {
  const state: { release: Release | null; error: (Error & { code?: string; retryAfterSec?: number }) | null } = { release: null, error: null }
  const done = g.acquire(team, signal, deadline).then(
    (release) => {
      order.push(team)
      state.release = release
    },
    (err: Error) => {
      state.error = err
    },
  )
  return Object.assign(state, { done })
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

/** With maxConcurrent 1: submits calls, then ends the running one, `n` times, recording who ran. */
function oneAtATime(g: CallGovernor) {
  const order: string[] = []
  let holder: Release | null = null
  return {
    order,
    submit(team: string) {
      void g.acquire(team).then((release) => {
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
    const { g } = governor(clock)
    const order: string[] = []
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

  it('serves queued calls round-robin by team: a late team does not wait for the busy one', async () => {
    const clock = fakeClock()
    const { g } = governor(clock, { maxConcurrent: 1 })
    const one = oneAtATime(g)
    for (let i = 0; i < 6; i++) one.submit('busy')
    one.submit('late')
    await one.run(7)
    // The first busy call got the free slot; the late team's call is the next but one.
    expect(one.order).toEqual(['busy', 'busy', 'late', 'busy', 'busy', 'busy', 'busy'])
  })

  it('gives a team as many calls per turn as its weight', async () => {
    const clock = fakeClock()
    const { g } = governor(clock, { maxConcurrent: 1, weightOf: (team) => (team === 'heavy' ? 3 : 1) })
    const one = oneAtATime(g)
    one.submit('x')
    for (let i = 0; i < 6; i++) one.submit('heavy')
    for (let i = 0; i < 3; i++) one.submit('light')
    await one.run(10)
    expect(one.order.slice(1)).toEqual(['heavy', 'heavy', 'heavy', 'light', 'heavy', 'heavy', 'heavy', 'light', 'light'])
  })

  it('refuses a call when the queue is full, with GW_OVERLOADED and a retry-after', async () => {
    const clock = fakeClock()
    const { g, refused } = governor(clock, { maxConcurrent: 1, queueLimit: 1 })
    const order: string[] = []
    call(g, 'a', order)
    call(g, 'a', order)
    const third = call(g, 'b', order)
    await third.done
    expect(third.error).toMatchObject({ code: 'GW_OVERLOADED', statusCode: 503, retryAfterSec: 1 })
    expect(refused).toEqual(['queue_full'])
  })

  it('refuses a queued call after queueTimeout, or at its deadline when that comes first', async () => {
    const clock = fakeClock()
    const { g, refused } = governor(clock, { maxConcurrent: 1, queueTimeoutMs: 1000 })
    const order: string[] = []
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
    const { g } = governor(clock, { maxConcurrent: 1 })
    const order: string[] = []
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

  it('starts nothing while paused after a 429, and resumes when retry-after has passed', async () => {
    const clock = fakeClock()
    const logs = captureLogs()
    const { g } = governor(clock, { log: pino(logs.stream) })
    const order: string[] = []
    expect(g.throttled('3', 'a')).toBe(3000)
    expect(g.pausedUntil).toBe(clock.now() + 3000)
    g.throttled('2', 'a') // a shorter pause while paused changes nothing and logs nothing
    const waiting = call(g, 'a', order)
    clock.advance(2999)
    await settle()
    expect(order).toEqual([])
    clock.advance(1)
    await settle()
    expect(order).toEqual(['a'])
    expect(waiting.error).toBeNull()
    expect(logs.records().map((r) => r.msg)).toEqual(['platform credential paused: the platform answered 429', 'platform credential resumed'])
  })

  it('refuses at once a call whose wait would outlast queueTimeout while paused, and those already queued', async () => {
    const clock = fakeClock()
    const { g, refused } = governor(clock, { maxConcurrent: 1, queueTimeoutMs: 5000 })
    const order: string[] = []
    call(g, 'a', order)
    const queued = call(g, 'b', order)
    await settle()
    g.throttled('30', 'a')
    const late = call(g, 'c', order)
    await settle()
    expect(queued.error).toMatchObject({ code: 'GW_OVERLOADED', retryAfterSec: 30 })
    expect(late.error).toMatchObject({ code: 'GW_OVERLOADED', retryAfterSec: 30 })
    expect(refused).toEqual(['paused', 'paused'])
  })

  it('pauses 1 s, then 2 s, 4 s … up to 60 s for 429s without retry-after, and starts short again after another answer', () => {
    const clock = fakeClock()
    const { g } = governor(clock)
    const pauses = Array.from({ length: 8 }, () => {
      const ms = g.throttled(undefined, 'a')
      clock.advance(ms)
      return ms
    })
    expect(pauses).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000])
    g.answered()
    expect(g.throttled(undefined, 'a')).toBe(1000)
  })
})

describe('CallGovernor bulkheads (issue 15)', () => {
  it('lets a team hold at most half the slots by default: another team starts at once during its burst', async () => {
    const clock = fakeClock()
    const { g } = governor(clock, { maxConcurrent: 4, queueLimit: 20, limitsOf: () => undefined })
    const order: string[] = []
    const burst = Array.from({ length: 6 }, () => call(g, 'burst', order))
    await settle()
    expect(order).toEqual(['burst', 'burst'])
    expect([g.inFlight, g.queued, g.running('burst')]).toEqual([2, 4, 2])
    call(g, 'calm', order)
    call(g, 'calm', order)
    await settle()
    expect(order).toEqual(['burst', 'burst', 'calm', 'calm'])
    // A burst call's end frees a slot for the burst team's next call, not more.
    burst[0]?.release?.()
    await settle()
    expect(order.slice(4)).toEqual(['burst'])
    expect(g.running('burst')).toBe(2)
  })

  it('refuses a team whose share of the queue is full, while another team still queues', async () => {
    const clock = fakeClock()
    const { g, refused } = governor(clock, { maxConcurrent: 2, queueLimit: 4, limitsOf: () => undefined })
    const order: string[] = []
    const burst = Array.from({ length: 4 }, () => call(g, 'burst', order))
    await settle()
    // One running (half of 2), two queued (half of 4), the fourth refused.
    expect(burst[3]?.error).toMatchObject({ code: 'GW_OVERLOADED', statusCode: 503 })
    expect(refused).toEqual(['team_queue_full'])
    const calm = [call(g, 'calm', order), call(g, 'calm', order)]
    await settle()
    expect(calm.map((c) => c.error)).toEqual([null, null])
    expect(order).toEqual(['burst', 'calm'])
    expect(g.queued).toBe(3)
  })

  it('takes a team\'s own maxConcurrent and queue, bounded by the credential\'s', () => {
    const clock = fakeClock()
    const { g } = governor(clock, { maxConcurrent: 8, queueLimit: 100, limitsOf: (team) => (team === 'big' ? { maxConcurrent: 20, queue: 30 } : team === 'small' ? { maxConcurrent: 1, queue: null } : undefined) })
    expect(g.limitsOf('big')).toEqual({ maxConcurrent: 8, queue: 30 })
    expect(g.limitsOf('small')).toEqual({ maxConcurrent: 1, queue: 50 })
    expect(g.limitsOf('other')).toEqual({ maxConcurrent: 4, queue: 50 })
  })
})

describe('CallGovernor pause bounds', () => {
  it('does not pause for retry-after: 0, and pauses at most 15 minutes whatever the platform asks', () => {
    const clock = fakeClock()
    const { g } = governor(clock)
    g.throttled('0', 'a')
    expect(g.pausedUntil).toBe(0)
    g.throttled('86400', 'a')
    expect(g.pausedUntil).toBe(clock.now() + 15 * 60_000)
  })
})

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-23T03:00:00Z')
  it.each([
    ['7', 7000],
    [' 0 ', 0],
    ['Mon, 23 Nov 2026 03:00:05 GMT', 5000],
    ['Mon, 23 Nov 2026 02:59:00 GMT', 0],
    [undefined, null],
    ['soon', null],
    ['-3', null],
  ])('%s → %s ms', (value, ms) => {
    expect(parseRetryAfter(value, now)).toBe(ms)
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
    const heldByA = await g.acquire('a')
    const group = new CallerGroup()
    const [a, b] = [new AbortController(), new AbortController()]
    group.join(a.signal, 'a')
    group.join(b.signal, 'b')
    let started = false
    const slot = slotFollowing('a', group, undefined, (team, signal) => g.acquire(team, signal)).then((release) => {
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
    const release = await slotFollowing('a', undefined, undefined, (team, signal) => g.acquire(team, signal))
    expect(g.running('a')).toBe(1)
    release()
  })
})

describe('CallGovernor early resume', () => {
  it('ends a pause at once when the platform answers again, and lets the queued calls go', async () => {
    const clock = fakeClock()
    const logs = captureLogs()
    const { g } = governor(clock, { log: pino(logs.stream) })
    const order: string[] = []
    g.throttled('900', 'growth', 5000)
    expect(g.pausedUntil).toBe(clock.now() + 5000)
    const waiting = call(g, 'a', order)
    g.resumeNow('platform')
    await settle()
    expect(g.pausedUntil).toBe(0)
    expect(order).toEqual(['a'])
    expect(waiting.error).toBeNull()
    expect(logs.records().map((r) => [r.msg, r.scope, r.team])).toEqual([
      ['platform credential paused: the platform answered 429', 'credential', 'growth'],
      ['platform credential resumed', 'credential', 'growth'],
    ])
  })
})

/** With permits counted in memory the answer is had at once. */
const background = (g: CallGovernor) => g.tryBackground() as Release | null

describe('background calls (refresh ahead, issue 17)', () => {
  it('get an idle slot only: none while a caller waits, none past a quarter of the slots, and never a queue place', async () => {
    const clock = fakeClock()
    const { g, refused } = governor(clock, { maxConcurrent: 8 })
    const first = background(g)
    const second = background(g)
    expect(first).not.toBeNull()
    // A quarter of 8 slots.
    expect(second).not.toBeNull()
    expect(background(g)).toBeNull()
    second?.()
    second?.()
    const third = background(g)
    expect(third).not.toBeNull()
    third?.()
    // Callers fill the remaining slots and one waits: its slot is not for the background.
    const order: string[] = []
    const calls = Array.from({ length: 8 }, () => call(g, 'a', order))
    await Promise.resolve()
    expect(g.queued).toBe(1)
    expect(background(g)).toBeNull()
    // Releasing the background slot goes to the waiting caller.
    first?.()
    await calls[7]?.done
    expect(order).toHaveLength(8)
    expect(background(g)).toBeNull()
    expect(g.queued).toBe(0)
    expect(refused).toEqual([])
  })

  it('start nothing while the credential is paused', () => {
    const clock = fakeClock()
    const { g } = governor(clock, { maxConcurrent: 8 })
    g.pause(5_000, 'platform', 'a')
    expect(background(g)).toBeNull()
    clock.advance(5_001)
    expect(background(g)).not.toBeNull()
  })
})
