import { describe, expect, it } from 'vitest'
import { expectKnownMisses } from '../sim/family.js'
import { simulate, type Scenario, type Trace } from '../sim/simulate.js'
import { SETTLE_MS, checkGuarantees, inFlightBound } from '../sim/checks.js'
import { governorWith, newGovernor } from '../sim/new-governor.js'
import type { Behaviour, Report, TeamPlan } from '../sim/teams.js'
import { capacityMisses, capacityShape } from '../sim/capacity-shapes.js'
import { CUT_TRIAL_MS } from '../../src/platform/governor/work-estimates.js'
import { lateStartMiss, lateStartShape } from '../sim/late-start-shapes.js'

// A simulation fails for time only: the fake clock makes its result the same on any machine.
// Its time limit is the CPU it takes alone (process.cpuUsage per test), ten times over for a
// 2-core machine at a load of 20, and twice that again for a loaded run's spread. A limit
// passed leaves its simulation running beside the tests after it: they then run short too.
const onLoadedMachine = (cpuS: number) => cpuS * 1000 * 10 * 2
// The longest here take 2 to 3 s of CPU alone (the year-long callers on 8 to 64 workers 2.9 s).
const SIM_TIMEOUT_MS = onLoadedMachine(3)

// The shapes of issue 51, each measured on the governor of 4c03196 as teams sharing one
// credential would act (docs/decisions/governor-model.md says what that governor did on
// each): a platform of 16 workers with a FIFO queue, a 7-day report of about 130 ms and a
// year by date and campaign of 4.5 s, default settings; team B a dashboard that asks 8
// distinct 7-day reports at once and waits for all of them before its next view.

const WEEK: Report = { name: 'week', costMs: 130 }
const YEAR: Report = { name: 'year', costMs: 4_500 }
const DURATION_MS = 90_000
/** B's throughput is judged from here on: the limit has learned the platform by then. */
const JUDGED_FROM_MS = 30_000

const dashboard: Behaviour = { kind: 'dashboard', users: 1, fanOut: 8, reports: [WEEK], thinkMs: [0, 0] }

function team(name: string, behaviour: Behaviour, replicas = [0]): TeamPlan {
  return { name, weight: 1, behaviour, replicas, from: 0, until: DURATION_MS }
}

function scenario(teams: TeamPlan[], more: Partial<Scenario> = {}): Scenario {
  return { seed: 51, durationMs: DURATION_MS, workers: 16, spread: 0.1, slowness: [], stalls: [], outages: [], shedding: [], replicas: 1, storeStalls: [], teams, ...more }
}

/** Answers per second `team` had from JUDGED_FROM_MS to the end. */
function answersPerSecond(trace: Trace, name: string): number {
  const from = trace.start + JUDGED_FROM_MS
  const answered = trace.records.filter((c) => c.team === name && c.result === 'ok' && c.ended >= from && c.ended < trace.start + DURATION_MS)
  return answered.length / ((DURATION_MS - JUDGED_FROM_MS) / 1000)
}

function failed(trace: Trace): string[] {
  return checkGuarantees(trace)
    .filter((v) => !v.ok)
    .map((v) => `${v.guarantee}: ${v.detail}`)
}

describe('the shapes of issue 51', () => {
  const neighbours: [string, Behaviour][] = [
    ['16 callers of year-long reports', { kind: 'callers', callers: 16, reports: [YEAR], thinkMs: [0, 0] }],
    ['16 callers whose reports fail', { kind: 'callers', callers: 16, reports: [WEEK, YEAR], thinkMs: [0, 0], fail: 'error' }],
    ['16 callers that stop reading their answers', { kind: 'callers', callers: 16, reports: [WEEK, YEAR], thinkMs: [0, 0], holdMs: 10_000 }],
  ]
  // The dashboard alone is one scenario for the three, and a run is the same every time (sim-clock.ts): run once.
  let aloneRun: Promise<Trace> | undefined
  for (const [what, behaviour] of neighbours) {
    it(`a dashboard that waits for all its answers keeps 80 % of its throughput alone beside ${what}`, async () => {
      const alone = answersPerSecond(await (aloneRun ??= simulate(scenario([team('B', dashboard)]), newGovernor)), 'B')
      const trace = await simulate(scenario([team('B', dashboard), team('A', behaviour)]), newGovernor)
      const beside = answersPerSecond(trace, 'B')
      expect(beside / alone, `B: ${beside.toFixed(1)} answers/s beside them, ${alone.toFixed(1)} alone`).toBeGreaterThanOrEqual(0.8)
      expect(failed(trace)).toEqual([])
    })
  }

  it('a team of year-long reports that arrives at once beside a dashboard in service: the queue behind its calls is not taken for silence', async () => {
    // The two-teams bench's shape (bench/scenarios/two-teams.mjs, views-year-long, warm):
    // the sandbox's 40 ms and 12 ms a day, 24 callers of year-long reports arriving 10 s
    // after the dashboard. Every worker soon holds a year's call; the calls past the knee
    // wait seconds at the platform behind them, and no answer comes while they do. The 30 s
    // after they come are judged by the checks' "isolation on arrival" (70.8 % of the
    // dashboard's throughput before with the start doubling to 32 for the year's calls).
    const [week, year, arrives] = [{ name: 'week', costMs: 124 }, { name: 'year', costMs: 4_420 }, 10_000]
    const views: Behaviour = { kind: 'dashboard', users: 1, fanOut: 8, reports: [week], thinkMs: [0, 0] }
    const years: TeamPlan = { ...team('A', { kind: 'callers', callers: 24, reports: [year], thinkMs: [0, 0] }), from: arrives }
    const alone = answersPerSecond(await simulate(scenario([team('B', views)], { spread: 0.02 }), newGovernor), 'B')
    const trace = await simulate(scenario([team('B', views), years], { spread: 0.02 }), newGovernor)
    const beside = answersPerSecond(trace, 'B')
    expect(beside / alone, `B: ${beside.toFixed(1)} answers/s beside them, ${alone.toFixed(1)} alone`).toBeGreaterThanOrEqual(0.8)
    // The platform never failed: once the limit reached its workers, no fault halves it.
    const reached = trace.samples.findIndex((x) => x.limit >= 16)
    const lowest = Math.min(...trace.samples.slice(reached).map((x) => x.limit))
    expect(lowest, 'the lowest limit once it reached 16').toBeGreaterThanOrEqual(16)
    expect(failed(trace)).toEqual([])
  })

  // The same with the dashboard's views 10 to 30 ms apart (a browser's or a bench's round
  // trip). Between two views no short call is in flight for a moment; the dashboard then
  // holds and waits for nothing, its last call short and ended within the lending horizon,
  // and counts as a short call in flight (docs/governor.md, "Start"). Read as "a short call
  // waited", that moment doubled the start 16 → 32 for the year's calls and queued 16 of
  // them at the platform (the two-teams bench, views-year-long, warm: 25 calls at the
  // platform for 16 workers, the views' p95 4.5 s).
  it('the same with 10 to 30 ms between the dashboard\'s views: the start does not double for the year\'s calls', async () => {
    const [week, year, arrives] = [{ name: 'week', costMs: 124 }, { name: 'year', costMs: 4_420 }, 10_000]
    const views: Behaviour = { kind: 'dashboard', users: 1, fanOut: 8, reports: [week], thinkMs: [10, 30] }
    const years: TeamPlan = { ...team('A', { kind: 'callers', callers: 24, reports: [year], thinkMs: [0, 0] }), from: arrives }
    const trace = await simulate(scenario([team('B', views), years], { spread: 0.02 }), newGovernor)
    const atPlatform = Math.max(...trace.samples.filter((x) => x.at - trace.start >= arrives).map((x) => x.busy + x.queued))
    expect(atPlatform, 'the most calls at the platform once the year\'s callers came').toBeLessThanOrEqual(inFlightBound(16))
    expect(failed(trace)).toEqual([])
  })

  it('year-long callers arriving beside a dashboard in service on 8 to 64 workers: every guarantee holds, the 30 s after they came judged', async () => {
    // The bench's shape around its numbers: the limit grows for long calls no faster than
    // the short ones in flight bear (docs/governor.md, "The limit rule").
    const [week, year] = [{ name: 'week', costMs: 124 }, { name: 'year', costMs: 4_420 }]
    const broken: string[] = []
    for (const workers of [8, 16, 32, 48, 64]) {
      for (const callers of [24, 64]) {
        for (const fanOut of [4, 8]) {
          const views: Behaviour = { kind: 'dashboard', users: 1, fanOut, reports: [week], thinkMs: [0, 0] }
          const years: TeamPlan = { ...team('A', { kind: 'callers', callers, reports: [year], thinkMs: [0, 0] }), from: 10_000 }
          const trace = await simulate(scenario([team('B', views), years], { workers, spread: 0.02 }), newGovernor)
          broken.push(...failed(trace).map((f) => `${workers} workers, ${callers} callers, 1×${fanOut}: ${f}`))
        }
      }
    }
    expect(broken).toEqual([])
  }, SIM_TIMEOUT_MS)

  // The two-teams bench's fresh order (views-year-long, cold; docs/decisions/governor-model.md,
  // "The start with long calls"): the year's callers start alone on a fresh gateway and the
  // start doubles for them (no short call to hold up), 8 to 16 as their first calls answer.
  // The dashboard arrives at 5 s and waits for its share as year calls end: the start ends
  // there (docs/governor.md, "Start"), where a doubling to 32 queued 16 year calls at the 16
  // workers and each of the dashboard's views behind them (63 % of itself alone).
  it('a fresh gateway: year-long callers first, a dashboard 5 s later: no queue of long calls at the platform, and the dashboard keeps 80 % of itself alone', async () => {
    const [week, year, arrives, judged] = [{ name: 'week', costMs: 124 }, { name: 'year', costMs: 4_420 }, 5_000, 30_000]
    const views: TeamPlan = { ...team('B', { kind: 'dashboard', users: 1, fanOut: 8, reports: [week], thinkMs: [0, 0] }), from: arrives }
    const years = team('A', { kind: 'callers', callers: 24, reports: [year], thinkMs: [0, 0] })
    const rate = (trace: Trace) => trace.records.filter((c) => c.team === 'B' && c.result === 'ok' && c.ended - trace.start >= arrives && c.ended - trace.start < arrives + judged).length / (judged / 1000)
    const alone = rate(await simulate(scenario([views], { spread: 0.02 }), newGovernor))
    const trace = await simulate(scenario([views, years], { spread: 0.02 }), newGovernor)
    const atPlatform = Math.max(...trace.samples.filter((x) => x.at - trace.start >= arrives).map((x) => x.busy + x.queued))
    expect(atPlatform, 'the most calls at the platform once the dashboard came').toBeLessThanOrEqual(inFlightBound(16))
    expect(rate(trace) / alone, `B: ${rate(trace).toFixed(1)} answers/s over its first 30 s, ${alone.toFixed(1)} alone`).toBeGreaterThanOrEqual(0.8)
    expect(failed(trace)).toEqual([])
  })

  it('a platform that gets 3× slower over a minute keeps its workers busy', async () => {
    const slower = scenario([team('B', dashboard), team('C', { kind: 'callers', callers: 32, reports: [WEEK], thinkMs: [0, 0] })], { slowness: [[20_000, 1], [80_000, 3]] })
    const trace = await simulate(slower, newGovernor)
    expect(failed(trace)).toEqual([])
    // The limit never sits at its minimum with the workers idle.
    const late = trace.samples.filter((s) => s.at - trace.start >= 50_000)
    const busy = late.reduce((sum, s) => sum + s.busy, 0) / late.length
    expect(busy, `workers busy on average from 50 s: ${busy.toFixed(1)} of 16`).toBeGreaterThanOrEqual(0.9 * 16)
  })

  describe('a dashboard beside 32 callers of week-long reports, the platform 3× slower over a minute (the bench\'s views-slower, judged at 3×)', () => {
    // The bench's row: 20 s at 1×, 60 s to 3×, 30 s at 3×, judged over those 30 s against
    // the dashboard alone on a platform 3× slower throughout (66 % on the bench, 80 % the
    // target). The simulator gives the same share at 3× and at 1×: the slowdown costs the
    // dashboard nothing. What it loses is the seats it lends between its answers: each
    // answer frees a seat owed to it, a short call of the other team takes it (dispatch
    // 2.2), and the dashboard's next view waits for those calls to end (within H, as the
    // isolation guarantee says, but a view is one such call's time).
    const views: Behaviour = { kind: 'dashboard', users: 1, fanOut: 8, reports: [{ name: 'week', costMs: 124 }], thinkMs: [0, 0] }
    const weeks = { ...team('C', { kind: 'callers', callers: 32, reports: [{ name: 'week', costMs: 124 }], thinkMs: [0, 0] }), from: 10_000 }
    const judged = (trace: Trace) => trace.records.filter((c) => c.team === 'B' && c.result === 'ok' && c.ended - trace.start >= 80_000 && c.ended - trace.start < 110_000).length / 30
    const share = async (slowness: Scenario['slowness'], alone: Scenario['slowness']) => {
      const more = { durationMs: 110_000, spread: 0.02 }
      const b = { ...team('B', views), until: 110_000 }
      const beside = await simulate(scenario([b, { ...weeks, until: 110_000 }], { ...more, slowness }), newGovernor)
      return { share: judged(beside) / judged(await simulate(scenario([b], { ...more, slowness: alone }), newGovernor)), trace: beside }
    }
    // Both tests judge the same two runs at 3×: run once.
    let atThreeTimes: ReturnType<typeof share> | undefined
    const slowerShare = () => (atThreeTimes ??= share([[20_000, 1], [80_000, 3]], [[0, 3]]))
    it('keeps at 3× the share of itself alone it keeps at 1×, and every guarantee holds', async () => {
      const slower = await slowerShare()
      const steady = await share([], [])
      expect(Math.abs(slower.share / steady.share - 1), `at 3×: ${(100 * slower.share).toFixed(0)} % of alone at 3×; at 1×: ${(100 * steady.share).toFixed(0)} %`).toBeLessThanOrEqual(0.1)
      expect(failed(slower.trace)).toEqual([])
    })
    // The bench's target, missed at any speed: a known miss (docs/decisions/governor-model.md).
    it.fails('keeps 80 % of itself alone at 3×', async () => {
      expect((await slowerShare()).share).toBeGreaterThanOrEqual(0.8)
    })
  })

  // A gateway starved of its core (docs/governor.md, "The gateway's own time"): the bench's
  // views-slower row on a machine at load 5 to 7 read the knee at 2 of 16 workers three
  // times in 90 s, every call a week's report. Here the gateway's loop wakes for an answer
  // late, up to 400 ms on average at the machine's busiest, three times in the run, and
  // handles every answer come by then in one bunch, idle between bunches (gateway-loop.ts).
  // The lateness is the gateway's own and idles workers whatever the limit: the learned
  // limit is judged against the same run with the limit held at W (the *slower is not
  // fuller* bound: 90 % of what W workers do), and is not to sit below W. Without the wakes'
  // lateness read (answer-timing.ts), 69.9 % of the held run's worker-s and the limit below
  // 16 in 51 % of samples from 10 s, down to 4; with it, 100.1 % and never below 16.
  it('a gateway starved of its core three times in 90 s: the week-report cruise keeps 90 % of the work of a limit held at W, and the limit stays at W', async () => {
    const weeks: Behaviour = { kind: 'callers', callers: 32, reports: [WEEK], thinkMs: [0, 0] }
    const gatewayLate: Scenario['slowness'] = [[10_000, 0], [20_000, 400], [30_000, 0], [45_000, 400], [55_000, 0], [70_000, 400], [80_000, 0]]
    const starved = scenario([team('B', dashboard), team('C', weeks)], { spread: 0.02, gatewayLate })
    const learned = await simulate(starved, newGovernor)
    const held = await simulate(starved, governorWith({ adaptive: false, maxConcurrent: 16 }))
    const work = (trace: Trace) => [...trace.workBySecond.values()].reduce((sum, seconds) => sum + seconds.slice(SETTLE_MS / 1000, DURATION_MS / 1000).reduce((a, b) => a + (b ?? 0), 0), 0)
    const judged = learned.samples.filter((x) => x.at - learned.start >= SETTLE_MS)
    const below = judged.filter((x) => x.limit < 16).length / judged.length
    expect(work(learned) / work(held), `worker-s from ${SETTLE_MS / 1000} s: ${(work(learned) / 1000).toFixed(1)} learned, ${(work(held) / 1000).toFixed(1)} held at 16`).toBeGreaterThanOrEqual(0.9)
    expect(below, `the limit below 16 in ${(100 * below).toFixed(1)} % of samples from ${SETTLE_MS / 1000} s, its lowest ${Math.min(...judged.map((x) => x.limit))}`).toBeLessThanOrEqual(0.02)
  })

  // The capacity bench's platform (bench/scenarios/capacity.mjs), which its three replicas
  // miss on every build since 2026-11-26: no queue, each call 100 ms while 12 are in flight
  // and 40 ms slower for each past 12 (as it arrives), 429 at once past 20 (pauses, in
  // front of the governor, hold back whoever drew it); 120 callers of one team. Its
  // targets: the limit and the calls at the platform within 20 % of the knee from 30 s on,
  // under 1 % of calls 429. The model's platform takes calls in order at W workers, and here
  // the calls past 12 make every call slower rather than wait, so under every guess the own
  // times fit as well and room is shown past the knee; on one replica the answers a second
  // against the calls in flight put the knee at 12 (docs/governor.md, "Cruise": 120 a second
  // at 12, 93 at 13). On three the likelihood shows no room (every replica's calls end apart
  // and in order), and the limit dips to 80 % of itself to read the fall against a level
  // below it, put back where that level gives no more.
  describe('the capacity bench\'s platform, whose calls slow past 12 in flight and that answers 429 past 20', () => {
    const BAND = [9.6, 14.4]
    const capacity = (replicas: number): Scenario => ({
      ...scenario([{ ...team('A', { kind: 'callers', callers: 120, reports: [{ name: 'report', costMs: 100 }], thinkMs: [0, 0] }), replicas: Array.from({ length: replicas }, (_, i) => i), until: 40_000 }]),
      durationMs: 40_000,
      workers: 20,
      spread: 0,
      replicas,
      capacity: { knee: 12, slopeMs: 40, refuseAbove: 20 },
    })
    const run = (replicas: number) => {
      const trace = simulate(capacity(replicas), newGovernor)
      return async () => {
        const t = await trace
        const late = t.samples.filter((x) => x.at - t.start >= 30_000)
        const sent = t.records.filter((c) => c.status !== null)
        const out = late.filter((x) => x.limit < BAND[0]! || x.limit > BAND[1]! || x.busy < BAND[0]! || x.busy > BAND[1]!)
        return { out: out.map((x) => `${((x.at - t.start) / 1000).toFixed(1)} s: limit ${x.limit}, at the platform ${x.busy}`).slice(0, 5), refused: sent.filter((c) => c.status === 429).length / sent.length, sent: sent.length }
      }
    }
    it('one replica: the limit and the calls at the platform in the band from 30 s, under 1 % of calls 429', async () => {
      const { out, refused, sent } = await run(1)()
      expect(out).toEqual([])
      expect(refused, `${(100 * refused).toFixed(1)} % of ${sent} calls answered 429`).toBeLessThan(0.01)
    })
    let three: ReturnType<ReturnType<typeof run>> | undefined
    const onThree = () => (three ??= run(3)())
    it('3 replicas: the limit and the calls at the platform in the band from 30 s', async () => {
      expect((await onThree()).out).toEqual([])
    })
    // The start's doubling 16 → 32 at 1.6 s passes the refusal on every replica; the
    // learner's first 429s take its limit back to what the platform took at once, so the
    // seats past 20 do not turn over until its next move (1.5 % of the calls 429 without:
    // docs/decisions/governor-model.md, "The start's limit back to what the platform took").
    it('3 replicas: under 1 % of calls 429', async () => {
      const { refused, sent } = await onThree()
      expect(refused, `${(100 * refused).toFixed(1)} % of ${sent} calls answered 429`).toBeLessThan(0.01)
    })
    // Three of the 40 seeded shapes of test/slow/capacity-shapes.test.ts, the quickest to run:
    // knees of 9, 6 and 6, calls of 356, 90 and 641 ms (35, a knee of 4, is a known miss there).
    it('one replica, seeded shapes of it (knee, cost, slope and refusal drawn): the same targets', async () => {
      const misses: string[] = []
      for (const seed of [8, 19, 39]) misses.push(...(await capacityMisses(capacityShape(seed))))
      expect(misses).toEqual([])
    })
    // The seeded shapes on three replicas: test/slow/capacity-shapes.test.ts (all 40).
  })

  it('reports that run past their deadline are charged the platform time they take', async () => {
    const cut: Behaviour = { kind: 'callers', callers: 16, reports: [YEAR], thinkMs: [0, 0], deadlineMs: 3_000 }
    const trace = await simulate(scenario([team('B', dashboard), team('A', cut)]), newGovernor)
    expect(failed(trace)).toEqual([])
    const work = (trace.workMs.get('A') ?? 0) / 1000
    const charged = trace.seatSeconds.get('A') ?? 0
    expect(work, `A: ${work.toFixed(1)} worker-s at the platform, charged ${charged.toFixed(1)} seat-s`).toBeLessThanOrEqual(1.05 * charged)
  })

  it('a kind answered within its deadline that becomes slower than its deadline and the watch is sent but for a trial each CUT_TRIAL_MS, every call charged', async () => {
    // A's year reports take 4.5 s, within their 6 s deadline, until the platform is ten
    // times slower at 20 s: 45 s, past the deadline and the watch (36 s), never answered.
    // The first calls at 10× meet the slowdown as a fault (the platform's silence) and
    // teach nothing; the next are cut, and once CUT_CONFIRMS of them stand the kind is refused.
    const slowing: Behaviour = { kind: 'callers', callers: 8, reports: [YEAR], thinkMs: [0, 0], deadlineMs: 6_000 }
    const durationMs = 180_000
    const trace = await simulate(scenario([{ ...team('B', dashboard), until: durationMs }, { ...team('A', slowing), until: durationMs }], { durationMs, slowness: [[20_000, 1], [20_001, 10]] }), newGovernor)
    expect(failed(trace).filter((f) => f.startsWith('nothing uncharged'))).toEqual([])
    // Over the last two CUT_TRIAL_MS, A's calls sent are the trials.
    const judged = trace.start + durationMs - 2 * CUT_TRIAL_MS
    const sent = trace.records.filter((c) => c.team === 'A' && c.seated !== null && c.seated >= judged).length
    expect(sent, 'A\'s calls sent over the last two CUT_TRIAL_MS').toBeLessThanOrEqual(3)
  })

  it('a team spread over 3 replicas gets the worker-seconds of an equal team on one', async () => {
    const busy: Behaviour = { kind: 'callers', callers: 16, reports: [WEEK, YEAR], thinkMs: [0, 0] }
    const trace = await simulate(scenario([team('spread', busy, [0, 1, 2]), team('single', busy, [0])], { replicas: 3 }), newGovernor)
    expect(failed(trace)).toEqual([])
  })

  // The scale bench's shape (bench/scenarios/scale.mjs): 100 callers of one team spread
  // over many replicas, every call alike, 24 workers. The sweep draws 2 to 4 replicas. On 10
  // and on 50 the learner weighs every replica's calls and keeps the workers busy (on 50
  // since room shown short of the limit leaves the knee where it is: docs/decisions/governor-model.md,
  // "The limit rule smaller, and a queue verdict held").
  const scaled = (replicas: number): Scenario => ({
    ...scenario([{ ...team('A', { kind: 'callers', callers: 100, reports: [{ name: 'call', costMs: 100 }], thinkMs: [0, 0] }), replicas: Array.from({ length: replicas }, (_, i) => i), until: 30_000 }]),
    durationMs: 30_000,
    workers: 24,
    replicas,
  })
  it('one team on one replica keeps the workers busy', async () => {
    const trace = await simulate(scaled(1), newGovernor)
    expect(failed(trace).filter((f) => f.startsWith('work-conserving'))).toEqual([])
  })
  // 1.3 s of CPU alone.
  it('one team over 10 replicas keeps the workers busy', async () => {
    const trace = await simulate(scaled(10), newGovernor)
    expect(failed(trace).filter((f) => f.startsWith('work-conserving'))).toEqual([])
  }, onLoadedMachine(1.5))
  // 5.0 s of CPU alone (the lease plan of 50 replicas).
  it('one team over 50 replicas keeps the workers busy', async () => {
    const trace = await simulate(scaled(50), newGovernor)
    expect(failed(trace).filter((f) => f.startsWith('work-conserving'))).toEqual([])
  }, onLoadedMachine(5))

  // The dashboard-noisy bench's stand-in (bench/dashboard-origin.mjs): every call answered
  // after the same 400 ms, no queue up to 64 in flight, so calls end in the order they
  // started; 200 callers arrive over 200 ms (teams.ts), and a fresh gateway's first eight
  // answers come apart. Under w = 1 their own times are the gaps between ends, and without
  // the in-order guard armed from the first answer the start ended at its first decision
  // (the limit 3 or 4 at 0.5 s, held there to the end on one of these six seeds, 64 reached
  // at 7.5 to 13.5 s on the others: docs/decisions/governor-model.md, "A fresh start reads
  // calls as ending in order"). The sweep draws no such platform (its spread is 0.05 at least).
  it('a fresh gateway on a platform of one constant cost and no queue, its callers arriving over 200 ms: the start reaches the ceiling and the limit stays there', async () => {
    const broken: string[] = []
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const callers: Behaviour = { kind: 'callers', callers: 200, reports: [{ name: 'view', costMs: 400 }], thinkMs: [0, 0] }
      const trace = await simulate({ ...scenario([{ ...team('B', callers), until: 30_000 }], { seed, workers: 64, spread: 0 }), durationMs: 30_000 }, newGovernor)
      const reached = trace.samples.findIndex((x) => x.limit >= 64)
      const at = reached < 0 ? Infinity : trace.samples[reached]!.at - trace.start
      const lowest = reached < 0 ? 0 : Math.min(...trace.samples.slice(reached).map((x) => x.limit))
      if (at > 4_000 || lowest < 64) broken.push(`seed ${seed}: the limit reached 64 at ${(at / 1000).toFixed(1)} s, ${lowest} at least after`)
      broken.push(...failed(trace).map((f) => `seed ${seed}: ${f}`))
    }
    expect(broken).toEqual([])
  }, SIM_TIMEOUT_MS)

  // The dashboard family's trace 7 (docs/benchmarks.md, "The family now"): a platform of 1,348
  // ms calls spread by σ 0.28 and workers to spare, 67 users, one replica on a busy machine,
  // its limit held at 3 for 14 s. In the simulator, 400 workers, 15 callers thinking 0 to 1.5
  // s, the loop 30 or 100 ms late: the start's held queue verdict took the limit 16 → 6 and
  // 16 → 3 (seed 7; on time, none). The start had weighed only the answers its late loop read
  // alone, the calls that ended after those ahead of them, which fit a queue; the answers read
  // in bunches, which overtook calls ahead of them and rule a queue out, it set aside whole
  // (docs/governor.md, "The gateway's own time": an answer read late still tells its place
  // among the ends).
  it('trace 7\'s shape, the loop 30 and 100 ms late: the limit stays at 16 for its 15 callers', async () => {
    const broken: string[] = []
    for (const lateMs of [30, 100]) {
      const callers: Behaviour = { kind: 'callers', callers: 15, reports: [{ name: 'view', costMs: 1_348 }], thinkMs: [0, 1_500] }
      const trace = await simulate({ ...scenario([{ ...team('A', callers), until: 60_000 }], { seed: 7, workers: 400, spread: 0.28, gatewayLate: [[0, lateMs]] }), durationMs: 60_000 }, newGovernor)
      const lowest = Math.min(...trace.samples.filter((x) => x.at - trace.start >= 10_000).map((x) => x.limit))
      if (lowest < 16) broken.push(`the loop ${lateMs} ms late: the limit ${lowest} at least from 10 s`)
    }
    expect(broken).toEqual([])
  }, SIM_TIMEOUT_MS)

  // Its family, 60 seeded shapes (test/sim/late-start-shapes.ts): 18 broke *work-conserving*
  // before the answers read late told their place among the ends (8, 9, 14, 16, 17, 18, 24,
  // 26, 28, 31, 41, 44, 45, 47, 50, 54, 55, 60). The known miss: 50, where the timed answers,
  // read alone, still lean 3.2 nats to a knee of 13 on 26 callers thinking (the limit 14 from
  // 26 s, calls waiting beside idle workers in 14 % of the samples).
  it('the family of trace 7\'s shape, 60 seeded: work-conserving on every seed but the known miss, and that still misses', async () => {
    const KNOWN_MISSES = [50]
    await expectKnownMisses(60, KNOWN_MISSES, (seed) => lateStartMiss(lateStartShape(seed)))
  }, SIM_TIMEOUT_MS)
})
