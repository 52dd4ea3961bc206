import { Random } from './random.js'
import type { Scenario, Slowness } from './simulate.js'
import type { Behaviour, Report, TeamPlan } from './teams.js'

/**
 * A random scenario from one seed: a platform of 4 to 64 workers whose reports cost
 * from tens of milliseconds to seconds (two orders of magnitude between the cheapest
 * and the dearest), a platform event or none (a slow drift, a step, a stall, an outage,
 * a front that sheds load), now and then a throttle of the platform's (its 429s), answers
 * lost on the way back or its pool resized, and one
 * to four teams drawn from the behaviours real teams have: dashboards that wait for all
 * their answers, callers that think, long reports, bursts, callers that hang up,
 * deadlines shorter than the work, reports that fail, answers left unread. No shape is the benchmark's: every number is drawn.
 */
export function randomScenario(seed: number): Scenario {
  const r = new Random(seed)
  const workers = Math.round(r.logUniform(4, 64))
  const cheapest = r.logUniform(20, 300)
  const kinds = r.int(2, 4)
  const reports: Report[] = Array.from({ length: kinds }, (_, i) => ({
    name: `k${i}`,
    costMs: Math.round(Math.min(8_000, i === 0 ? cheapest : i === kinds - 1 ? cheapest * r.uniform(30, 100) : cheapest * r.logUniform(1, 30))),
  }))
  reports.sort((a, b) => a.costMs - b.costMs)
  const short = reports.filter((k) => k.costMs <= 500)
  const durationMs = 90_000
  const scenario: Scenario = {
    seed,
    durationMs,
    workers,
    spread: r.uniform(0.05, 0.3),
    slowness: [],
    stalls: [],
    outages: [],
    shedding: [],
    replicas: r.chance(0.3) ? r.int(2, 4) : 1,
    storeStalls: [],
    teams: [],
  }
  const at = r.uniform(30_000, 50_000)
  switch (r.pick(['none', 'none', 'drift', 'step', 'stall', 'outage', 'shedding'] as const)) {
    case 'drift':
      scenario.slowness = [[at, 1], [at + r.uniform(20_000, 40_000), r.uniform(1.5, 4)]] satisfies Slowness
      break
    case 'step':
      scenario.slowness = [[at, 1], [at + 1, r.uniform(1.5, 4)]]
      break
    case 'stall':
      scenario.stalls = [{ from: at, to: at + r.uniform(3_000, 15_000) }]
      break
    case 'outage':
      scenario.outages = [{ from: at, to: at + r.uniform(3_000, 15_000) }]
      break
    case 'shedding':
      scenario.shedding = [{ from: at, to: at + r.uniform(5_000, 15_000), p: r.uniform(0.3, 0.9) }]
      break
    case 'none':
      break
  }
  const teams = r.int(1, 4)
  for (let i = 0; i < teams; i++) {
    const behaviour = randomBehaviour(r, workers, reports, short.length > 0 ? short : [reports[0] as Report])
    const late = i > 0 && r.chance(0.3)
    scenario.teams.push({
      name: `t${i}`,
      weight: r.pick([1, 1, 1, 2, 3]),
      behaviour,
      replicas: Array.from({ length: scenario.replicas }, (_, k) => k).filter((k) => scenario.replicas === 1 || k === i % scenario.replicas || r.chance(0.5)),
      from: late ? r.uniform(10_000, 40_000) : 0,
      until: r.chance(0.2) ? r.uniform(60_000, durationMs) : durationMs,
    } satisfies TeamPlan)
  }
  if (scenario.replicas > 1) {
    if (r.chance(0.3)) {
      const from = r.uniform(20_000, 60_000)
      scenario.storeStalls = [{ from, to: from + r.uniform(1_000, 15_000) }]
    }
    // Twins: two equal busy teams, one spread over every replica, one on a single replica,
    // asking the same reports at the same costs in the same order (common random numbers).
    if (r.chance(0.5)) {
      const behaviour: Behaviour = { kind: 'callers', callers: r.int(workers, 2 * workers), reports: someOf(r, reports), thinkMs: [0, 0] }
      const all = Array.from({ length: scenario.replicas }, (_, k) => k)
      scenario.teams.push({ name: 'spread', weight: 1, behaviour, replicas: all, from: 0, until: durationMs, commonAsks: 'twins' }, { name: 'single', weight: 1, behaviour, replicas: [r.int(0, scenario.replicas - 1)], from: 0, until: durationMs, commonAsks: 'twins' })
    }
  }
  // Now and then a gateway starved of its core (a busy node, a pod at its CPU limit): its
  // loop wakes late for answers as the machine's load rises and falls (gateway-loop.ts).
  // Drawn last, so that no other seed's shape moves.
  if (r.chance(STARVED_SHARE)) {
    const [from, rise] = [r.uniform(20_000, 50_000), r.uniform(5_000, 15_000)]
    scenario.gatewayLate = [[from, 0], [from + rise, r.logUniform(20, 400)], [from + 2 * rise, 0]]
  }
  // Now and then the platform's Laravel throttle binds for a while (its limit lowered, or a
  // route's limiter): the credential's calls, or one team's on one route, past `limit` in a
  // window are answered 429. Drawn after every other draw, so that no other seed's shape moves.
  if (r.chance(THROTTLED_SHARE)) scenario.throttle = randomThrottle(r, scenario, reports)
  // Now and then answers are lost on the way back for a while (connections dropped in
  // silence): a call's work is done and its answer never comes. Drawn last of all.
  if (r.chance(LOSING_SHARE)) {
    const from = r.uniform(20_000, 40_000)
    scenario.losing = [{ from, to: from + r.uniform(5_000, 20_000), p: r.logUniform(0.002, 0.1) }]
  }
  // Now and then the platform's pool is resized for a while (another tenant's work takes
  // workers, or the pool is scaled down or up): from a third to three times its workers,
  // back when the span ends (past the run's end: never). Drawn last of all.
  if (r.chance(RESIZED_SHARE)) {
    const from = r.uniform(20_000, 45_000)
    const drawn = Math.max(1, Math.round(workers * r.logUniform(1 / 3, 3)))
    scenario.resized = [{ from, to: from + r.uniform(15_000, 50_000), workers: drawn === workers ? workers + 1 : drawn }]
  }
  return scenario
}

/** The share of the sweep's scenarios whose platform's pool is resized for a while. */
const RESIZED_SHARE = 0.1

/** The share of the sweep's scenarios that lose answers for a while. */
const LOSING_SHARE = 0.1

/** The share of the sweep's scenarios whose platform throttles for a while. */
const THROTTLED_SHARE = 0.1

/**
 * A throttle drawn to bind where the teams ask enough: in force 10 to 30 s from 20 to 40 s into the run, a window of 5 to
 * 60 s (as likely 5 to 15 s as 20 to 60 s), its limit 0.5 to 0.9 of what the workers it
 * throttles could answer in a window (every worker at the mean cost of the reports asked,
 * for the credential; for one team's route, its part of the team's calls at once, at most
 * the team's even part of the workers, at that report's cost).
 */
function randomThrottle(r: Random, s: Scenario, reports: Report[]): NonNullable<Scenario['throttle']> {
  const from = r.uniform(20_000, 40_000)
  const to = from + r.uniform(10_000, 30_000)
  const windowMs = Math.round(r.logUniform(5, 60)) * 1000
  const share = r.uniform(0.5, 0.9)
  if (r.chance(0.5)) {
    const asked = reports.filter((k) => s.teams.some((t) => t.behaviour.reports.includes(k)))
    const meanCost = asked.reduce((sum, k) => sum + k.costMs, 0) / asked.length
    return { from, to, windowMs, limit: Math.max(1, Math.round((share * s.workers * windowMs) / meanCost)) }
  }
  const team = r.pick(s.teams)
  const report = r.pick(team.behaviour.reports)
  const b = team.behaviour
  const atOnce = Math.min(s.workers / s.teams.length, b.kind === 'dashboard' ? b.users * b.fanOut : b.kind === 'callers' ? b.callers : b.size)
  const onRoute = atOnce / b.reports.length
  return { from, to, windowMs, limit: Math.max(1, Math.round((share * onRoute * windowMs) / report.costMs)), only: { team: team.name, route: report.name } }
}

/** The share of the sweep's scenarios whose gateway is starved of its core. */
const STARVED_SHARE = 0.05

/** Some of `from`, one at least. */
function someOf(r: Random, from: Report[]): Report[] {
  return from.filter(() => r.chance(0.6)).concat(r.pick(from))
}

function randomBehaviour(r: Random, workers: number, all: Report[], short: Report[]): Behaviour {
  const some = (from: Report[]) => someOf(r, from)
  switch (r.pick(['dashboard', 'dashboard', 'callers', 'callers', 'long', 'bursts', 'hangups', 'deadlines', 'failing', 'unread'] as const)) {
    case 'dashboard':
      return { kind: 'dashboard', users: r.int(1, 3), fanOut: r.int(1, Math.max(1, Math.min(12, Math.floor(workers / 2)))), reports: some(short), thinkMs: [0, r.uniform(0, 2000)] }
    case 'callers':
      return { kind: 'callers', callers: r.int(2, 2 * workers), reports: some(all), thinkMs: [0, r.uniform(0, 500)] }
    case 'long':
      return { kind: 'callers', callers: r.int(2, workers), reports: [all.at(-1) as Report], thinkMs: [0, 0] }
    case 'bursts':
      return { kind: 'bursts', everyMs: r.uniform(2_000, 10_000), size: r.int(Math.ceil(workers / 2), 2 * workers), reports: some(all) }
    case 'hangups':
      return { kind: 'callers', callers: r.int(2, 2 * workers), reports: some(all), thinkMs: [0, 200], hangUpMs: r.uniform(100, 3_000) }
    case 'deadlines': {
      const dear = all.at(-1) as Report
      return { kind: 'callers', callers: r.int(2, workers), reports: some(all), thinkMs: [0, 200], deadlineMs: Math.round(dear.costMs * r.uniform(0.3, 0.9)) }
    }
    case 'failing':
      return { kind: 'callers', callers: r.int(2, workers), reports: some(all), thinkMs: [0, 200], fail: 'error' }
    case 'unread':
      return { kind: 'callers', callers: r.int(1, Math.max(1, Math.floor(workers / 2))), reports: some(short), thinkMs: [0, 500], holdMs: 10_000 }
  }
}

/** One line that says what a scenario is. */
export function describeScenario(s: Scenario): string {
  const events = [
    s.slowness.length ? `slowness ${s.slowness.map(([t, k]) => `${(t / 1000).toFixed(0)}s×${k.toFixed(2)}`).join('→')}` : '',
    ...s.stalls.map((x) => `stall ${(x.from / 1000).toFixed(0)}–${(x.to / 1000).toFixed(0)}s`),
    ...s.outages.map((x) => `outage ${(x.from / 1000).toFixed(0)}–${(x.to / 1000).toFixed(0)}s`),
    ...s.shedding.map((x) => `503s p=${x.p.toFixed(2)} ${(x.from / 1000).toFixed(0)}–${(x.to / 1000).toFixed(0)}s`),
    ...(s.losing ?? []).map((x) => `answers lost p=${x.p.toFixed(3)} ${(x.from / 1000).toFixed(0)}–${(x.to / 1000).toFixed(0)}s`),
    ...(s.resized ?? []).map((x) => `${x.workers} workers ${(x.from / 1000).toFixed(0)}–${(x.to / 1000).toFixed(0)}s`),
    ...s.storeStalls.map((x) => `lease store stalled ${(x.from / 1000).toFixed(1)}–${(x.to / 1000).toFixed(1)}s`),
    ...(s.machinePauses ?? []).map((x) => `r${x.replica} paused ${(x.from / 1000).toFixed(1)}–${(x.to / 1000).toFixed(1)}s (its monotonic clock ${x.monotonic === 'stops' ? 'stopped' : 'running'})`),
    s.throttle ? `429 past ${s.throttle.limit} calls per ${(s.throttle.windowMs / 1000).toFixed(0)} s${s.throttle.only ? ` of ${s.throttle.only.team} on ${s.throttle.only.route}` : ''} ${(s.throttle.from / 1000).toFixed(0)}–${(s.throttle.to / 1000).toFixed(0)}s` : '',
    s.gatewayLate?.length ? `gateway late ${s.gatewayLate.map(([t, ms]) => `${(t / 1000).toFixed(0)}s:${ms.toFixed(0)}ms`).join('→')}` : '',
  ].filter(Boolean)
  const teams = s.teams.map((t) => `${t.name}(w${t.weight}${t.from ? ` from ${(t.from / 1000).toFixed(0)}s` : ''}${t.until < s.durationMs ? ` until ${(t.until / 1000).toFixed(0)}s` : ''}${s.replicas > 1 ? ` on r${t.replicas.join(',r')}` : ''}: ${describeBehaviour(t.behaviour)})`)
  return `seed ${s.seed}: ${s.workers} workers, spread ${s.spread.toFixed(2)}, ${s.replicas} replica(s)${events.length ? `, ${events.join(', ')}` : ''}; ${teams.join('; ')}`
}

function describeBehaviour(b: Behaviour): string {
  const reports = b.reports.map((k) => `${k.name}=${k.costMs}ms`).join(',')
  switch (b.kind) {
    case 'dashboard':
      return `dashboard ${b.users}×${b.fanOut} of ${reports}, think ≤${Math.round(b.thinkMs[1])}ms`
    case 'bursts':
      return `bursts of ${b.size} every ${Math.round(b.everyMs)}ms of ${reports}`
    case 'callers': {
      const extra = [b.hangUpMs !== undefined ? `hang up at ${Math.round(b.hangUpMs)}ms` : '', b.deadlineMs !== undefined ? `deadline ${b.deadlineMs}ms` : '', b.fail && b.fail !== 'none' ? `fail ${b.fail}` : '', b.holdMs !== undefined ? `unread ${b.holdMs}ms` : ''].filter(Boolean)
      return `${b.callers} callers of ${reports}${extra.length ? ` (${extra.join(', ')})` : ''}`
    }
  }
}
