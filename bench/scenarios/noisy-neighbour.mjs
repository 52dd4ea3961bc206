// The noisy neighbour (issue 15): while team A runs, in turn, each attack on the shared
// platform credential (a route that answers 401, a route that answers 429 with
// retry-after 900, connections that ask for large answers and never read them, a burst
// of concurrent misses), team B sends one miss a second. B's latency and errors, and the
// platform's peak concurrency, on three replicas sharing one Redis.

import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent } from 'undici'
import { REPORT_ROUTE } from '../lib/fixture.mjs'
import { timedGet } from '../lib/load.mjs'
import { log, stopProcess } from '../lib/processes.mjs'
import { fmtMs, latencyFigures, markdownTable } from '../lib/stats.mjs'

export const id = 'noisy-neighbour'
export const title = 'Noisy neighbour (issue 15): team A attacks the shared credential, team B sends one miss a second, three replicas'

const REPLICAS = 3
const PLATFORM_LATENCY_MS = 100
// A's attacks go to another report route than B's reads: what the platform does to it
// (401, 429, large answers) is that route's alone.
const ATTACKED_ROUTE = '/api/v1/report/creatives/get'
const MAX_CONCURRENT = 8
const QUEUE = 200
// Per replica: each replica's queue (200) and seats (8) are what the attack fills when
// the cap and the queue are per replica.
const BURST_PER_REPLICA = 215
const SLOW_READERS_PER_REPLICA = 8
const LARGE_BYTES = 12_000_000

const day = (d) => new Date(Date.UTC(1990, 0, 1 + d)).toISOString().slice(0, 10)
let nextReport = 0
/** A distinct report on `route` (a miss): a 7-day window moving one day per request. */
const distinct = (route, extra = '') => {
  const first = nextReport++
  return `${route}?advertiserId=${100 + (first % 4)}&dateFrom=${day(first)}&dateTo=${day(first + 6)}&byDate=1${extra}`
}

/** A's attacks: each starts its load and returns a function that stops it. */
const ATTACKS = [
  {
    id: '401-route',
    label: `a route answering 401 to the valid token, 2 calls/s`,
    platform: { kind: 'status', status: 401, body: { message: 'Unauthenticated.' } },
    start: (ctx) => paced(ctx, 2, () => ctx.askA(distinct(ATTACKED_ROUTE))),
  },
  {
    id: '429-route',
    label: 'a route answering 429 with retry-after 900, 1 call/s',
    platform: { kind: 'status', status: 429, headers: { 'retry-after': '900' }, body: { message: 'Too Many Attempts.' } },
    start: (ctx) => paced(ctx, 1, () => ctx.askA(distinct(ATTACKED_ROUTE))),
  },
  {
    id: 'slow-readers',
    label: `${SLOW_READERS_PER_REPLICA} connections per replica asking for ${LARGE_BYTES / 1e6} MB answers, never reading`,
    platform: { kind: 'large', bytes: LARGE_BYTES },
    start: (ctx) => slowReaders(ctx),
  },
  {
    id: 'burst',
    label: `${BURST_PER_REPLICA} concurrent distinct misses per replica, closed loop`,
    platform: null,
    start: (ctx) => burst(ctx),
  },
]

/** `perSecond` calls a second from `send` until stopped. */
function paced(ctx, perSecond, send) {
  let stop = false
  const loop = (async () => {
    while (!stop) {
      void send()
      await sleep(1000 / perSecond)
    }
  })()
  return async () => {
    stop = true
    await loop
  }
}

/** Raw connections that send a request for a large answer and never read it. */
function slowReaders(ctx) {
  const sockets = []
  for (let i = 0; i < SLOW_READERS_PER_REPLICA * ctx.replicas.length; i++) {
    const gw = ctx.replicas[i % ctx.replicas.length]
    const socket = connect(Number(new URL(gw.url).port), '127.0.0.1')
    socket.on('error', () => undefined)
    socket.write(`GET ${distinct(ATTACKED_ROUTE)} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${ctx.keyA}\r\n\r\n`)
    socket.pause()
    sockets.push(socket)
  }
  return async () => {
    for (const socket of sockets) socket.destroy()
  }
}

/** BURST_PER_REPLICA callers per replica, each asking its next distinct report as soon as the last is answered (1 s after a refusal). */
function burst(ctx) {
  let stop = false
  const workers = Array.from({ length: BURST_PER_REPLICA * ctx.replicas.length }, async (_, i) => {
    const gw = ctx.replicas[i % ctx.replicas.length]
    while (!stop) {
      const r = await ctx.askA(distinct(REPORT_ROUTE), gw)
      // A client that honours retry-after: the attack fills queues, it does not spin on refusals.
      if (r.status === 503 || r.status === 429) await sleep(1000)
    }
  })
  return async () => {
    stop = true
    await Promise.all(workers)
  }
}

export async function run({ fixture, quick }) {
  const { startGateway, sandbox, teamKey, teamBKey, redisUrl } = fixture
  if (!redisUrl) return 'Not run: the scenario needs redis-server (three replicas share one Redis).\n'
  const phaseS = quick ? 5 : 12
  await sandbox.setLatency(PLATFORM_LATENCY_MS)
  const rows = []
  for (const attack of ATTACKS) {
    const prefix = `rgwbench-nn-${attack.id}:`
    const config = { platform: { maxConcurrent: MAX_CONCURRENT, queue: QUEUE } }
    const replicas = []
    for (let i = 0; i < REPLICAS; i++) replicas.push(await startGateway(`gw-nn-${attack.id}-${i}`, { redis: true, prefix, config }))
    const agentA = new Agent({ connections: BURST_PER_REPLICA + 20, keepAliveTimeout: 60_000, headersTimeout: 120_000, bodyTimeout: 120_000 })
    const agentB = new Agent({ connections: 50, keepAliveTimeout: 60_000, headersTimeout: 120_000, bodyTimeout: 120_000 })
    const ask = (agent, gw, path, key) => timedGet(agent, `${gw.url}${path}`, key)
    let turnA = 0
    const ctx = { replicas, keyA: teamKey, askA: (path, gw = replicas[turnA++ % replicas.length]) => ask(agentA, gw, path, teamKey) }
    await sandbox.clearRouteFailures()
    if (attack.platform) await sandbox.setRouteFailure(ATTACKED_ROUTE, attack.platform)
    await sandbox.resetConcurrency()
    const stopAttack = attack.start(ctx)
    // The attack settles in (a queue fills, a pause or a condemnation happens) before B's first call.
    await sleep(1000)
    const bCalls = []
    for (let s = 0; s < phaseS; s++) {
      bCalls.push(ask(agentB, replicas[s % replicas.length], distinct(REPORT_ROUTE, '&byCampaign=1'), teamBKey))
      await sleep(1000)
    }
    const b = await Promise.all(bCalls)
    const { peak } = await sandbox.concurrency()
    await stopAttack()
    await Promise.all([agentA.close(), agentB.close()])
    await Promise.all(replicas.map((gw) => stopProcess(gw)))
    await sandbox.clearRouteFailures()
    const figures = latencyFigures(b.map((r) => r.ms))
    const failed = b.filter((r) => r.status !== 200)
    const statuses = [...new Set(failed.map((r) => r.status))].map((s) => `${failed.filter((r) => r.status === s).length}× ${s}`).join(', ')
    rows.push([attack.label, `${b.length - failed.length} / ${b.length}${statuses ? ` (${statuses})` : ''}`, fmtMs(figures.p50), fmtMs(figures.p99), String(peak)])
    log(`noisy-neighbour ${attack.id}: B ${b.length - failed.length}/${b.length} answered 200, p50 ${fmtMs(figures.p50)}, p99 ${fmtMs(figures.p99)}; platform peak ${peak}`)
  }
  await sandbox.setLatency(0)
  return [
    markdownTable(["team A's attack", 'B answered 200', 'B p50', 'B p99', 'platform peak concurrency (3 replicas)'], rows),
    '',
    `Three gateway processes on one Redis (one key prefix per row, so no state carries over), \`platform.maxConcurrent: ${MAX_CONCURRENT}\`, \`queue: ${QUEUE}\`, team settings at their defaults; the sandbox answers after ${PLATFORM_LATENCY_MS} ms. Team A's attack runs on \`${ATTACKED_ROUTE}\` (its own route; the burst uses B's route) and starts 1 s before team B's ${phaseS} distinct misses on \`${REPORT_ROUTE}\`, one a second, sent to the replicas in turn, each measured from dispatch to last byte. The platform's peak concurrency is the most calls the sandbox was answering at once during the row, over all three replicas.`,
    '',
  ].join('\n')
}
