import { describe, expect, it } from 'vitest'
import { encodeCalls, type CallEntry } from '../../src/platform/governor/answer-timeline.js'
import { KneeEstimator } from '../../src/platform/governor/knee-estimator.js'
import { TIE, firstAtOrAfter, highestTied, probeFall } from '../../src/platform/governor/knee-verdicts.js'
import { MAX_KINDS } from '../../src/platform/governor/work-estimates.js'

type Span = { from: number; to: number }
type Call = { kind: 'cheap' | 'dear' | 'year'; local: boolean; startedAt: number; load: number; window: number; left: number }

/**
 * The limit rule of one replica on a platform of `workers` taking calls in order (a cheap
 * kind and a dear one, `dearShare` of the calls, each call's cost spread a little), its
 * callers always with a call to make: its seats are the rule's limit less the `remote`
 * calls another replica keeps in flight, which count in every call's load but whose ends
 * are not seen here. Returns the knee after `ms`, the knee each second from a third of `ms`
 * on (the steady phase), with a `stall` (the platform still from `from` to `to`, no call
 * overdue) the lowest knee from the stall on, and when the knee first fell on a queue. With
 * `loss`, the platform has `workers` from `at` on; with `long`, one call of `ms` more starts
 * at `at` (returned: when it ended). With `callers`, they keep that many calls in flight at
 * most, waiting for a seat only past the limit (returned: when the start ended).
 */
function learn(workers: number, remote: number, ms: number, o: { stall?: Span; dearShare?: number; loss?: { at: number; workers: number }; long?: Span; callers?: number } = {}): { last: number; steady: number[]; lowest: number; fell: number | null; longEnded: number | null; startEnded: number | null } {
  const { stall, dearShare = 0.3, loss, long, callers = Infinity } = o
  let [lowest, fell, longEnded, startEnded] = [Infinity, null as number | null, null as number | null, null as number | null]
  const steady: number[] = []
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  let seed = 7
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
  const costs = { cheap: 20, dear: 300 }
  let now = 0
  let nextTick = 100
  // Calls at the platform, in order of arrival: the first `workers` are in service.
  const platform: Call[] = []
  const send = (local: boolean, kind: Call['kind'] = random() < 1 - dearShare ? 'cheap' : 'dear') => {
    const load = platform.length + 1
    platform.push({ kind, local, startedAt: now, load, window: local ? rule.started(kind, load) : 0, left: kind === 'year' ? long!.to - long!.from : costs[kind] * (0.9 + 0.2 * random()) })
  }
  while (now < ms) {
    if (long !== undefined && now >= long.from && !platform.some((c) => c.kind === 'year') && longEnded === null) send(true, 'year')
    while (platform.filter((c) => !c.local).length < remote) send(false)
    while (platform.length < Math.min(rule.limit, callers)) send(true)
    if (callers > rule.limit) rule.waited()
    const serving = platform.slice(0, loss !== undefined && now >= loss.at ? loss.workers : workers)
    const first = serving.reduce((a, b) => (b.left < a.left ? b : a))
    const stalled = stall !== undefined && now >= stall.from && now < stall.to
    const step = stalled ? Math.min(stall.to, nextTick) - now : Math.min(first.left, nextTick - now)
    if (!stalled) for (const c of serving) c.left -= step
    now += step
    if (first.left <= 1e-9) {
      platform.splice(platform.indexOf(first), 1)
      if (first.kind === 'year') longEnded = now
      if (first.local) rule.ended({ startedAt: first.startedAt, at: now, team: 't', kind: first.kind, load: first.load, window: first.window, outcome: 'ok' })
    }
    if (now >= nextTick) {
      if (rule.tick(now, null)?.move === 'queue') fell ??= now
      if (rule.phase === 'cruise') startEnded ??= now
      if (stall !== undefined && now >= stall.from) lowest = Math.min(lowest, rule.knee)
      if (nextTick >= ms / 3 && nextTick % 1_000 === 0) steady.push(rule.knee)
      nextTick += 100
    }
  }
  return { last: rule.knee, steady, lowest, fell, longEnded, startEnded }
}

/** The median of `xs`, the lower of the middle two. */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!

/**
 * The limit rule of one replica whose callers hold every seat of the limit and wait for
 * more (a call starts as one ends), on a platform with workers to spare: every call takes
 * 400 ms there, the first ones started one after another over 400 ms, and the gateway
 * handles each answer up to `handlingMs` later, in the order the answers came, so that
 * calls end in the order they started, about 6 ms apart at 64. From a fresh start at 8
 * seats, or (`inService`) at 64, where the start leaves a platform with room up to the
 * ceiling. Returns the lowest limit in force over `ms`, and the last.
 */
function heldAtTheLimit(handlingMs: number, seed: number, ms: number, inService: boolean): [number, number] {
  const rule = new KneeEstimator({ initial: inService ? 64 : 8, min: 2, max: 64 })
  if (inService) rule.adopt(64, 64, 0)
  let lastEnd = 0
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
  const start = (at: number) => {
    lastEnd = Math.max(lastEnd + 0.1, at + 400 + handlingMs * random())
    return { startedAt: at, load: rule.limit, window: rule.started('report', rule.limit), endsAt: lastEnd }
  }
  const inFlight = Array.from({ length: rule.limit }, (_, i) => start((i * 400) / rule.limit))
  let lowest = rule.limit
  for (let now = 0; now < ms; ) {
    const call = inFlight.shift()!
    now = call.endsAt
    rule.ended({ startedAt: call.startedAt, at: now, team: 't', kind: 'report', load: call.load, window: call.window, outcome: 'ok' })
    rule.waited()
    rule.tick(now, null)
    lowest = Math.min(lowest, rule.limit)
    while (inFlight.length < rule.limit) inFlight.push(start(now))
  }
  return [lowest, rule.limit]
}

/**
 * The limit rule of one replica whose `callers` each make a call as their last ends (a
 * closed loop), every call of one kind and `costMs` at the platform give or take `spread`
 * (uniform), on a platform with workers to spare: the first calls started together over
 * 100 ms, so that calls pass each other by their spread alone, at one load. Returns the
 * lowest knee over `ms`.
 */
function closedLoopOfOneKind(callers: number, costMs: number, spread: number, seed: number, ms: number): number {
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
  const start = (at: number) => ({ startedAt: at, load: 0, window: 0, endsAt: at + costMs * (1 + spread * (2 * random() - 1)) })
  const inFlight = Array.from({ length: callers }, (_, i) => start((i * 100) / callers))
  let inPlay = 0
  for (const c of inFlight) [c.load, c.window] = [++inPlay, rule.started('report', inPlay)]
  let lowest = rule.knee
  for (let now = 0, nextTick = 100; now < ms; ) {
    inFlight.sort((a, b) => a.endsAt - b.endsAt)
    const call = inFlight[0]!
    if (call.endsAt > nextTick) {
      now = nextTick
      nextTick += 100
      rule.tick(now, null)
      lowest = Math.min(lowest, rule.knee)
      continue
    }
    now = call.endsAt
    inFlight.shift()
    rule.ended({ startedAt: call.startedAt, at: now, team: 't', kind: 'report', load: call.load, window: call.window, outcome: 'ok' })
    const next = start(now)
    ;[next.load, next.window] = [callers, rule.started('report', callers)]
    inFlight.push(next)
  }
  return lowest
}

/**
 * The limit rule of one replica whose callers hold every seat of the limit, on a platform
 * with no queue whose calls slow as more run at once (the capacity bench's): a call takes
 * `costMs`, and `slopeMs` more for each call in flight past `knee` as it starts, and with
 * `jitterMs` up to that more (uniform, from `seed`). Returns the lowest and highest limit
 * in force from `from` on (half of `ms` by default); `grown` gets the seats past the knee of
 * each growth in cruise.
 */
function onCrowdedPlatform(knee: number, costMs: number, slopeMs: number, ms: number, { jitterMs = 0, seed = 1, from = ms / 2, grown = [] as number[] } = {}): [number, number] {
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
  const inFlight: { startedAt: number; load: number; window: number; endsAt: number }[] = []
  const start = (at: number) => {
    const load = inFlight.length + 1
    inFlight.push({ startedAt: at, load, window: rule.started('report', load), endsAt: at + costMs + slopeMs * Math.max(0, load - knee) + (jitterMs && jitterMs * random()) })
    inFlight.sort((a, b) => a.endsAt - b.endsAt)
  }
  let [lowest, highest, nextTick] = [Infinity, 0, 100]
  for (let now = 0; now < ms; ) {
    while (inFlight.length < rule.limit) start(now)
    const next = inFlight[0]!.endsAt
    if (next <= nextTick) {
      const call = inFlight.shift()!
      now = next
      rule.ended({ startedAt: call.startedAt, at: now, team: 't', kind: 'report', load: call.load, window: call.window, outcome: 'ok' })
      continue
    }
    now = nextTick
    nextTick += 100
    rule.waited()
    const cruising = rule.phase === 'cruise'
    if (rule.tick(now, null)?.move === 'grew' && cruising) grown.push(rule.limit - rule.knee)
    if (now >= from) [lowest, highest] = [Math.min(lowest, rule.limit), Math.max(highest, rule.limit)]
  }
  return [lowest, highest]
}

/**
 * A replica's limit rule across replicas, its callers holding 16 calls in flight on a
 * platform taking calls in order (costs of 100 ms give or take half): while another
 * replica learns (no tick: it weighs its own answers only), 4 workers until 4 s, then 32;
 * it starts learning at 5 s (`restart`: startLearning then), its limit the knee of 16 and
 * its probe seat. Returns the lowest knee from then to 15 s.
 */
function takesOverLearning(restart: boolean): number {
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  rule.adopt(17, 16, 0)
  let seed = 3
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
  const platform: { startedAt: number; load: number; window: number; left: number }[] = []
  let [now, nextTick, lowest] = [0, 5_100, Infinity]
  while (now < 15_000) {
    while (platform.length < 16) platform.push({ startedAt: now, load: platform.length + 1, window: rule.started('report', platform.length + 1), left: 100 * (0.5 + random()) })
    const serving = platform.slice(0, now < 4_000 ? 4 : 32)
    const first = serving.reduce((a, b) => (b.left < a.left ? b : a))
    const step = Math.min(first.left, (now < 4_000 ? 4_000 : now < 5_000 ? 5_000 : nextTick) - now)
    for (const c of serving) c.left -= step
    now += step
    if (first.left <= 1e-9) {
      platform.splice(platform.indexOf(first), 1)
      rule.ended({ startedAt: first.startedAt, at: now, team: 't', kind: 'report', load: first.load, window: first.window, outcome: 'ok' })
    }
    if (now === 5_000 && restart) rule.startLearning(5_000)
    if (now >= nextTick) {
      rule.tick(now, null)
      lowest = Math.min(lowest, rule.knee)
      nextTick += 100
    }
  }
  return lowest
}

/**
 * Two replicas' limit rules across replicas, each holding 6 calls in flight at a limit of 6
 * (knee 5, its probe seat) on a platform of 4 workers taking calls in order, calls of 1 s
 * give or take half: the learner weighs its answers for 20 s (no tick: it does not act),
 * then the other starts learning, at 20 s, with the learner's evidence (`carry`) or none,
 * and weighs its own from then on. Returns the new learner's knee at 24 s.
 */
function takesOverOnLongCalls(carry: boolean): number {
  let seed = 5
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
  const rules = [new KneeEstimator({ initial: 8, min: 2, max: 64 }), new KneeEstimator({ initial: 8, min: 2, max: 64 })] as const
  for (const rule of rules) rule.adopt(6, 5, 0)
  const platform: { startedAt: number; load: number; windows: number[]; left: number }[] = []
  let [now, nextTick] = [0, 20_100]
  let learner = rules[0]
  while (now < 24_000) {
    while (platform.length < 6) platform.push({ startedAt: now, load: platform.length + 1, windows: rules.map((r) => r.started('report', platform.length + 1)), left: 1000 * (0.5 + random()) })
    const serving = platform.slice(0, 4)
    const first = serving.reduce((a, b) => (b.left < a.left ? b : a))
    const step = Math.min(first.left, (now < 20_000 ? 20_000 : nextTick) - now)
    for (const c of serving) c.left -= step
    now += step
    if (first.left <= 1e-9) {
      platform.splice(platform.indexOf(first), 1)
      rules.forEach((rule, i) => rule.ended({ startedAt: first.startedAt, at: now, team: 't', kind: 'report', load: first.load, window: first.windows[i]!, outcome: 'ok' }))
    }
    if (now === 20_000 && learner === rules[0]) {
      learner = rules[1]
      learner.startLearning(now, carry ? rules[0].evidence(now) : null)
    }
    if (now >= nextTick) {
      learner.tick(now, null)
      nextTick += 100
    }
  }
  return learner.knee
}

/**
 * The limit rule of one replica whose `callers` each make a call as their last ends (a
 * closed loop, past the limit they wait for a seat), every call of one kind log-normal
 * around `costMs` (σ `sigma`, from `seed`), on a platform of `workers` taking calls in
 * order. Returns the knee each second from 30 s to `ms`.
 */
function closedLoopPastTheWorkers(workers: number, callers: number, costMs: number, sigma: number, seed: number, ms: number): number[] {
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 128 })
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
  const platform: { startedAt: number; load: number; window: number; left: number }[] = []
  const knees: number[] = []
  let [waiting, now, nextTick] = [callers, 0, 100]
  while (now < ms) {
    for (; waiting > 0 && platform.length < rule.limit; waiting--) {
      const load = platform.length + 1
      platform.push({ startedAt: now, load, window: rule.started('report', load), left: costMs * Math.exp(sigma * Math.sqrt(-2 * Math.log(random())) * Math.cos(2 * Math.PI * random())) })
    }
    if (waiting > 0) rule.waited()
    const first = platform.slice(0, workers).reduce((a, b) => (b.left < a.left ? b : a))
    const step = Math.min(first.left, nextTick - now)
    for (const c of platform.slice(0, workers)) c.left -= step
    now += step
    if (first.left <= 1e-9) {
      platform.splice(platform.indexOf(first), 1)
      waiting++
      rule.ended({ startedAt: first.startedAt, at: now, team: 't', kind: 'report', load: first.load, window: first.window, outcome: 'ok' })
    }
    if (now >= nextTick) {
      rule.tick(now, null)
      if (nextTick >= 30_000 && nextTick % 1_000 === 0) knees.push(rule.knee)
      nextTick += 100
    }
  }
  return knees
}

describe('KneeEstimator', () => {
  it('keeps the seats of a platform with workers to spare that its callers hold at the limit, its calls of one cost ending in the order they started', () => {
    // At one load, one worker answering each call ~6 ms after the one before fits these
    // ends as well as 64 workers answering each 400 ms after its start: the likelihood
    // alone drifted to one worker and cut the limit to 3, no call slower, in service and
    // at the start alike.
    for (const [handlingMs, seed] of [[2, 11], [20, 11], [20, 7], [40, 3]]) {
      expect(heldAtTheLimit(handlingMs!, seed!, 60_000, true)).toEqual([64, 64])
      expect(heldAtTheLimit(handlingMs!, seed!, 60_000, false)).toEqual([8, 64])
    }
  })

  // A known miss (docs/governor.md, "What the simulator still finds", seed 1118): each
  // call's calls ahead are the other callers', ending at about the same places in its
  // flight call after call, so a guess below the load fits them with an own time a tenth
  // of the latency and about as regular, and the likelihood puts the knee at 2 or 3 of 12
  // workers (here on seeds 8, 11 and 16 of 16). The calls pass each other by their spread,
  // so the in-order rule does not hold them; counting only passes of another kind keeps 8
  // but leaves a queue of one kind standing (decisions/governor-model.md, "Slower is not
  // fuller on 2 to 4 replicas, traced").
  it.fails('keeps the knee of callers in a closed loop whose calls of one kind pass each other by their spread alone', () => {
    for (const seed of [8, 11, 16]) expect(closedLoopOfOneKind(8, 5_080, 0.05, seed, 120_000), `seed ${seed}`).toBe(8)
  })

  it('learns the workers of a platform that takes calls in order, alone', () => {
    expect(learn(12, 0, 60_000).last).toBe(12)
  })

  // Calls of one cost, none overdue (no fault: tick's overdueSince is null), the platform
  // still for 3 s: every call in flight met the stall, and read as a queue they put the
  // knee at 3 of 12 workers, 6 of 29. The first end after the silence, a call in flight
  // across it, sets aside the calls then in flight (docs/governor.md, "A queue verdict is
  // held").
  it('keeps them through a stall of the platform that cuts nothing', () => {
    for (const workers of [12, 29]) expect(learn(workers, 0, 60_000, { stall: { from: 40_000, to: 43_000 }, dearShare: 1 }).lowest, `the lowest knee from the stall on, ${workers} workers`).toBe(workers)
  })

  // The held verdict (docs/governor.md, "Cruise"): the knee falls on a queue only once every
  // call in flight when the queue first showed has ended and it still shows, so a call that
  // met what made it show (a stall, a step) can delay the fall, never make it. Here the
  // platform loses half its workers at 5 s and the queue first shows at about 20 s: the knee
  // falls to the 6 left at the first decision after then, and with a call of 40 s in flight
  // from 4.5 s, not before that call ended.
  it('lets the knee fall on a queue only once the calls in flight when it first showed have ended', () => {
    const lost = learn(12, 0, 90_000, { loss: { at: 5_000, workers: 6 } })
    expect([lost.last, lost.fell! < 25_000]).toEqual([6, true])
    const held = learn(12, 0, 90_000, { loss: { at: 5_000, workers: 6 }, long: { from: 4_500, to: 44_500 } })
    expect(held.last).toBe(6)
    expect(held.fell, `the long call ended at ${held.longEnded}`).toBeGreaterThan(held.longEnded!)
  })

  // A pool that shrinks (docs/governor.md, "The limit rule": the lead is bounded): 30 s of
  // answers at 12 workers, then 6. The knee follows within 15 s (9 s), whatever the 30 s
  // before weighed: unbounded, their lead held it at 12 for the 30 s after.
  it('follows a pool that shrinks within seconds, whatever was weighed before', () => {
    const shrank = learn(12, 0, 60_000, { loss: { at: 30_000, workers: 6 } })
    // The knee each second from 20 s on (learn's steady): the first second after the resize it reached the new pool.
    const i = shrank.steady.findIndex((k, j) => j >= 10 && k <= 6)
    expect(shrank.last).toBe(6)
    expect(i < 0 ? Infinity : i - 10).toBeLessThan(15)
  })

  // A pool that grows (docs/governor.md, "Cruise": the probe seat again): 30 s at 6 workers,
  // where sure queues at the probe seat took it away, then 12. The knee follows within 15 s
  // (7 s); with the probe seat back only as a queue's lead faded, it stayed at 6 for the minute after.
  it('follows a pool that grows, the probe seat back PROBE_AGAIN after a queue took it', () => {
    const grew = learn(6, 0, 90_000, { loss: { at: 30_000, workers: 12 } })
    // The knee each second from 30 s on (learn's steady).
    expect(grew.steady[0], 'at 6 workers').toBe(6)
    const i = grew.steady.findIndex((k) => k >= 12)
    expect(i < 0 ? Infinity : i, `the knee each second from 30 s: ${grew.steady.join(' ')}`).toBeLessThan(15)
    expect(grew.last).toBe(12)
  })

  // The start's verdict is held alike while its limit is not in use (no call waited for a
  // seat): 6 callers on 4 workers at the start's 8 seats, a call of 20 s among the first;
  // the start ends at the 4 workers, not before that call ended.
  it('ends a start whose limit is not in use on a queue only once the calls in flight when it first showed have ended', () => {
    const held = learn(4, 0, 60_000, { callers: 6, long: { from: 0, to: 20_000 } })
    expect(held.last).toBe(4)
    expect(held.startEnded, `the long call ended at ${held.longEnded}`).toBeGreaterThan(held.longEnded!)
  })

  // Judged as the model bounds it (docs/governor.md, "no standing queue"): at the median,
  // no worker idle and at most one call queued at the platform, so the knee W or W + 1.
  it('learns them beside another replica whose calls it does not see end', () => {
    const { steady } = learn(12, 4, 60_000)
    expect(median(steady), `the knee each second from 20 s: ${steady.join(' ')}`).toBeGreaterThanOrEqual(12)
    expect(median(steady), `the knee each second from 20 s: ${steady.join(' ')}`).toBeLessThanOrEqual(13)
  })

  // A front that answers a stray 503 among many answers is not overloaded: the simulator's
  // shedding fronts refuse 30 % to 90 % of the calls, never one in forty.
  it('halves the limit on overload only where a team draws it: OVERLOAD_SHARE of its answers in a second, one at least', () => {
    const rule = new KneeEstimator({ initial: 16, min: 2, max: 64 })
    rule.adopt(16, 16, 0)
    rule.tick(0, null)
    const second = (from: number, overloads: number) => {
      for (let i = 0; i < 40 + overloads; i++) rule.ended({ startedAt: from, at: from + 10 + i, team: 'a', kind: 'week', load: 8, window: 0, outcome: i < overloads ? 'overload' : 'ok' })
      return [rule.tick(from + 1_000, null)?.move ?? null, rule.limit]
    }
    expect(second(0, 1), 'one overload answer of 41').toEqual([null, 16])
    expect(second(1_000, 3), 'three of 43').toEqual(['fault', 8])
  })

  it('says which calls met a fault: from a FAULT_MS before the limit first halved to the end of the fault, one under way included', () => {
    const rule = new KneeEstimator({ initial: 16, min: 2, max: 64 })
    rule.adopt(16, 16, 0)
    rule.tick(5_000, null)
    for (let i = 0; i < 20; i++) rule.ended({ startedAt: 5_500, at: 5_600 + i, team: 'a', kind: 'week', load: 8, window: 0, outcome: 'overload' })
    expect(rule.tick(6_000, null)?.move).toBe('fault')
    expect(rule.metFault(3_000, 4_900), 'ended before the second the overload came in').toBe(false)
    expect(rule.metFault(3_000, 5_100)).toBe(true)
    expect(rule.metFault(50_000, 50_100), 'the fault still under way').toBe(true)
    rule.ended({ startedAt: 6_500, at: 6_600, team: 'a', kind: 'week', load: 8, window: 0, outcome: 'ok' })
    expect(rule.tick(7_500, null)?.move).toBe('restored')
    expect(rule.metFault(7_600, 7_700), 'started after it ended').toBe(false)
    expect(rule.metFault(7_000, 7_700)).toBe(true)
  })

  it('ends its start with the probe seat when only calls not known short wait beside short ones in flight', () => {
    // 8 calls at the limit, all answered together: room at 8, no queue below it.
    for (const [longMs, limit, phase] of [[4_420, 9, 'cruise'], [null, 16, 'start']] as const) {
      const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
      const windows = Array.from({ length: 8 }, () => rule.started('week', 8))
      rule.waited(longMs)
      for (const window of windows) rule.ended({ startedAt: 0, at: 100, team: 'b', kind: 'week', load: 8, window, outcome: 'ok' })
      rule.tick(1_500, null)
      expect([rule.limit, rule.knee, rule.phase], `longMs ${longMs}`).toEqual([limit, 8, phase])
    }
  })

  // The two-teams bench's fresh row (bench-shapes' views-fresh seeds 1, 7, 14, 28): year-long
  // calls wait beside the dashboard's calls in flight; doubled at 16 on 16 to 19 workers, the
  // seats past W queued year calls ahead of the dashboard's for a year call's time. The start
  // steps by the seats past the level such calls may take beside them, as many as end within
  // H at the level's pace (docs/governor.md, "Start").
  it('steps its start by the limit × H / e where calls of kinds known long waited beside another team\'s short calls in flight since the last decision', () => {
    for (const [besideOthers, limit] of [[true, 9], [false, 16]] as const) {
      const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
      const windows = Array.from({ length: 8 }, () => rule.started('week', 8))
      rule.waited(null)
      rule.waited(4_420, false, 0, besideOthers)
      for (const window of windows) rule.ended({ startedAt: 0, at: 100, team: 'b', kind: 'week', load: 8, window, outcome: 'ok' })
      rule.tick(1_500, null)
      expect([rule.limit, rule.knee, rule.phase], `beside another team's short calls: ${besideOthers}`).toEqual([limit, 8, 'start'])
    }
  })

  // A queue at the probe seat says W is below K + 1, not where below. Here the evidence
  // cannot tell the guesses up to 16 apart (the calls that ran at 11 to 16 untimed, every
  // call ending together), and K stays, within TIE of the likeliest; taken at the tie's
  // lowest it went 16 → 10 (the two-teams bench, views-year-long on a fresh gateway: the
  // dashboard at 49 % of itself alone), and within 2 units of support it kept a K one above
  // W (seed 971: K 13 on 12 workers, 1.5 units below 12) (docs/governor.md, "Cruise").
  it('takes the probe seat away on a queue there, K lower only where the evidence tells the guesses apart', () => {
    const rule = new KneeEstimator({ initial: 16, min: 2, max: 64 })
    rule.adopt(17, 16, 0)
    let at = 0
    for (let round = 0; round < 6; round++, at += 1_000) {
      const windows = Array.from({ length: 10 }, (_, i) => rule.started('week', i + 1))
      windows.forEach((window, i) => rule.ended({ startedAt: at, at: at + 100 + i * 0.01, team: 'b', kind: 'week', load: i + 1, window, outcome: 'ok' }))
    }
    const windows = Array.from({ length: 17 }, (_, i) => rule.started('week', i + 1))
    windows.slice(0, 16).forEach((window, i) => rule.ended({ startedAt: at, at: at + 100 + i * 0.01, team: 'b', kind: 'week', load: i + 1, window, outcome: 'ok', timed: i < 10 }))
    rule.ended({ startedAt: at, at: at + 200, team: 'b', kind: 'week', load: 17, window: windows[16]!, outcome: 'ok' })
    rule.tick(at + 1_500, null)
    expect([rule.limit, rule.knee]).toEqual([16, 16])
  })

  it('puts the knee at a queue at the probe seat at the likeliest guess below it, or keeps it where it is within TIE of that', () => {
    const ll = Float64Array.from([-40, -30, -20.1, -20.3, -20, -21, -20.4, -25])
    expect(probeFall(ll, 7), 'the likeliest 5; the knee 7 within TIE of it').toBe(7)
    expect(probeFall(ll, 6), 'the knee 6 a unit below the likeliest 5').toBe(5)
    expect(probeFall(ll, 4), 'below 5: 3 the likeliest, the knee 4 within TIE').toBe(4)
    expect(probeFall(Float64Array.from([-20, -20 - TIE - 0.01, -30]), 2), 'past TIE: told apart').toBe(1)
  })

  // Seed 954's platform (docs/governor.md, "Cruise"): 59 workers, calls of 350 ms spread
  // 0.26. Over thousands of answers the lean between 59 and 60 wanders past SURE, and room
  // at the probe seat a sure queue had shown at put K at 60 and the limit at 62 (from 44 s,
  // six seconds, here on seed 1 of 8). Room at a level that queued needs twice SURE.
  it('keeps the knee at the workers where the lean a worker past them wanders past SURE at a level that queued', () => {
    const knees = closedLoopPastTheWorkers(59, 72, 350, 0.26, 1, 120_000)
    expect(Math.max(...knees), `the knee each second from 30 s: ${knees.join(' ')}`).toBe(59)
  })

  it('ends its start on a sure queue at the highest guess below its level within TIE of the likeliest there', () => {
    // A flat stretch from 2 to 5: calls that never waited at those loads tell them apart from none.
    const ll = Float64Array.from([-50, -33.3, -33.3, -33.3, -33.5, -40, -45])
    expect(highestTied(ll, 6), 'the likeliest 2; 3 to 5 within TIE of it').toBe(5)
    expect(highestTied(ll, 4), 'below 4: 3').toBe(3)
    expect(highestTied(ll, 7), '6 past TIE of 2').toBe(5)
    expect(highestTied(Float64Array.from([-20, -20 - TIE - 0.01, -30]), 3), 'past TIE: told apart').toBe(1)
  })

  it('ends its start with the probe seat when a team holding no seat waited with a call not known long beside long calls only', () => {
    // 8 year-long calls at the limit, all answered together: room at 8, no queue below it.
    for (const [newcomer, limit, phase] of [[true, 9, 'cruise'], [false, 16, 'start']] as const) {
      const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
      const windows = Array.from({ length: 8 }, () => rule.started('year', 8))
      rule.waited(null, newcomer)
      for (const window of windows) rule.ended({ startedAt: 0, at: 4_400, team: 'a', kind: 'year', load: 8, window, outcome: 'ok' })
      rule.tick(5_000, null)
      expect([rule.limit, rule.knee, rule.phase], `newcomer ${newcomer}`).toEqual([limit, 8, phase])
    }
  })

  it('steps its start by the limit × H / e instead, on one replica, where calls of kinds known long held every seat beside a team holding none', () => {
    // 8 calls of 1 s at the limit; a team holding no seat waited beside them, and at another moment they waited beside its short calls (their time known).
    const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
    const windows = Array.from({ length: 8 }, () => rule.started('year', 8))
    rule.waited(null, true)
    rule.waited(1_000)
    for (const window of windows) rule.ended({ startedAt: 0, at: 1_000, team: 'a', kind: 'year', load: 8, window, outcome: 'ok' })
    rule.tick(1_500, null)
    expect([rule.limit, rule.knee, rule.phase]).toEqual([12, 8, 'start'])
  })

  // The likelihood's moves are of the limit in force: after the start doubles 8 → 16, the
  // answers to calls started before the doubling move nothing; once MIN_CALLS calls started
  // at 16 have answered, it doubles again (docs/governor.md, "Cruise").
  it('moves the limit on the likelihood only once MIN_CALLS calls started since its last move have answered', () => {
    const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
    const answer = (windows: number[], from: number, load: number) => { for (const window of windows) rule.ended({ startedAt: from, at: from + 100, team: 'a', kind: 'week', load, window, outcome: 'ok' }) }
    const [first, before] = [0, 1].map(() => Array.from({ length: 8 }, () => rule.started('week', 8)))
    const limits: number[] = []
    for (const [windows, from, load] of [[first, 0, 8], [before, 2_400, 8], [null, 4_800, 16]] as const) {
      answer(windows ?? Array.from({ length: 8 }, () => rule.started('week', 16)), from, load)
      rule.waited()
      rule.tick(from + 1_400, null)
      limits.push(rule.limit)
    }
    expect(limits).toEqual([16, 16, 32])
  })

  // Seats owed to teams that wait for nothing (dispatch rule 2.3) keep the calls short of the
  // limit: at a limit of 9, 4 seats held back, the calls reach 5 and never fill it. Room
  // shown at every load they reach raises the knee to the limit, as room at the limit does;
  // with no seat held back, room at 5 of 9 leaves it where it is.
  it('raises the knee with room shown at the calls\' reach where seats held back for owed teams keep them short of the limit', () => {
    for (const [heldBack, knee] of [[4, 9], [0, 8]] as const) {
      const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
      rule.adopt(9, 8, 0)
      const windows = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5].map((load) => rule.started('week', load))
      rule.waited(null, false, heldBack)
      for (const window of windows) rule.ended({ startedAt: 0, at: 100, team: 'a', kind: 'week', load: 5, window, outcome: 'ok' })
      rule.tick(1_500, null)
      expect(rule.knee, `${heldBack} seats held back`).toBe(knee)
    }
  })

  // No queue: the calls past the knee make every call slower, so the own times fit every
  // guess of W alike and room shows past it; the answers a second fall there (Little's
  // law), and the knee stays where they were most (docs/governor.md, "Cruise").
  it('keeps the limit within a fifth of the knee of a platform whose calls slow past it, where answers a second fall', () => {
    for (const [knee, costMs, slopeMs] of [[12, 100, 40], [30, 50, 8], [20, 200, 50], [8, 40, 20], [16, 60, 20]] as const) {
      const [lowest, highest] = onCrowdedPlatform(knee, costMs, slopeMs, 90_000)
      expect([lowest >= 0.8 * knee, highest <= 1.2 * knee], `knee ${knee}: the limit ${lowest} to ${highest}`).toEqual([true, true])
    }
  })

  // Room shown doubles the seats past the knee, no further than the first level above it
  // giving FALL less: a doubling held back there goes on from the seats the limit took. Were
  // it to double the seats held back, unseen, the limit leapt 16 seats past the knee once
  // that level's fall faded (the capacity family on three replicas: 29 → 61 on 54 workers,
  // 429s; docs/governor.md, "Cruise").
  it('doubles the seats past the knee from those the limit took, where a fall above the knee held them back', () => {
    for (const [knee, costMs, slopeMs, jitterMs] of [[30, 50, 8, 5], [38, 93, 10, 0], [18, 23, 4, 0]] as const) {
      const grown: number[] = []
      onCrowdedPlatform(knee, costMs, slopeMs, 60_000, { jitterMs, grown })
      const leaps = grown.filter((past, i) => past > 2 * Math.max(1, grown[i - 1] ?? 1))
      expect(leaps, `knee ${knee}: the seats past it at each growth ${grown.join(', ')}`).toEqual([])
    }
  })

  // The start doubles past the knee (16 to 32 on 24), where every call takes 4× as long; a
  // few ms of jitter decide the likeliest w, which in order falls to one or two workers
  // (the scale bench: the limit 3 on 24). The answers a second a level gave bound the
  // queue's verdict (docs/governor.md, "Cruise").
  it('keeps the knee of a platform whose calls slow past it at the workers\' worth of answers a second a level gave, where the start overshoots it', () => {
    for (const jitterMs of [2, 5]) {
      for (const seed of [1, 2]) {
        const [lowest] = onCrowdedPlatform(24, 100, 40, 30_000, { jitterMs, seed, from: 3_000 })
        expect(lowest, `jitter ${jitterMs} ms, seed ${seed}`).toBeGreaterThanOrEqual(12)
      }
    }
  })

  // Across replicas only the learner runs the rule; the others weigh their own answers, the
  // others' ends ahead of each guessed. A replica that starts learning at the knee and its
  // probe seat decides on what it weighs from then on (docs/governor.md, "Across replicas
  // the learner weighs every replica's calls"): here what it weighed before, a queue on 4
  // workers, no longer holds, and without it the knee fell to 11 at its first decision.
  it('decides, once it starts learning at the knee and its probe seat, on the answers it weighs from then on', () => {
    expect([takesOverLearning(false) < 16, takesOverLearning(true)]).toEqual([true, 16])
  })

  // Where the start ended at the ceiling (no verdict set the knee) what the replica weighed
  // before stands: here 16 answers of one worker's queue, the last call ending before the
  // one ahead of it (calls overtake, so the order of ends tells W), move the knee at the
  // first decision.
  it('keeps what it weighed before where it starts learning at the ceiling', () => {
    const fell = (limit: number, knee: number) => {
      const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
      rule.adopt(limit, knee, 0)
      const windows = Array.from({ length: 16 }, (_, i) => rule.started('report', i + 1))
      for (const i of [...Array.from({ length: 14 }, (_, j) => j), 15, 14]) rule.ended({ startedAt: i, at: 100 * (i === 14 ? 16 : i === 15 ? 15 : i + 1), team: 't', kind: 'report', load: i + 1, window: windows[i]!, outcome: 'ok' })
      rule.startLearning(5_000)
      rule.tick(1_700, null)
      return rule.knee < knee
    }
    expect([fell(64, 64), fell(17, 16)]).toEqual([true, false])
  })

  // A replica that takes over starts from the evidence the learner before it wrote with the
  // shared record (docs/governor.md, "Across replicas the learner weighs every replica's
  // calls"): on calls of a second, it weighs few answers of its own before the learner
  // changes again, and with none carried K stayed one past W (seed 1295: learners changing
  // every few seconds on calls of 6.5 s, K 5 on 4 workers for 70 s).
  it('starts learning from the evidence the learner before it carried, where its own answers are few', () => {
    expect([takesOverOnLongCalls(false), takesOverOnLongCalls(true)]).toEqual([5, 4])
  })

  // Across replicas the seats left after a fault may all be on other replicas (seed 2148 with
  // the dispatch by tags alone: at the limit of 2, every answer for 15 s was another
  // replica's, and the learner's fault did not end until another replica took over). An
  // answer of any replica's, as the learner weighs them, says the platform answers again.
  it('ends a fault on an answer of another replica\'s, as the learner weighs every replica\'s calls', () => {
    const rule = new KneeEstimator({ initial: 16, min: 2, max: 64 })
    let now = 0
    rule.shareAnswers(5_000, () => now)
    rule.adopt(17, 16, 0)
    const record = (calls: CallEntry[]) => [{ run: 'r2', calls: encodeCalls(now, calls) }]
    rule.heard(record([]))
    now = 1_000
    expect(rule.pause(now)?.move).toBe('fault')
    now = 1_500
    rule.heard(record([{ startedAt: 1_100, at: 1_200, kind: 'week', outcome: 'overload', timed: true }]))
    now = 2_500
    expect(rule.tick(now, null), 'an error of the other replica\'s: no end').toBeNull()
    rule.heard(record([{ startedAt: 2_000, at: 2_400, kind: 'week', outcome: 'ok', timed: true }]))
    expect([rule.tick(now, null)?.move, rule.limit]).toEqual(['restored', 17])
  })

  // A replica that follows another's limit takes its answers in and judges none (learned-limit.ts).
  // Were its first tick as the learner to judge every answer since it last learned, an outage
  // over before it took over would cut the limit again (2026-12-04: the learner taken over 5 s
  // after an outage's end halved the limit for a FAULT).
  it('judges, as it starts to learn, the second it watched, not the answers of the time it followed', () => {
    const rule = new KneeEstimator({ initial: 16, min: 2, max: 64 })
    rule.adopt(17, 16, 0)
    for (let t = 100; t <= 12_000; t += 100) {
      if (t >= 3_000 && t < 6_000) for (const team of ['a', 'b']) rule.ended({ startedAt: t - 50, at: t, team, kind: 'week', load: 8, window: 0, outcome: 'overload' })
      else rule.ended({ startedAt: t - 50, at: t, team: 'a', kind: 'week', load: 8, window: 0, outcome: 'ok' })
      rule.follows(t)
    }
    expect([rule.tick(12_050, null), rule.limit]).toEqual([null, 17])
  })

  // The calls in flight as a replica starts learning say nothing: where they stand among the
  // others' calls in the merged timeline is not known (seed 1891: their answers ruled out
  // every w up to 30 on 17 workers). Here 16 calls started one after another, at loads 1 to
  // 16, end together 100 ms later: a queue at 1 worker, were they weighed.
  it('weighs nothing of the calls in flight as it starts learning', () => {
    const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
    rule.adopt(17, 16, 0)
    const windows = Array.from({ length: 16 }, (_, i) => rule.started('report', i + 1))
    rule.startLearning(5_000)
    windows.forEach((window, i) => rule.ended({ startedAt: i, at: 100 * (i + 1), team: 't', kind: 'report', load: i + 1, window, outcome: 'ok' }))
    const moves = [1_100, 2_100, 3_100].map((now) => rule.tick(now, null)?.move ?? null)
    expect([moves, rule.knee]).toEqual([[null, null, null], 16])
  })

  // A kind is a team's route, range, splits and campaign count (work-class.ts): a caller makes
  // as many as its reports' shapes. Each one answered twice, past MAX_KINDS of them.
  it('holds MAX_KINDS kinds at most, whatever the kinds answered', () => {
    const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
    for (let i = 0; i < 2 * (MAX_KINDS + 100); i++) {
      const kind = `t\n/api/v1/report/campaigns/get|r${i >> 1}|d|n1`
      rule.ended({ startedAt: 10 * i, at: 10 * i + 5, team: 't', kind, load: 1, window: rule.started(kind, 1), outcome: 'ok' })
    }
    expect(rule.kinds).toHaveLength(MAX_KINDS)
  })

  // The spread of a kind dropped past MAX_KINDS stays in the rule's sums, as a forgotten
  // team's does: a new kind's first answer (its pace's start, no residual) moves no guess.
  // With each kind's Σ of squared residuals dropped with it, w = 1 went from 453 nats behind
  // w = 2 to 75 ahead here, on one answer that says nothing of either.
  it('past MAX_KINDS, keeps the spread of the kind it drops: no guess\'s likelihood moves', () => {
    const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
    const shape = (range: string) => `t\n/api/v1/report/campaigns/get|${range}|d|n1`
    let now = 0
    // The first kind answered often at a spread of a tenth, the others once each at the last moment (a first answer starts its kind's pace: no residual), one call ahead of each.
    const answer = (kind: string, latency: number, step = 200) => {
      const [ahead, call] = [rule.started(shape('ahead'), 1), rule.started(kind, 2)]
      rule.ended({ startedAt: now, at: now + 80, team: 't', kind: shape('ahead'), load: 1, window: ahead, outcome: 'ok' })
      rule.ended({ startedAt: now, at: now + latency, team: 't', kind, load: 2, window: call, outcome: 'ok' })
      now += step
    }
    for (let i = 0; i < 60; i++) answer(shape('r0'), 100 * (0.9 + 0.2 * ((i * 7) % 10) / 10))
    for (let i = 1; i < MAX_KINDS - 1; i++) answer(shape(`r${i}`), 100, 0)
    const before = rule.evidence(now)!.split(';')[1]
    const window = rule.started(shape('new'), 1)
    // Within 100 ms of the answers before it: nothing fades between.
    rule.ended({ startedAt: now, at: now + 50, team: 't', kind: shape('new'), load: 1, window, outcome: 'ok' })
    expect(rule.kinds.includes(shape('r0')), 'the least recently answered kind dropped').toBe(false)
    expect(rule.evidence(now)!.split(';')[1]).toBe(before)
  })

  // Answers come in another order than their calls started: a year's report, started
  // before a replica's other calls, is answered after them all. Its kind is then the one
  // answered last, and the one forgotten past MAX_KINDS is the kind answered first.
  it('past MAX_KINDS, forgets the kind least recently answered, not the one whose call started first', () => {
    const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
    const shape = (range: string) => `t\n/api/v1/report/campaigns/get|${range}|d|n1`
    const year = rule.started(shape('year'), 1)
    for (let i = 0; i < MAX_KINDS; i++) rule.ended({ startedAt: 10 * i + 1, at: 10 * i + 6, team: 't', kind: shape(`r${i}`), load: 2, window: rule.started(shape(`r${i}`), 2), outcome: 'ok' })
    rule.ended({ startedAt: 0, at: 10 * MAX_KINDS, team: 't', kind: shape('year'), load: 1, window: year, outcome: 'ok' })
    expect([rule.kinds.length, rule.kinds.includes(shape('year')), rule.kinds.includes(shape('r0'))]).toEqual([MAX_KINDS, true, false])
  })
})

describe('firstAtOrAfter', () => {
  it('finds what findIndex finds, from an index before which no time is at or after the cut', () => {
    const times = [5, 3, 9, Number.NaN, 12, 7, 15]
    for (const cut of [-Infinity, 0, 4, 6, 9, 10, 13, 16, Number.NaN]) {
      const found = times.findIndex((t) => t >= cut)
      for (let from = 0; from <= (found < 0 ? times.length : found); from++) expect(firstAtOrAfter(times, cut, from), `cut ${cut} from ${from}`).toBe(found)
    }
  })
})
