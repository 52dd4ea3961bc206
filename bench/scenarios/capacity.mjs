// A platform with a real capacity: the stand-in (bench/dashboard-origin.mjs) answers in
// 100 ms while at most 12 calls are in flight, 40 ms slower per call beyond, and 429
// (retry-after: 1) to a call that finds 20 in flight. 120 callers of one team ask reports
// never asked before (closed loop), on one gateway replica alone and on three replicas
// sharing one Redis, every setting at its default. Every second: the limit in force on
// each replica (its /metrics), the knee and latency floor it learned, and the calls in flight at
// the stand-in. Targets: the limit, and the calls in flight at the stand-in, settle within
// 20 % of the knee within 30 s; fewer than 1 % of platform calls answered 429.

import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { REPORT_ROUTE, startMainGateway } from '../lib/fixture.mjs'
import { http } from '../lib/http.mjs'
import { closedLoop, neverAsked } from '../lib/load.mjs'
import { log, stopProcess } from '../lib/processes.mjs'
import { startStandIn } from '../lib/stand-in.mjs'
import { fmtInt, fmtPct, markdownTable, median, metricValue, settledFrom, verdictLines } from '../lib/stats.mjs'

export const id = 'capacity'
export const title = 'Capacity: a platform whose latency grows past 12 calls in flight and that answers 429 past 20; the learned limit on one and three replicas'

const LATENCY_MS = 100
const KNEE = 12
const SLOPE_MS = 40
const REFUSE_ABOVE = 20
const CALLERS = 120
const BAND = 0.2
const SETTLE_S = 30
const MAX_REFUSED = 0.01
const CREDENTIAL = { credential: 'default' }

const inBand = (x) => x !== null && Math.abs(x - KNEE) <= BAND * KNEE
const fmt1 = (x) => (x === null || x === undefined ? '—' : x.toFixed(1))

/** The time (s) from which every sample of `values` (taken at 1, 2, … s; null: not measured) lies in the band; null when the last one does not. */
const settledAt = (values) => {
  const from = settledFrom(values, inBand)
  return from === null ? null : from + 1
}

/** One sample of every replica: limit in force, the knee it learned, latency floor (ms), calls in flight and seats held (null: not exposed). */
async function sampleReplica(gw) {
  try {
    const text = (await http('GET', `${gw.admin}/metrics`)).body.toString('utf8')
    const floor = metricValue(text, 'gateway_platform_latency_floor_seconds', CREDENTIAL, null)
    return {
      limit: metricValue(text, 'gateway_platform_concurrency_limit', CREDENTIAL, null),
      knee: metricValue(text, 'gateway_platform_knee', CREDENTIAL, null),
      floorMs: floor === null ? null : floor * 1000,
      inFlight: metricValue(text, 'gateway_platform_in_flight_calls', CREDENTIAL, null),
      seats: metricValue(text, 'gateway_platform_seats_held', CREDENTIAL, null),
    }
  } catch {
    return { limit: null, knee: null, floorMs: null, inFlight: null, seats: null }
  }
}

/** One setup: `replicas` gateways (sharing Redis when more than one) under the callers for `seconds`, sampled every second. */
async function measure({ fixture, standIn, replicas, seconds }) {
  const label = `${replicas} replica${replicas > 1 ? 's' : ''}`
  const shared = replicas > 1
  const config = { teams: { bench: fixture.teams.bench }, redis: { keyPrefix: `rgwbench-capacity-${replicas}:` } }
  const env = { GATEWAY_SECRET: randomBytes(32).toString('base64url') }
  const gateways = []
  try {
    for (let i = 0; i < replicas; i += 1) {
      gateways.push(await startMainGateway(`gw-capacity-${replicas}-${i}`, { platformUrl: standIn.url, platformToken: fixture.sandbox.token, config, redisUrl: shared ? fixture.redisUrl : null, env }))
    }
    await standIn.resetCounts()
    await standIn.load()
    const stopCallers = closedLoop({ origins: gateways.map((g) => g.url), key: fixture.teamKey, callers: CALLERS, nextPath: () => neverAsked(REPORT_ROUTE), maxSeconds: seconds + 5 })
    const start = performance.now()
    const samples = []
    let before = await standIn.counts()
    for (let s = 1; s <= seconds; s += 1) {
      const wait = start + s * 1000 - performance.now()
      if (wait > 0) await sleep(wait)
      const [load, counts, ...perReplica] = await Promise.all([standIn.load(), standIn.counts(), ...gateways.map(sampleReplica)])
      const limits = perReplica.map((r) => r.limit).filter((x) => x !== null)
      samples.push({
        t: s,
        limits: perReplica.map((r) => r.limit),
        limit: limits.length ? median(limits) : null,
        knees: perReplica.map((r) => r.knee),
        floorMs: perReplica.map((r) => r.floorMs),
        gatewayInFlight: perReplica.reduce((x, r) => x + (r.inFlight ?? 0), 0),
        meanInFlight: load.meanInFlight,
        peak: load.peak,
        calls: counts.count - before.count,
        refused: counts.refused - before.refused,
      })
      before = counts
    }
    const { count, refused } = await standIn.counts()
    // The callers' answers within the sampled seconds (not those in after them, while the callers stop).
    const answers = (await stopCallers()).filter((a) => a.at - start <= seconds * 1000)
    const ok = answers.filter((a) => a.status === 200)
    for (const sample of samples) sample.served = ok.filter((a) => a.at - start > (sample.t - 1) * 1000 && a.at - start <= sample.t * 1000).length
    const tail = samples.filter((x) => x.t > seconds - 10)
    return {
      label,
      samples,
      platformCalls: count,
      refusedShare: refused / Math.max(1, count),
      servedPerS: ok.length / seconds,
      tailServedPerS: tail.reduce((x, y) => x + y.served, 0) / Math.max(1, tail.length),
      callerErrors: (answers.length - ok.length) / Math.max(1, answers.length),
      statuses: [...new Set(answers.filter((a) => a.status !== 200).map((a) => a.status))].map((st) => `${answers.filter((a) => a.status === st).length}× ${st}`).join(', '),
      limitSettledAt: settledAt(samples.map((x) => x.limit)),
      inFlightSettledAt: settledAt(samples.map((x) => x.meanInFlight)),
    }
  } finally {
    await Promise.all(gateways.map((g) => stopProcess(g)))
  }
}

/** The targets of one setup; the settling is judged at `deadline` seconds (SETTLE_S, less in a quick run). */
function checks(m, deadline) {
  const settle = (what, values, at) => ({
    name: `${m.label}: ${what} within ${BAND * 100} % of the knee (${KNEE}) from`,
    got: values.every((x) => x === null) ? 'not exposed' : at === null ? 'not in the band at the end' : `${at} s on`,
    target: `≤ ${deadline} s`,
    pass: at !== null && at <= deadline,
  })
  return [
    settle('the limit in force', m.samples.map((x) => x.limit), m.limitSettledAt),
    settle('the calls in flight at the platform', m.samples.map((x) => x.meanInFlight), m.inFlightSettledAt),
    { name: `${m.label}: platform calls answered 429`, got: fmtPct(m.refusedShare), target: `< ${fmtPct(MAX_REFUSED)}`, pass: m.refusedShare < MAX_REFUSED },
  ]
}

export async function run({ fixture, quick }) {
  const seconds = quick ? 20 : 40
  const deadline = Math.min(SETTLE_S, Math.floor(seconds * 0.75))
  const standIn = await startStandIn('capacity-origin', { latencyMs: LATENCY_MS, knee: KNEE, slopeMs: SLOPE_MS, refuseAbove: REFUSE_ABOVE })
  const setups = [1, ...(fixture.redisUrl ? [3] : [])]
  const results = []
  try {
    for (const replicas of setups) {
      const m = await measure({ fixture, standIn, replicas, seconds })
      results.push(m)
      log(`capacity ${m.label}: ${fmt1(m.servedPerS)} answers/s, caller errors ${fmtPct(m.callerErrors)}, 429 ${fmtPct(m.refusedShare)}; limit over time ${m.samples.map((x) => fmt1(x.limit)).join(' ')}; in flight ${m.samples.map((x) => fmt1(x.meanInFlight)).join(' ')}`)
    }
  } finally {
    await stopProcess(standIn)
  }
  const summary = results.map((m) => [
    m.label,
    fmt1(m.servedPerS),
    fmt1(m.tailServedPerS),
    `${fmtPct(m.callerErrors)}${m.statuses ? ` (${m.statuses})` : ''}`,
    fmtInt(m.platformCalls),
    fmtPct(m.refusedShare),
    m.limitSettledAt === null ? '—' : `${m.limitSettledAt} s`,
    m.inFlightSettledAt === null ? '—' : `${m.inFlightSettledAt} s`,
  ])
  const timelines = results.flatMap((m) => [
    `#### ${m.label}: every second`,
    '',
    markdownTable(
      ['t', 'limit in force', 'knee learned', 'latency floor', 'in flight at the platform (mean, peak)', 'in flight on the gateways', 'platform calls', 'answered 429', 'callers answered 200'],
      m.samples.map((x) => [`${x.t} s`, x.limits.map(fmt1).join(' / '), x.knees.map(fmt1).join(' / '), x.floorMs.map((f) => (f === null ? '—' : `${f.toFixed(0)} ms`)).join(' / '), `${fmt1(x.meanInFlight)}, ${x.peak}`, String(x.gatewayInFlight), String(x.calls), String(x.refused), String(x.served)]),
    ),
    '',
  ])
  return [
    markdownTable(['setup', 'callers answered 200 a second', 'the same, last 10 s', 'caller requests not 200', 'platform calls', 'answered 429', 'limit in band from', 'in flight in band from'], summary),
    '',
    ...verdictLines(results.flatMap((m) => checks(m, deadline))),
    ...(fixture.redisUrl ? [] : ['- Three replicas not run: no redis-server.']),
    '',
    `The platform stand-in answers a report call in ${LATENCY_MS} ms while at most ${KNEE} calls are in flight (so at most ${(KNEE * 1000) / LATENCY_MS} calls a second), ${SLOPE_MS} ms slower for each call in flight beyond ${KNEE} (a call's latency is fixed as it arrives), and 429 with \`retry-after: 1\` at once to a call that finds ${REFUSE_ABOVE} in flight. ${CALLERS} callers of one team, in a closed loop for ${seconds} s, each ask a report never asked before as soon as their last is answered (after a 429/503, its retry-after, 1 to 5 s), spread over the replicas in turn. One replica runs without Redis; three share one redis-server (GATEWAY_SECRET set); every gateway setting at its default. Each second: the limit in force (\`gateway_platform_concurrency_limit\`), the knee learned (\`gateway_platform_knee\`: the limit goes a step past it to probe) and latency floor (\`gateway_platform_latency_floor_seconds\`) of each replica from its /metrics (the median of the replicas is judged), and the stand-in's calls in flight, their time-weighted mean over that second. In the band: within ${BAND * 100} % of the knee (${(KNEE * (1 - BAND)).toFixed(1)} to ${(KNEE * (1 + BAND)).toFixed(1)}) at every second from then to the end${quick ? `; a quick run judges the settling at ${deadline} s instead of ${SETTLE_S} s` : ''}.`,
    '',
    ...timelines,
  ].join('\n')
}
