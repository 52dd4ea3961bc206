import type { Scenario, Trace } from './simulate.js'
import type { Behaviour } from './teams.js'
import { LENDING_HORIZON_MS } from '../../src/platform/governor/dispatch-order.js'
import { PAUSE_PROBE_INTERVAL_MS } from '../../src/platform/pauses/pauses.js'
import { DEFAULT_DEADLINE_MS } from './gateway.js'
import { loadConfig } from '../../src/config.js'

/** The limit's most in the runs checked (config/default.yaml's platform.maxConcurrent: the simulator's governor runs the defaults). */
const CEILING = loadConfig({ env: {} }).platform.maxConcurrent

/**
 * The guarantees of docs/governor.md, checked on a simulated run. Each phase of a run is
 * judged by what it is: a steady phase (nothing changes: no team comes or goes, the
 * platform keeps its pace and has no fault) from SETTLE_MS and SETTLE_CALLS of its
 * longest calls after it began (the limit learns from answers: a platform whose calls
 * take seconds is known no sooner than a few of them); a slowdown, 30 s after it began;
 * a fault, 10 s after it ended. A throttle of the credential is a fault from its first
 * 429 to the end of the last retry-after it gave (the pauses' longest): the platform
 * refuses, the workers are not the bound. One that never answered 429 changes nothing.
 * Answers lost on the way back are a fault until the deadline of the last call they left
 * waiting: its caller waits that long whatever the governor does.
 */

export interface Verdict {
  guarantee: string
  ok: boolean
  detail: string
  /**
   * How near the run came to breaking the guarantee: the worst, over what it judged, of what
   * was measured against its bound, 1 at the bound, past 1 broken (ok is margin ≤ 1); null
   * where nothing was judged. A sweep's margins tell a change from the noise of a seed's
   * pass or fail (docs/governor.md, "Judging a change").
   */
  margin: number | null
}

/** The worst of `margins`, null when there are none. */
function worst(margins: number[]): number | null {
  return margins.length === 0 ? null : margins.reduce((a, b) => Math.max(a, b))
}

export const SETTLE_MS = 10_000
export const SETTLE_CALLS = 10
/** Calls in flight past the platform's workers: at most max(2, W/10). */
export function inFlightBound(workers: number): number {
  return workers + Math.max(2, Math.floor(workers / 10))
}

export interface Interval {
  from: number
  to: number
}

/** When something changes (ms from the start), and the spans during which the platform is not itself (a slowdown under way, a fault). */
function changes(trace: Trace): { events: number[]; disturbed: Interval[] } {
  const s = trace.scenario
  const events = [0, s.durationMs]
  const disturbed: Interval[] = []
  for (const t of s.teams) events.push(t.from, t.until)
  // A pool resized is a platform of other workers: a phase of its own, not a fault.
  for (const r of s.resized ?? []) events.push(r.from, r.to)
  if (s.slowness.length > 0) {
    const from = (s.slowness[0] as [number, number])[0]
    const to = (s.slowness.at(-1) as [number, number])[0]
    events.push(from, to)
    disturbed.push({ from, to })
  }
  for (const f of [...s.stalls, ...s.outages, ...s.shedding, ...s.storeStalls, ...(s.machinePauses ?? []), ...credentialThrottle(trace), ...losses(s)]) {
    events.push(f.from, f.to)
    disturbed.push({ from: f.from, to: f.to })
  }
  return { events: [...new Set(events)].sort((a, b) => a - b), disturbed }
}

/** Answers lost on the way back, each span to the deadline of the last call whose answer it lost: its caller waits that long. */
function losses(s: Scenario): Interval[] {
  return (s.losing ?? []).map((l) => ({ from: l.from, to: l.to + DEFAULT_DEADLINE_MS }))
}

/**
 * The span a throttle of the credential refused in, to the end of the last retry-after it
 * gave, or to the last call the gateway refused for the platform's count if later (it refuses
 * for the platform there: the count binds, not the workers); none for a throttle of one
 * team's route, nor for one that never answered 429.
 */
function credentialThrottle(trace: Trace): Interval[] {
  if (!trace.throttled || trace.scenario.throttle?.only) return []
  const counted = trace.records.filter((c) => c.refusal === 'counted').reduce((last, c) => Math.max(last, c.ended - trace.start), 0)
  return [{ from: trace.throttled.from, to: Math.max(trace.throttled.to, counted) }]
}

/** Whether the throttle of one team's route refused `team`'s calls within `i`. */
function routeThrottled(trace: Trace, team: string, i: Interval): boolean {
  const th = trace.throttled
  return trace.scenario.throttle?.only?.team === team && th !== null && th.from < i.to && th.to > i.from
}

/** Whether call `c` (asked at `asked` ms from the start) is one the throttle of a team's route refuses: that team's on that route, while it refuses. */
function throttledCall(trace: Trace, c: { team: string; workClass: string }, asked: number): boolean {
  const only = trace.scenario.throttle?.only
  return only !== undefined && trace.throttled !== null && c.team === only.team && c.workClass === only.route && asked >= trace.throttled.from && asked < trace.throttled.to
}

/** The longest base cost of the reports a team of the run asks. */
function longestCall(trace: Trace): number {
  return Math.max(...trace.scenario.teams.flatMap((t) => t.behaviour.reports.map((r) => r.costMs)))
}

/** The steady phases of a run, each from SETTLE_MS and SETTLE_CALLS of its longest calls (at the slowest pace) after its start. */
export function steadyPhases(trace: Trace): Interval[] {
  const { events, disturbed } = changes(trace)
  const settle = SETTLE_MS + SETTLE_CALLS * longestCall(trace) * slowest(trace)
  const out: Interval[] = []
  for (let i = 0; i + 1 < events.length; i++) {
    const from = (events[i] as number) + settle
    const to = events[i + 1] as number
    if (to - from < 5_000) continue
    if (disturbed.some((d) => d.from < to && d.to > events[i]!)) continue
    out.push({ from, to })
  }
  return out
}

function slowest(trace: Trace): number {
  return Math.max(1, ...trace.scenario.slowness.map(([, k]) => k))
}

function samplesIn(trace: Trace, i: Interval) {
  return trace.samples.filter((s) => s.at - trace.start >= i.from && s.at - trace.start < i.to)
}

export function quantile(values: number[], p: number): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number
}

/** The most calls a team has in flight at once by its behaviour; null: no bound (bursts). */
function mostAtOnce(b: Behaviour): number | null {
  if (b.kind === 'dashboard') return b.users * b.fanOut
  if (b.kind === 'callers') return b.callers
  return null
}

export function checkGuarantees(trace: Trace): Verdict[] {
  const s = trace.scenario
  const out: Verdict[] = []
  const steady = steadyPhases(trace)
  const rel = (at: number) => at - trace.start

  // At capacity, no standing queue.
  {
    const bad: string[] = []
    const margins: number[] = []
    for (const i of steady) {
      const samples = samplesIn(trace, i)
      if (samples.length === 0) continue
      const bound = inFlightBound(quantile(samples.map((x) => x.workers), 0.5))
      const p99 = quantile(samples.map((x) => x.busy + x.queued), 0.99)
      const atCapacity = samples.filter((x) => x.waiting > 0)
      const medianQueue = quantile(atCapacity.map((x) => x.queued), 0.5)
      const margin = Math.max(p99 / bound, medianQueue)
      margins.push(margin)
      if (margin > 1) bad.push(`${span(i)}: in flight p99 ${p99} (bound ${bound}), queue median ${medianQueue} at capacity`)
    }
    out.push({ guarantee: 'no standing queue', ok: bad.length === 0, detail: bad.join('; '), margin: worst(margins) })
  }

  // Work-conserving.
  {
    const bad: string[] = []
    const margins: number[] = []
    for (const i of steady) {
      const samples = samplesIn(trace, i)
      if (samples.length === 0) continue
      const idle = samples.filter((x) => x.busy < x.workers && x.waiting > 0 && !x.idleAllowed)
      const margin = idle.length / samples.length / 0.02
      margins.push(margin)
      if (margin > 1) bad.push(`${span(i)}: a worker idle while calls waited in ${pct(idle.length / samples.length)} of samples`)
    }
    out.push({ guarantee: 'work-conserving', ok: bad.length === 0, detail: bad.join('; '), margin: worst(margins) })
  }

  // Slower is not fuller.
  if (s.slowness.length > 0) {
    const from = (s.slowness[0] as [number, number])[0] + 30_000
    const next = changes(trace).events.find((e) => e > (s.slowness.at(-1) as [number, number])[0]) ?? s.durationMs
    // Of the workers the calls at the platform and waiting for a seat could keep busy, over
    // every sample of the window: the guarantee is the window's throughput against what the
    // workers do at the new cost, and a sample with no call waiting has every call at a worker;
    // a pool resized past the gateway's ceiling (platform.maxConcurrent, the limit's most) is
    // kept as busy as the ceiling lets it: no limit keeps more at the platform.
    const throttled = credentialThrottle(trace)
    const samples = samplesIn(trace, { from, to: next }).filter((x) => !x.idleAllowed && !throttled.some((d) => x.at - trace.start >= d.from && x.at - trace.start < d.to))
    const could = samples.reduce((sum, x) => sum + Math.min(x.workers, CEILING, x.busy + x.queued + x.waiting), 0)
    const used = could === 0 ? 1 : samples.reduce((sum, x) => sum + Math.min(x.busy, CEILING), 0) / could
    const margin = samples.length < 20 ? null : used > 0 ? 0.9 / used : Infinity
    out.push({ guarantee: 'slower is not fuller', ok: margin === null || margin <= 1, detail: `workers busy, from 30 s into the slowdown: ${pct(used)} of those the calls could keep busy, over ${samples.length} samples`, margin })
  }

  // Recovery: at capacity before the fault, as busy 10 s after its end; a worker the model
  // keeps for a team owed its seats (idleAllowed, as work-conserving allows it) counts as in
  // use in both windows: which teams linger differs before and after, not the limit.
  for (const f of [...s.stalls, ...s.outages, ...s.shedding, ...(s.machinePauses ?? []), ...credentialThrottle(trace), ...losses(s)]) {
    const quietBefore = !changes(trace).events.some((e) => e > f.from - 10_000 - SETTLE_MS && e < f.from)
    // A fault judged by the 15 s after its end, within the run (a throttle's pause may end past it).
    const { events, disturbed } = changes(trace)
    const quietAfter = f.to + 15_000 <= s.durationMs && !events.some((e) => e > f.to && e < f.to + 15_000) && !disturbed.some((d) => d.from < f.to + 15_000 && d.to > f.to)
    // The same teams and workers before and after: none came or went, and the pool was not resized, during the fault.
    const sameTeams = ![...s.teams.flatMap((t) => [t.from, t.until]), ...(s.resized ?? []).flatMap((r) => [r.from, r.to])].some((e) => e > f.from && e < f.to)
    const atCapacity = samplesIn(trace, { from: f.from - 10_000, to: f.from }).filter((x) => x.waiting > 0).length >= 0.9 * (10_000 / 100)
    if (!quietBefore || !quietAfter || !sameTeams || !atCapacity) continue
    const busy = (i: Interval) => {
      const xs = samplesIn(trace, i)
      return xs.length === 0 ? 0 : xs.reduce((sum, x) => sum + (x.idleAllowed ? x.workers : x.busy), 0) / xs.length
    }
    const before = busy({ from: f.from - 10_000, to: f.from })
    const after = busy({ from: f.to + 10_000, to: f.to + 15_000 })
    const margin = before === 0 ? 0 : after > 0 ? (0.9 * before) / after : Infinity
    out.push({ guarantee: 'recovery', ok: margin <= 1, detail: `workers busy ${before.toFixed(1)} before the fault at ${(f.from / 1000).toFixed(0)} s, ${after.toFixed(1)} from 10 s after its end`, margin })
  }

  // Nothing uncharged.
  {
    const bad: string[] = []
    const margins: number[] = []
    for (const t of s.teams) {
      const work = (trace.workMs.get(t.name) ?? 0) / 1000
      const charged = trace.seatSeconds.get(t.name) ?? 0
      const margin = work / (1.05 * charged + 1)
      margins.push(margin)
      if (margin > 1) bad.push(`${t.name}: ${work.toFixed(1)} worker-s at the platform, charged ${charged.toFixed(1)} seat-s`)
    }
    out.push({ guarantee: 'nothing uncharged', ok: bad.length === 0, detail: bad.join('; '), margin: worst(margins) })
  }

  // Isolation: a team that asks no more than its nominal share waits at most the lending horizon (p99).
  // A caller that does not read holds its seat past its call, so its team asks more than its callers.
  {
    const bad: string[] = []
    const margins: number[] = []
    for (const t of s.teams) {
      const most = mostAtOnce(t.behaviour)
      if (most === null || (t.behaviour.kind === 'callers' && t.behaviour.holdMs !== undefined)) continue
      for (const i of steady) {
        const samples = samplesIn(trace, i)
        if (samples.length === 0) continue
        const limit = quantile(samples.map((x) => x.servingLimit), 0.5)
        const active = s.teams.filter((o) => o.from <= i.from && o.until >= i.to)
        if (!active.includes(t)) continue
        const nominal = (limit * t.weight) / active.reduce((sum, o) => sum + o.weight, 0)
        if (most > Math.floor(nominal)) continue
        // A call refused because it cannot end before its deadline is answered at once, as it
        // should be. A call asked within the horizon of the phase's end and still waiting then
        // waits on what comes next (a fault, a team): its wait is not this phase's.
        const edge = i.to - LENDING_HORIZON_MS - 50
        // A call the throttle of its team's route refuses is the platform's word, not the model's.
        const calls = trace.records.filter((c) => c.team === t.name && rel(c.asked) >= i.from && rel(c.asked) < i.to && !throttledCall(trace, c, rel(c.asked)) && c.result !== 'gone' && c.refusal !== 'GW_UPSTREAM_TIMEOUT' && !(c.result === 'timeout' && c.seated === null) && !(rel(c.asked) > edge && rel(c.seated ?? c.ended) >= i.to))
        if (calls.length < 20) continue
        const waits = calls.map((c) => (c.seated === null ? Infinity : c.seated - c.asked))
        const p99 = quantile(waits, 0.99)
        const margin = p99 / (LENDING_HORIZON_MS + 50)
        margins.push(margin)
        if (margin > 1) bad.push(`${t.name} (at most ${most} at once, nominal share ${nominal.toFixed(1)}) in ${span(i)}: p99 wait for a seat ${Number.isFinite(p99) ? `${Math.round(p99)} ms` : 'refused'}`)
      }
    }
    out.push({ guarantee: 'isolation', ok: bad.length === 0, detail: bad.join('; '), margin: worst(margins) })
  }

  // Fair by time among busy teams.
  {
    const bad: string[] = []
    const margins: number[] = []
    for (const i of steady) {
      for (let from = i.from; from + 30_000 <= i.to; from += 30_000) {
        const samples = samplesIn(trace, { from, to: from + 30_000 })
        // A team the throttle of its route refuses then has the time the platform lets it have, not the model.
        const busy = s.teams.filter((t) => (t.behaviour.kind !== 'callers' || t.behaviour.holdMs === undefined) && !routeThrottled(trace, t.name, { from, to: from + 30_000 })).filter((t) => samples.filter((x) => x.waitingTeams.includes(t.name)).length >= 0.95 * samples.length)
        if (busy.length < 2) continue
        const perWeight = busy.map((t) => {
          const seconds = trace.workBySecond.get(t.name) ?? []
          let ms = 0
          for (let k = Math.floor(from / 1000); k < Math.floor(from / 1000) + 30; k++) ms += seconds[k] ?? 0
          return { team: t.name, share: ms / t.weight }
        })
        const most = Math.max(...perWeight.map((p) => p.share))
        const least = Math.min(...perWeight.map((p) => p.share))
        const margin = least > 0 ? most / least / 1.1 : Infinity
        margins.push(margin)
        if (margin > 1) bad.push(`${span({ from, to: from + 30_000 })}: worker-seconds per weight ${perWeight.map((p) => `${p.team} ${(p.share / 1000).toFixed(1)}`).join(', ')}`)
      }
    }
    out.push({ guarantee: 'fair by time', ok: bad.length === 0, detail: bad.join('; '), margin: worst(margins) })
  }
  if (s.throttle) out.push(check429s(trace))
  out.push(checkArrivals(trace))
  if (s.replicas > 1) out.push(checkReplicas(trace, steady))
  if (s.replicas > 1 && s.storeStalls.length > 0) out.push(checkStallLiveness(trace))
  return out
}

/** How long into a lease store stall a replica may have calls waiting and none in flight: DOWN_GRACE, a renewal timed out (250 ms) and a DOWN_RETRY (100 ms) before it knows, and a sample's slack. */
const STALL_START_MS = 1_500

/**
 * Stall liveness: in a lease store stall no replica has calls waiting and none in flight for
 * longer than STALL_START_MS while the seats held on every replica are below the limit in
 * force and were within it as the stall began (a throttle's pauses aside): each keeps a seat
 * at least, where one is free. Seats held past the limit (calls that outlived a cut of it,
 * before the stall or in it) are the others' as a replica last heard: it waits then for the
 * calls started before, as the outage rule says.
 */
function checkStallLiveness(trace: Trace): Verdict {
  const throttled = credentialThrottle(trace)
  const margins: number[] = []
  const bad: string[] = []
  for (const st of trace.scenario.storeStalls) {
    const before = samplesIn(trace, { from: 0, to: st.from + 1 }).at(-1)
    if (before === undefined || before.inFlight > before.limit) continue
    const since = new Map<number, number>()
    let longest = 0
    let at = 0
    for (const x of samplesIn(trace, st)) {
      const t = x.at - trace.start
      const judged = x.inFlight < x.limit && before.inFlight <= x.limit && !throttled.some((d) => t >= d.from && t < d.to)
      for (const r of [...since.keys()]) if (!judged || !x.stopped.includes(r)) since.delete(r)
      if (!judged) continue
      for (const r of x.stopped) {
        const from = since.get(r) ?? t
        since.set(r, from)
        if (t - from > longest) [longest, at] = [t - from, from]
      }
    }
    margins.push(longest / STALL_START_MS)
    if (longest > STALL_START_MS) bad.push(`a replica with calls waiting and none in flight for ${(longest / 1000).toFixed(1)} s from ${(at / 1000).toFixed(1)} s, seats free`)
  }
  return { guarantee: 'stall liveness', ok: bad.length === 0, detail: bad.join('; '), margin: worst(margins) }
}

/**
 * Pauses: the calls answered 429 while a throttle refuses are at most, for each window of
 * it, the calls already past the pauses when its first 429 came back (in flight or
 * waiting for a seat: the pauses admit a call before it asks for a seat), and a first
 * 429 for each team and route it throttles (a pause covers whoever drew it: another
 * pair's call is not covered until the escalation says so); and each replica's trial of
 * each such pause every PAUSE_PROBE_INTERVAL_MS. Without the pauses every call past the
 * window's limit would be answered 429.
 */
function check429s(trace: Trace): Verdict {
  const s = trace.scenario
  const th = s.throttle as NonNullable<Scenario['throttle']>
  const refusing = trace.throttled ?? { from: th.from, to: th.to }
  const admitted = Math.max(0, ...samplesIn(trace, refusing).map((x) => x.inFlight + x.waiting))
  const pairs = new Set<string>()
  for (const t of s.teams) for (const k of t.behaviour.reports) if (!th.only || (th.only.team === t.name && th.only.route === k.name)) pairs.add(`${t.name} ${k.name}`)
  const windows = Math.floor((th.to - th.from) / th.windowMs) + 1
  const trials = Math.ceil((refusing.to - refusing.from) / PAUSE_PROBE_INTERVAL_MS) * s.replicas * pairs.size
  const bound = windows * (admitted + pairs.size) + trials
  const answered = trace.records.filter((c) => c.status === 429).length
  const refused = trace.records.filter((c) => c.refusal === 'paused').length
  return { guarantee: '429s', ok: answered <= bound, margin: bound > 0 ? answered / bound : answered > 0 ? Infinity : 0, detail: `${answered} calls answered 429 (bound ${bound}: ${windows} window(s) × (${admitted} calls at most past the pauses at once + ${pairs.size} team-route(s)) + ${trials} trials), ${refused} refused by a pause` }
}

/** How long after another team's arrival a dashboard's throughput is judged, and the least of it before that is measured. */
export const ARRIVAL_WINDOW_MS = 30_000
const BEFORE_MS = 10_000
const LEAST_BEFORE_MS = 5_000
const LEAST_VIEWS = 10

/**
 * Isolation where another team arrives: a dashboard that waits for all its answers and asks
 * no more than its nominal share beside the newcomers keeps at least 80 % of its throughput
 * over the ARRIVAL_WINDOW_MS after they came, against its throughput in the seconds before
 * (the same dashboard on the same platform, with no more teams than after: at most its
 * throughput alone, so a dashboard that keeps 80 % of that alone keeps 80 % of this). A
 * closed loop's throughput is a view's time plus its think time; the think time is the
 * user's (its mean by the plan), not the governor's, so only the views' times are measured
 * and the think time's mean is added to both. Judged only where nothing else changes from
 * BEFORE_MS before the arrival to the window's end, the view before it settled 2 s at least.
 */
function checkArrivals(trace: Trace): Verdict {
  const s = trace.scenario
  const { events, disturbed } = changes(trace)
  const bad: string[] = []
  const judged: number[] = []
  for (const at of new Set(s.teams.map((t) => t.from).filter((from) => from > 0))) {
    const to = at + ARRIVAL_WINDOW_MS
    const previous = Math.max(0, ...events.filter((e) => e < at))
    const from = Math.max(previous + 2_000, at - BEFORE_MS)
    if (at - from < LEAST_BEFORE_MS || to > s.durationMs) continue
    if (events.some((e) => e > at && e < to) || disturbed.some((d) => d.from < to && d.to > from) || s.slowness.some(([t]) => t > from - 30_000 && t < to)) continue
    const active = s.teams.filter((t) => t.from <= at && t.until >= to)
    const limit = quantile(samplesIn(trace, { from: at, to }).map((x) => x.servingLimit), 0.5)
    for (const d of active) {
      const b = d.behaviour
      if (b.kind !== 'dashboard' || d.from > from) continue
      const nominal = (limit * d.weight) / active.reduce((sum, o) => sum + o.weight, 0)
      if (b.users * b.fanOut > Math.floor(nominal)) continue
      const before = viewTimes(trace, d.name, from, at)
      const after = viewTimes(trace, d.name, at, to)
      if (before.length < LEAST_VIEWS || after.length === 0) continue
      const think = (b.thinkMs[0] + b.thinkMs[1]) / 2
      const mean = (xs: number[]) => xs.reduce((sum, x) => sum + x, 0) / xs.length
      const kept = (mean(before) + think) / (mean(after) + think)
      judged.push(kept)
      if (0.8 / kept > 1) bad.push(`${d.name} (${b.users}×${b.fanOut} at once, nominal share ${nominal.toFixed(1)}) after ${s.teams.filter((t) => t.from === at).map((t) => t.name).join(', ')} came at ${(at / 1000).toFixed(0)} s: ${pct(kept)} of its throughput before (a view ${Math.round(mean(after))} ms against ${Math.round(mean(before))} ms, think ${Math.round(think)} ms)`)
    }
  }
  const judgedText = judged.length === 0 ? '' : `${judged.length} judged, the least kept ${pct(Math.min(...judged))}`
  return { guarantee: 'isolation on arrival', ok: bad.length === 0, detail: bad.length > 0 ? bad.join('; ') : judgedText, margin: worst(judged.map((kept) => 0.8 / kept)) }
}

/** The times of a dashboard's views (its calls asked at one instant, to the last one's end) asked from `from` to `to` ms. */
function viewTimes(trace: Trace, team: string, from: number, to: number): number[] {
  const views = new Map<number, number>()
  for (const c of trace.records) {
    const asked = c.asked - trace.start
    if (c.team !== team || asked < from || asked >= to) continue
    views.set(c.asked, Math.max(views.get(c.asked) ?? 0, c.ended - c.asked))
  }
  return [...views.values()]
}

/** platform.seatLease by default: while the lease store stalls, replicas keep their leases this long. */
const SEAT_LEASE_MS = 5_000

/**
 * Replicas: no seat taken while the seats held on every replica reach the limit + R (the
 * highest limit in force on any replica), nor, in the first lease's life of a lease store
 * stall, the limit + the replicas whose lease held no seat (leases are kept as last
 * granted, a replica that held none fills one; past that each replica takes its part of
 * an even split); and a team spread over the replicas gets the worker-seconds of an equal
 * team on one (±5 %).
 */
function checkReplicas(trace: Trace, steady: Interval[]): Verdict {
  const s = trace.scenario
  const bad: string[] = []
  const margins: number[] = []
  let over = 0
  let first = ''
  for (const c of trace.records) {
    if (c.seated === null || c.heldAtSeat === undefined || c.limitAtSeat === undefined) continue
    const t = c.seated - trace.start
    const stalled = s.storeStalls.some((st) => t >= st.from && t < Math.min(st.to, st.from + SEAT_LEASE_MS))
    const bound = c.limitAtSeat + (stalled ? (c.unleasedAtSeat ?? 0) : s.replicas)
    // The seats past the limit against the R allowed past it (in a stall's first lease, those past the seat of each replica that leased none).
    const excess = Math.max(0, c.heldAtSeat - c.limitAtSeat)
    const stallExcess = Math.max(0, excess - (c.unleasedAtSeat ?? 0))
    margins.push(stalled ? (stallExcess > 0 ? 1 + stallExcess : 0) : excess / s.replicas)
    if (c.heldAtSeat > bound) {
      over += 1
      first ||= `${c.heldAtSeat} seats held at ${(t / 1000).toFixed(1)} s, bound ${bound}${stalled ? ' (lease store stalled)' : ''}`
    }
  }
  if (over > 0) bad.push(`${over} seats taken past the bound, first ${first}`)
  const twins = twinsWork(trace, steady)
  const twinsMargin = twins === null ? null : twins.single > 0 ? Math.abs(twins.spread / twins.single - 1) / 0.05 : Infinity
  if (twinsMargin !== null) margins.push(twinsMargin)
  if (twins !== null && twinsMargin !== null && twinsMargin > 1) bad.push(`team spread over ${s.replicas} replicas ${(twins.spread / 1000).toFixed(1)} worker-s, the same team on one ${(twins.single / 1000).toFixed(1)} in the steady phases`)
  return { guarantee: 'replicas', ok: bad.length === 0, detail: bad.join('; '), margin: worst(margins) }
}

/**
 * The twins' worker-ms over the steady phases (whole seconds within them): null where the run
 * has no twins or does not judge them (steady phases under 10 s in all, or a twin the
 * throttle of its route refused: the platform took its calls, so it is not the other's equal).
 */
export function twinsWork(trace: Trace, steady: Interval[]): { spread: number; single: number } | null {
  const s = trace.scenario
  if (!s.teams.some((t) => t.name === 'spread')) return null
  if (steady.reduce((sum, i) => sum + (i.to - i.from), 0) < 10_000) return null
  if (routeThrottled(trace, 'spread', { from: 0, to: s.durationMs }) || routeThrottled(trace, 'single', { from: 0, to: s.durationMs })) return null
  const [spread, single] = ['spread', 'single'].map((name) => {
    const seconds = trace.workBySecond.get(name) ?? []
    let ms = 0
    for (const i of steady) for (let k = Math.ceil(i.from / 1000); k < Math.floor(i.to / 1000); k++) ms += seconds[k] ?? 0
    return ms
  }) as [number, number]
  return { spread, single }
}

function span(i: Interval): string {
  return `${(i.from / 1000).toFixed(0)}–${(i.to / 1000).toFixed(0)} s`
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)} %`
}
