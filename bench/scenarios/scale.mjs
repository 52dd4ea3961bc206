// Fifty replicas on one Redis: the gateway's coordination run as 1 and as 50 replicas
// (bench/scale-host.mjs: whole gateways of the build, in one process, each with its own
// Redis connections) against one redis-server, then against a Cluster of three masters,
// and a platform stand-in with a knee. 100 callers of one team ask reports never asked
// before (misses), each caller on one replica (as a keep-alive connection through a
// Kubernetes Service stays on one pod). Measured: the Redis commands the replicas send
// per platform call (counted as they send them) and those Redis runs (INFO
// commandstats, a script's own commands included), Redis CPU per 1,000 platform calls
// (INFO cpu), the calls in flight at the platform each second against the limit in force,
// and, with every Redis server stopped (SIGSTOP) for 5 s, the calls in flight against the
// limit in force when it stopped. Targets (issue 39): commands per platform call at 50
// replicas ≤ 1.5× those at 1; calls in flight never above the limit + the replicas;
// during the stall, never above the limit: each judged as a call comes to the platform,
// against the limit it was sent under (bench/lib/platform-load.mjs).

import { setTimeout as sleep } from 'node:timers/promises'
import { SERVER_CORE, launch, log, pin, stopProcess } from '../lib/processes.mjs'
import { startCluster, startStandalone } from '../lib/redis-servers.mjs'
import { startStandIn } from '../lib/stand-in.mjs'
import { fmtInt, fmtX, markdownTable, verdictLines } from '../lib/stats.mjs'

export const id = 'scale'
export const title = 'Scale: 1 and 50 replicas on one Redis and on a Cluster: Redis commands and CPU per platform call, calls in flight against the limit, a 5 s Redis stall'

const LATENCY_MS = 100
const KNEE = 24
const SLOPE_MS = 40
const REFUSE_ABOVE = 48
const CALLERS = 100
const MAX_RATIO = 1.5
const STALL_S = 5

const sum = (o) => Object.values(o).reduce((x, y) => x + y, 0)
const fmt2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '—')

/** One run of the host: `replicas` gateways on `topology` under the callers. */
async function measure({ topology, standIn, replicas, quick }) {
  const env = {
    BENCH_REPLICAS: String(replicas),
    BENCH_CALLERS: String(CALLERS),
    BENCH_REDIS: JSON.stringify(topology.redis),
    BENCH_REDIS_PIDS: JSON.stringify(topology.pids),
    BENCH_PLATFORM_URL: standIn.url,
    BENCH_WARM_S: quick ? '3' : '5',
    BENCH_MEASURE_S: quick ? '8' : '20',
    BENCH_STALL_S: String(STALL_S),
    BENCH_AFTER_S: quick ? '3' : '5',
  }
  await standIn.resetCounts()
  const [cmd, args] = pin(SERVER_CORE, process.execPath, ['bench/scale-host.mjs'])
  const p = await launch(`scale-${replicas}`, cmd, args, { env, ready: /^RESULT /, timeoutMs: 180_000 })
  await stopProcess(p)
  const r = JSON.parse(p.line.slice('RESULT '.length))
  const calls = Math.max(1, r.calls)
  // Each call is judged as it comes to the platform: the calls in flight with it against the highest limit in force on any replica when it was sent (the stand-in's overLimit); a cut leaves the calls started before it in flight, past the lower limit, until they end.
  const over = (samples, slack) => {
    const judged = samples.map((x) => x.overLimit).filter((x) => x !== null)
    return judged.length > 0 ? Math.max(...judged) - slack : null
  }
  const stallLimit = r.measured.at(-1).limitMax
  return {
    replicas,
    calls: r.calls,
    callsPerS: r.calls / r.seconds,
    sentPerCall: sum(r.sent) / calls,
    serverPerCall: sum(r.commands) / calls,
    cpuMsPer1000: (r.cpuSeconds * 1e6) / calls,
    sent: r.sent,
    measured: r.measured,
    stall: r.stall,
    recovery: r.recovery,
    answers: r.answers,
    timed: r.timing.measured.timed,
    loopBusy: r.timing.loopBusy,
    // The most calls in flight at the platform as a call came, beyond the limit it was sent under (+ the replicas; during the stall, + none).
    overLimitPlusReplicas: over(r.measured, replicas),
    stallLimit,
    overStallLimit: over(r.stall, 0),
  }
}

const judged = (x) => (x === null ? 'no call came' : String(x))
const pct = (x) => (x === null ? '—' : `${Math.round(100 * x)} %`)

const statuses = (answers) =>
  Object.entries(answers)
    .map(([status, n]) => `${fmtInt(n)}× ${status}`)
    .join(', ') || 'none'

function checks(topology, runs) {
  const [one, many] = [runs[0], runs.at(-1)]
  const ratio = many.sentPerCall / one.sentPerCall
  return [
    { name: `${topology}: Redis commands sent per platform call, ${many.replicas} replicas against 1`, got: `${fmt2(many.sentPerCall)} / ${fmt2(one.sentPerCall)} = ${fmtX(ratio)}`, target: `≤ ${MAX_RATIO}×`, pass: ratio <= MAX_RATIO },
    ...runs.map((m) => ({ name: `${topology}, ${m.replicas} replica${m.replicas > 1 ? 's' : ''}: calls in flight at the platform as a call came, most beyond the limit it was sent under + replicas`, got: judged(m.overLimitPlusReplicas), target: '≤ 0', pass: m.overLimitPlusReplicas === null ? null : m.overLimitPlusReplicas <= 0 })),
    ...runs.map((m) => ({ name: `${topology}, ${m.replicas} replica${m.replicas > 1 ? 's' : ''}: during the ${STALL_S} s stall, calls in flight at the platform as a call came, most beyond the limit it was sent under`, got: judged(m.overStallLimit), target: '≤ 0', pass: m.overStallLimit === null ? null : m.overStallLimit <= 0 })),
  ]
}

export async function run({ quick }) {
  const standIn = await startStandIn('scale-origin', { latencyMs: LATENCY_MS, knee: KNEE, slopeMs: SLOPE_MS, refuseAbove: REFUSE_ABOVE })
  const setups = [
    ['standalone', () => startStandalone('scale-redis')],
    ['cluster', () => startCluster('scale-cluster', 3)],
  ]
  const results = []
  try {
    for (const [, start] of setups) {
      const topology = await start()
      try {
        const runs = []
        for (const replicas of [1, quick ? 10 : 50]) {
          const m = await measure({ topology, standIn, replicas, quick })
          runs.push(m)
          log(`scale ${topology.label}, ${replicas} replicas: ${fmt2(m.callsPerS)} calls/s, ${fmt2(m.sentPerCall)} commands sent and ${fmt2(m.serverPerCall)} run per call, ${fmtInt(m.cpuMsPer1000)} ms Redis CPU per 1000 calls`)
          await sleep(500)
        }
        results.push({ topology: topology.label, runs })
      } finally {
        await topology.stop()
      }
    }
  } finally {
    await stopProcess(standIn)
  }
  const rows = results.flatMap(({ topology, runs }) =>
    runs.map((m) => [
      topology,
      String(m.replicas),
      fmt2(m.callsPerS),
      fmt2(m.sentPerCall),
      fmt2(m.serverPerCall),
      fmtInt(m.cpuMsPer1000),
      `${Math.max(...m.measured.map((x) => x.peak))} / ${Math.min(...m.measured.map((x) => x.limitMin))}–${Math.max(...m.measured.map((x) => x.limitMax))}`,
      `${Math.max(...m.stall.map((x) => x.peak))} / ${m.stallLimit}`,
      statuses(m.answers.measured),
      statuses(m.answers.stall),
      statuses(m.answers.recovery),
      `${pct(m.timed)} (${pct(m.loopBusy)})`,
    ]),
  )
  const breakdown = results.flatMap(({ topology, runs }) => {
    const names = [...new Set(runs.flatMap((m) => Object.keys(m.sent)))].sort((a, b) => (runs.at(-1).sent[b] ?? 0) - (runs.at(-1).sent[a] ?? 0))
    return [
      `#### ${topology}: commands sent per platform call, by command`,
      '',
      markdownTable(['command', ...runs.map((m) => `${m.replicas} replica${m.replicas > 1 ? 's' : ''}`)], names.map((n) => [n.replace('evalsha ', 'EVALSHA '), ...runs.map((m) => fmt2((m.sent[n] ?? 0) / Math.max(1, m.calls)))])),
      '',
    ]
  })
  const timelines = results.flatMap(({ topology, runs }) =>
    runs
      .filter((m) => m.replicas > 1)
      .flatMap((m) => [
        `#### ${topology}, ${m.replicas} replicas: every second (Redis stopped from ${m.measured.length} s to ${m.measured.length + STALL_S} s)`,
        '',
        markdownTable(
          ['t', 'in flight at the platform (peak)', 'limit in force (lowest–highest replica)', 'in flight on the replicas', 'seats leased'],
          [...m.measured, ...m.stall, ...m.recovery].map((x) => [`${x.t} s`, String(x.peak), `${x.limitMin}–${x.limitMax}`, String(x.inFlight), String(x.held)]),
        ),
        '',
      ]),
  )
  return [
    markdownTable(['Redis', 'replicas', 'platform calls a second', 'commands sent per call', 'commands Redis ran per call', 'Redis CPU per 1,000 calls (ms)', 'in flight at the platform: peak / limit', 'during the stall: peak / limit when Redis stopped', 'answers', 'answers during the stall', 'answers after it', 'answers the limit rule learned from (the host\'s loop busy)'], rows),
    '',
    ...verdictLines(results.flatMap(({ topology, runs }) => checks(topology, runs))),
    '',
    `The platform stand-in answers a report in ${LATENCY_MS} ms while at most ${KNEE} calls are in flight, ${SLOPE_MS} ms slower for each call beyond, and 429 to a call that finds ${REFUSE_ABOVE} in flight. ${CALLERS} callers of one team ask reports never asked before (each a platform call), each caller on one replica; every gateway setting at its default (the limit learned, GATEWAY_SECRET set). The replicas are whole gateways of the build in one process (bench/scale-host.mjs), each with its own Redis connections and its own governor, seats, learned limit and report cache; requests reach them through light-my-request (no HTTP on the callers' side). Commands sent: counted in the client as the replicas send them (a script is one); commands Redis ran: INFO commandstats of every node (a script and each command it runs); Redis CPU: INFO cpu, user + system, of every node. ${quick ? 'A quick run: 10 replicas instead of 50, 8 s measured.' : 'Warm-up 5 s, then 20 s measured.'} The stall: every Redis server stopped with SIGSTOP for ${STALL_S} s, then SIGCONT; the limit then is the highest in force when Redis stopped (the seats leased add up to it). The checks of calls in flight judge each call as it comes to the platform: the calls in flight there with it against the highest limit in force on any replica when it was sent (a header the stand-in reads), as the simulator judges a seat taken (test/sim/checks.ts, replicas); the peak columns count also the calls a cut of the limit left in flight, started under the limit before it. The replicas share one event loop on one core: an answer is evidence of the limit rule only when it is the first the loop read since it last waited for an event, after no more of the loop's work (every replica's) than a tenth of its latency (docs/governor.md, "The gateway's own time"). The last column: the share of the platform's answers in the measured seconds that the limit rule learned from, and how busy the loop was. Where few are, the limit learned is not what a deployment's replicas (a loop each) learn: it moves only by the start's doubling, a change of learner and faults (docs/decisions/governor-model.md, "Fifty replicas in one process").`,
    '',
    ...breakdown,
    ...timelines,
  ].join('\n')
}
