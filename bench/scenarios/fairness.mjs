// Fairness between teams (issue #8): team A keeps 200 distinct misses in flight against
// the sandbox at 200 ms; team B sends one miss a second (open loop). B's latency and the
// platform's peak concurrency, with the governor, with B's calls queued as team A's (one
// queue without turns), and without the governor.

import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent } from 'undici'
import { REPORT_ROUTE } from '../lib/fixture.mjs'
import { timedGet } from '../lib/load.mjs'
import { LOAD_CORE, SERVER_CORE, log, stopProcess } from '../lib/processes.mjs'
import { fmtInt, fmtMs, markdownTable, percentile } from '../lib/stats.mjs'

export const id = 'fairness'
export const title = 'Fairness (issue #8): team A keeps 200 distinct misses in flight, team B sends one miss a second'

const PLATFORM_LATENCY_MS = 50
const FAIRNESS_LATENCY_MS = 200
const FAIRNESS_IN_FLIGHT = 200
const FAIRNESS_WARMUP_MS = 3000

/** The n-th distinct report (a miss): advertiser and a 36-day window moving one day every 4 requests; team B's also by campaign. */
function fairnessReport(i, team) {
  const day = (d) => new Date(Date.UTC(1990, 0, 1 + d)).toISOString().slice(0, 10)
  const first = Math.floor(i / 4)
  return `${REPORT_ROUTE}?advertiserId=${100 + (i % 4)}&dateFrom=${day(first)}&dateTo=${day(first + 35)}&byDate=1${team === 'b' ? '&byCampaign=1' : ''}`
}

export async function run({ fixture, quick }) {
  const { startGateway, sandbox, teamKey, teamBKey: keyB } = fixture
  const FAIRNESS_B_CALLS = quick ? 8 : 20
  const setups = [
    { id: 'on', label: 'governor on (maxConcurrent 8, queue 200), B its own team', extraEnv: {}, bKey: keyB },
    { id: 'one-queue', label: 'governor on, B sent with team A\'s key (one queue, no turns)', extraEnv: {}, bKey: teamKey },
    { id: 'off', label: 'governor off (maxConcurrent 100000): only the pool\'s 64 connections bound the calls', extraEnv: { BENCH_MAX_CONCURRENT: '100000', BENCH_QUEUE: '100000' }, bKey: keyB },
  ]
  await sandbox.setLatency(FAIRNESS_LATENCY_MS)
  let next = 0
  const rows = []
  for (const setup of setups) {
    const gw = await startGateway(`gw-fair-${setup.id}`, { extraEnv: setup.extraEnv })
    const agent = new Agent({ connections: FAIRNESS_IN_FLIGHT + FAIRNESS_B_CALLS + 10, keepAliveTimeout: 60_000, headersTimeout: 60_000, bodyTimeout: 60_000 })
    const ask = (path, key) => timedGet(agent, `${gw.url}${path}`, key)
    let stop = false
    const a = { ok: 0, other: 0, okInWindow: 0 }
    let measuring = false
    // A closed loop of 200: each worker sends its next miss when the last is answered; bounded by `stop`.
    const workers = Array.from({ length: FAIRNESS_IN_FLIGHT }, async () => {
      while (!stop) {
        const r = await ask(fairnessReport(next++, 'a'), teamKey)
        if (r.status === 200) {
          a.ok += 1
          if (measuring) a.okInWindow += 1
        } else a.other += 1
      }
    })
    await sleep(FAIRNESS_WARMUP_MS)
    await sandbox.resetConcurrency()
    measuring = true
    const windowStart = performance.now()
    const bCalls = []
    for (let s = 0; s < FAIRNESS_B_CALLS; s++) {
      bCalls.push(ask(fairnessReport(next++, 'b'), setup.bKey))
      await sleep(1000)
    }
    const b = await Promise.all(bCalls)
    const windowS = (performance.now() - windowStart) / 1000
    measuring = false
    const { peak } = await sandbox.concurrency()
    stop = true
    await Promise.all(workers)
    await agent.close()
    await stopProcess(gw)
    const sorted = b.map((r) => r.ms).sort((x, y) => x - y)
    const bOk = b.filter((r) => r.status === 200).length
    const bOther = b.filter((r) => r.status !== 200).map((r) => r.status)
    rows.push([setup.label, `${bOk} / ${b.length}${bOther.length ? ` (${[...new Set(bOther)].join(', ')})` : ''}`, fmtMs(percentile(sorted, 50)), fmtMs(percentile(sorted, 99)), fmtInt(a.okInWindow / windowS), String(a.other), String(peak)])
    log(`fairness ${setup.id}: B p50 ${fmtMs(percentile(sorted, 50))}, p99 ${fmtMs(percentile(sorted, 99))}; A ${fmtInt(a.okInWindow / windowS)}/s (${a.other} not 200); platform peak ${peak}`)
  }
  await sandbox.setLatency(PLATFORM_LATENCY_MS)
  const header = ['setup', 'B answered 200', 'B p50', 'B p99', 'A answers/s', 'A not 200', 'platform peak concurrency']
  return [
    markdownTable(header, rows),
    '',
    `Platform: the sandbox at ${FAIRNESS_LATENCY_MS} ms per call. Team A: ${FAIRNESS_IN_FLIGHT} callers in a closed loop, each asking its next distinct report when the last is answered; team B: ${FAIRNESS_B_CALLS} distinct reports, one a second (open loop), measured from dispatch to last byte. A ${FAIRNESS_WARMUP_MS / 1000} s warm-up fills the queue before B starts; the platform's peak concurrency (requests the sandbox answered at once) and A's answers/s are over B's window. One gateway process per setup (core ${SERVER_CORE}), the load from this process (core ${LOAD_CORE}).`,
    '',
  ].join('\n')
}
