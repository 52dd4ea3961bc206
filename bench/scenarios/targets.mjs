// Issue 17 item 3's targets, set up as the hidden benchmark measures them:
//   - the gateway exactly as `npm start` runs it (node dist/main.js, LOG_LEVEL=warn, a
//     CONFIG_FILE with one team, advertisers ["*"], a rate limit of 10^9 a minute),
//     `taskset -c 1`; for L2-only a second one with REDIS_URL and cache.l1MaxBytes: 0;
//   - a bare node:http server sending the same 4 KB JSON body (identity, content-type and
//     content-length only), `taskset -c 1`;
//   - a platform stand-in answering that body after 20 ms (bench/bare-server.mjs), Redis,
//     wrk -t1 -c50 (no accept-encoding) and this process on core 0;
//   - throughput: 3 s warm-up then 10 s per run, bare / L1 / L2 in alternating order
//     over rounds, medians, with the server's CPU time per request;
//   - stampede: 200 keep-alive raw TCP connections opened beforehand, one fresh query
//     written on all of them at once, each timed to its full answer; exactly one
//     platform call per round. The counted rounds follow uncounted ones enough for V8 to
//     have compiled the waiters' path (a gateway's first stampedes, after hits that never
//     take it, spend up to 2.5 times a settled round's CPU): the stampede alone, as
//     bench/stampede-cpu.mjs measures it; the first rounds are shown beside.
// Targets: L1 ≥ 0.85× bare, L2-only ≥ 0.5× bare, stampede p50 ≤ platform latency + 10 ms;
// issue 54: L1 ≥ 1.0× nginx proxy_cache (one worker on the same core, in front of the same
// stand-in, its hits of the same bytes; not run without nginx), and with tracing on, every
// request sampled, server CPU per L1 hit ≤ 1.5× tracing off.
// Besides the targets, in the same rotation: L1 hits with OpenTelemetry tracing on (every
// request sampled, and 1 % of them), exporting OTLP/HTTP protobuf to a sink on core 0
// (bench/otlp-sink.mjs): the price of tracing; and with --baseline=<dir>, L1 hits of the
// gateway built in <dir> (e.g. an export of another commit, after its `npm ci`): the same
// case before and after a change.
// BENCH_STAMPEDE_CONTROL=1: 15 counted stampede rounds, each paired with a round on a
// control gateway set up as bench/stampede-cpu.mjs sets up its own (not a target);
// BENCH_STAMPEDE_CONTROL=caller: the same, the control's callers in a process of their own
// (bench/lib/stampede-caller.mjs), as that script's are.

import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { REPORT_PATH, startMainGateway } from '../lib/fixture.mjs'
import { http } from '../lib/http.mjs'
import { rawStampede, wrk } from '../lib/load.mjs'
import { CLK_TCK, GATE_FOREIGN_CORES, GATE_MAX_WAIT_MS, cpuSnapshot, foreignCores, foreignOnCore, loadAverage, quietMoment, threadRunNs, versionOf } from '../lib/machine.mjs'
import { startNginx } from '../lib/nginx.mjs'
import { LOAD_CORE, ROOT, SERVER_CORE, launch, log, pin, pinning, stopProcess, tmp } from '../lib/processes.mjs'
import { fmtInt, fmtMs, fmtX, markdownTable, median, metricValue } from '../lib/stats.mjs'
import { affinity, allCacheResults, buildInfo, gatewayLog } from '../lib/run-facts.mjs'

export const id = 'targets'
export const title = 'Issue 17 targets, measured as the hidden benchmark measures them'

const CONNECTIONS = 50
const PLATFORM_LATENCY_MS = 20
const STAMPEDE_CALLERS = 200
const TARGET_L1 = 0.85
const TARGET_L2 = 0.5
const TARGET_NGINX = 1.0
const TARGET_TRACED_CPU = 1.5
const STAMPEDE_BUDGET_MS = PLATFORM_LATENCY_MS + 10
const PLATFORM_TOKEN = 'bench-standin-token'
const CACHE_METRIC = 'gateway_cache_requests_total'

/** Runs the scenario; resolves with its Markdown section. */
export async function run({ fixture, quick, baseline = null }) {
  const WARMUP_S = quick ? 1 : 3
  const DURATION_S = quick ? 3 : 10
  const ROUNDS = quick ? 1 : 3
  // The stampede's control (the header): '1' or 'caller', else none.
  const CONTROL = ['1', 'caller'].includes(process.env.BENCH_STAMPEDE_CONTROL) ? process.env.BENCH_STAMPEDE_CONTROL : null
  const STAMPEDE_ROUNDS = quick ? 2 : CONTROL ? 15 : 5
  // Uncounted rounds first: the first, then the next COLD_ROUNDS (what this scenario counted
  // until 2026-12-01: V8 still compiling the waiters' path), then more until it has settled.
  const COLD_ROUNDS = quick ? 0 : 5
  const STAMPEDE_WARM = quick ? 1 : 8
  const { sandbox, redisUrl } = fixture
  const notes = []
  const problems = []
  const build = buildInfo()
  // Every process this scenario starts, stopped at its end or on error.
  const own = []
  const keep = (p) => (own.push(p), p)
  try {
    // ---- the report: the sandbox's ~4 KB JSON for REPORT_PATH, served by the stand-in
    const platformAnswer = await http('GET', `${sandbox.url}${REPORT_PATH}`, { headers: { authorization: `Bearer ${sandbox.token}` } })
    if (platformAnswer.status !== 200) throw new Error(`the sandbox did not answer the report: ${platformAnswer.status}`)
    const body = platformAnswer.body
    JSON.parse(body.toString('utf8'))
    const bodyFile = join(tmp, 'targets-report.json')
    writeFileSync(bodyFile, body)

    const startPlain = async (name, core, env) => {
      const [cmd, args] = pin(core, process.execPath, ['bench/bare-server.mjs'])
      const p = keep(await launch(name, cmd, args, { env: { BENCH_BODY_FILE: bodyFile, BENCH_HEADERS: 'plain', ...env }, ready: /^READY / }))
      return { ...p, pid: p.child.pid, url: `http://127.0.0.1:${JSON.parse(p.line.slice('READY '.length)).port}` }
    }
    const standin = await startPlain('targets-platform', LOAD_CORE, { BENCH_LATENCY_MS: String(PLATFORM_LATENCY_MS), BENCH_COUNT_PREFIX: '/api/v1/report/' })
    const platformCalls = async () => (await http('GET', `${standin.url}/__count`)).json().count
    const clearPlatformCalls = () => http('DELETE', `${standin.url}/__count`)
    const bare = await startPlain('targets-bare', SERVER_CORE, {})
    // nginx proxy_cache, one worker on the servers' core, caching the stand-in's answer.
    const nginx = versionOf('nginx', ['-v']) ? keep(await startNginx({ origin: standin.url, platformToken: PLATFORM_TOKEN, name: 'targets-nginx', valid: '1h' })) : null
    if (!nginx) notes.push('nginx row not run: nginx is not installed (apt-get install -y nginx).')

    // ---- the gateways, as `npm start` runs them
    const { hashApiKey } = await import('../../dist/access/api-keys.js')
    const key = `rgw_${randomBytes(32).toString('base64url')}`
    const teamConfig = { teams: { bench: { keys: [hashApiKey(key)], advertisers: ['*'], rateLimit: { max: 1_000_000_000, window: '1m' } } } }
    const gateway = (name, extra) => startMainGateway(name, { platformUrl: standin.url, platformToken: PLATFORM_TOKEN, ...extra }).then(keep)
    const gwL1 = await gateway('targets-l1', { config: teamConfig })
    const gwL2 = redisUrl ? await gateway('targets-l2', { config: { ...teamConfig, cache: { l1MaxBytes: 0 } }, redisUrl }) : null
    if (!gwL2) notes.push('L2-only row not run: redis-server is not installed.')
    // Tracing on: the standard variables, spans to a sink that takes them and keeps counts.
    const [sinkCmd, sinkArgs] = pin(LOAD_CORE, process.execPath, ['bench/otlp-sink.mjs'])
    const sinkProcess = keep(await launch('targets-otlp-sink', sinkCmd, sinkArgs, { ready: /^READY / }))
    const sink = `http://127.0.0.1:${JSON.parse(sinkProcess.line.slice('READY '.length)).port}`
    const sinkCount = async () => (await http('GET', `${sink}/__count`)).json()
    const traced = (sampler, ratio) => ({ config: teamConfig, env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink, OTEL_TRACES_SAMPLER: sampler, ...(ratio ? { OTEL_TRACES_SAMPLER_ARG: ratio } : {}) } })
    const gwTraced = await gateway('targets-traced', traced('parentbased_always_on'))
    const gwSampled = await gateway('targets-traced-1pct', traced('parentbased_traceidratio', '0.01'))
    const gwBase = baseline ? await gateway('targets-baseline', { config: teamConfig, root: baseline }) : null
    const gwBaseTraced = baseline ? await gateway('targets-baseline-traced', { ...traced('parentbased_always_on'), root: baseline }) : null
    const metricsOf = async (gw) => (await http('GET', `${gw.admin}/metrics`)).body.toString('utf8')

    /** One GET as wrk sends it (the key, no accept-encoding): 200, x-cache `want`, the platform's bytes as they are. */
    const expect = async (name, url, want) => {
      const r = await http('GET', url, { headers: { 'x-api-key': key } })
      const problem =
        r.status !== 200
          ? `status ${r.status}: ${r.body.toString('utf8').slice(0, 200)}`
          : want && r.headers['x-cache'] !== want
            ? `x-cache ${r.headers['x-cache']}, not ${want}`
            : r.headers['content-encoding']
              ? `content-encoding ${r.headers['content-encoding']} without accept-encoding`
              : !r.body.equals(body)
                ? `a body of ${r.body.length} bytes other than the platform's ${body.length}`
                : null
      if (problem) throw new Error(`${name}: ${problem}`)
      return r
    }
    /**
     * The report's first ask (a MISS), then asks until one is a HIT, as a caller would;
     * a HIT should come at once: each further MISS (and its platform call) is a problem.
     */
    const fill = async (name, gw) => {
      await clearPlatformCalls()
      await expect(name, `${gw.url}${REPORT_PATH}`, 'MISS')
      const misses = []
      for (let attempt = 0; attempt < 40; attempt += 1) {
        const r = await http('GET', `${gw.url}${REPORT_PATH}`, { headers: { 'x-api-key': key } })
        if (r.status === 200 && r.headers['x-cache'] === 'HIT') break
        misses.push(`${r.status} ${r.headers['x-cache'] ?? '-'}`)
        await sleep(250)
      }
      const calls = await platformCalls()
      if (misses.length) problems.push(`${name}: the ask after its first MISS was answered ${misses.length} more time(s) without a HIT (${misses.slice(0, 3).join(', ')}), ${calls} platform calls in all; then a HIT`)
      else if (calls !== 1) problems.push(`${name}: filling the cache took ${calls} platform calls, not 1`)
    }
    await expect('bare', `${bare.url}${REPORT_PATH}`, null)
    if (nginx) {
      await clearPlatformCalls()
      await expect('nginx', `${nginx.url}${REPORT_PATH}`, null)
      const again = await expect('nginx', `${nginx.url}${REPORT_PATH}`, null)
      if (again.headers['x-cache-status'] !== 'HIT' || (await platformCalls()) !== 1) throw new Error(`nginx: its second ask was ${again.headers['x-cache-status']}, ${await platformCalls()} platform calls`)
    }
    await fill('gateway L1', gwL1)
    await expect('gateway L1', `${gwL1.url}${REPORT_PATH}`, 'HIT')
    for (const [name, gw] of [['gateway L1 traced', gwTraced], ['gateway L1 traced 1 %', gwSampled], ['gateway L1 baseline', gwBase], ['gateway L1 baseline traced', gwBaseTraced]]) {
      if (!gw) continue
      await fill(name, gw)
      await expect(name, `${gw.url}${REPORT_PATH}`, 'HIT')
    }
    if (gwL2) {
      await fill('gateway L2-only', gwL2)
      const m0 = metricValue(await metricsOf(gwL2), CACHE_METRIC, { result: 'HIT', tier: 'l2' })
      await expect('gateway L2-only', `${gwL2.url}${REPORT_PATH}`, 'HIT')
      const m1 = metricValue(await metricsOf(gwL2), CACHE_METRIC, { result: 'HIT', tier: 'l2' })
      if (m1 - m0 !== 1) throw new Error(`gateway L2-only: a HIT did not count as an L2 hit (${m1 - m0})`)
    }
    log(`targets: report ${body.length} bytes of JSON; pinning gateway ${affinity(gwL1.pid)}, bare ${affinity(bare.pid)}, platform stand-in ${affinity(standin.pid)}, this process ${affinity(process.pid)}`)

    // ---- throughput: bare / L1 / L2 in alternating order
    const cases = [
      { id: 'bare', label: 'bare node:http, same 4 KB body', url: `${bare.url}${REPORT_PATH}`, pid: bare.pid },
      nginx && { id: 'nginx', label: 'nginx proxy_cache hits (1 worker, same core)', url: `${nginx.url}${REPORT_PATH}`, pid: nginx.pid },
      { id: 'l1', label: 'gateway L1 hits', gw: gwL1, tier: 'l1', target: TARGET_L1 },
      gwL2 && { id: 'l2', label: 'gateway L2-only hits (Redis, l1MaxBytes 0)', gw: gwL2, tier: 'l2', target: TARGET_L2 },
      { id: 'traced', label: 'gateway L1 hits, tracing on (every request sampled, OTLP/HTTP protobuf)', gw: gwTraced, tier: 'l1', spans: true },
      { id: 'traced-1pct', label: 'gateway L1 hits, tracing on (1 % sampled: parentbased_traceidratio 0.01)', gw: gwSampled, tier: 'l1', spans: true },
      gwBase && { id: 'baseline', label: `gateway L1 hits, baseline build (${baseline})`, gw: gwBase, tier: 'l1' },
      gwBaseTraced && { id: 'baseline-traced', label: `gateway L1 hits, baseline build, tracing on (every request sampled)`, gw: gwBaseTraced, tier: 'l1', spans: true },
    ]
      .filter(Boolean)
      .map((c) => (c.gw ? { ...c, url: `${c.gw.url}${REPORT_PATH}`, pid: c.gw.pid } : c))
    const runs = Object.fromEntries(cases.map((c) => [c.id, []]))
    const measure = async (c) => {
      if (c.gw) await expect(c.label, c.url, 'HIT')
      await wrk(c.url, { seconds: WARMUP_S, connections: CONNECTIONS, key, gzip: false })
      await quietMoment()
      const m0 = c.gw ? await metricsOf(c.gw) : null
      const s0 = c.spans ? await sinkCount() : null
      await clearPlatformCalls()
      const load = loadAverage()
      const before = cpuSnapshot(c.pid)
      const r = await wrk(c.url, { seconds: DURATION_S, connections: CONNECTIONS, key, gzip: false })
      const after = cpuSnapshot(c.pid)
      r.load = load
      r.foreign = foreignCores(before, after)
      // CPU time of the server under test per request: unlike req/s, barely moved by other load.
      r.cpuUs = before && after ? ((after.server - before.server) / CLK_TCK / r.requests) * 1e6 : null
      // How much of its core the server had (well under 1: something else held it back)
      // and what else ran on that core meanwhile.
      r.serverBusy = r.cpuUs === null ? null : (r.cpuUs * r.rps) / 1e6
      r.foreignHere = pinning() ? foreignOnCore(before, after, SERVER_CORE) : null
      r.calls = await platformCalls()
      if (s0) {
        // What reached the collector during the run (the batches of the spans made in it, give or take one).
        const s1 = await sinkCount()
        r.exportKBs = (s1.bytes - s0.bytes) / 1024 / DURATION_S
        r.exports = s1.exports - s0.exports
        r.spans = s1.spans - s0.spans
      }
      if (c.gw) {
        // The gateway's own count: every request of the run a HIT of the tier under test.
        const m1 = await metricsOf(c.gw)
        r.tierHits = metricValue(m1, CACHE_METRIC, { result: 'HIT', tier: c.tier }) - metricValue(m0, CACHE_METRIC, { result: 'HIT', tier: c.tier })
        r.otherResults = allCacheResults(m1) - allCacheResults(m0) - r.tierHits
        if (r.tierHits < r.requests || r.otherResults !== 0) problems.push(`${c.id} run: ${fmtInt(r.tierHits)} ${c.tier} HITs and ${fmtInt(r.otherResults)} other cache results for ${fmtInt(r.requests)} requests`)
      }
      if (r.calls !== 0) problems.push(`${c.id} run: ${r.calls} platform calls during a hit run`)
      if (r.errors) problems.push(`${c.id} run: ${r.errors} errors (${r.errorDetail})`)
      runs[c.id].push(r)
      log(
        `${c.id.padEnd(4)} ${fmtInt(r.rps).padStart(7)} req/s  p50 ${fmtMs(r.p50)}  p99 ${fmtMs(r.p99)}  server CPU ${r.cpuUs?.toFixed(1) ?? '?'} µs/req` +
          `${r.tierHits !== undefined ? `  ${c.tier} HITs ${fmtInt(r.tierHits)}/${fmtInt(r.requests)}` : ''}  (server busy ${r.serverBusy?.toFixed(2) ?? '?'} cores; other load ${r.foreign?.toFixed(2) ?? '?'} cores, ${r.foreignHere?.toFixed(2) ?? '?'} of them on core ${SERVER_CORE}; load average ${load})`,
      )
    }
    for (let round = 0; round < ROUNDS; round += 1) {
      // Alternate the order, so a slow drift of the machine does not favour one case.
      const order = cases.map((_, i) => cases[(i + round) % cases.length])
      log(`targets round ${round + 1}/${ROUNDS}: ${order.map((c) => c.id).join(', ')} (${WARMUP_S} s warm-up + ${DURATION_S} s each, wrk -t1 -c${CONNECTIONS})`)
      for (const c of order) await measure(c)
    }

    // ---- stampedes: 200 raw connections, one fresh query each round
    const tag = Date.now().toString(36)
    const stampedes = {}
    const firstRounds = {}
    const coldRounds = {}
    /** One stampede round on `gw`: the waiters' times, its platform calls and the gateway's CPU. */
    const stampedeRound = async (gw, name) => {
      let cpuNs = 0
      const r = await rawStampede({
        port: gw.port,
        callers: STAMPEDE_CALLERS,
        path: `${REPORT_PATH}&r=${tag}-${name}`,
        key,
        before: async () => {
          await clearPlatformCalls()
          cpuNs = threadRunNs(gw.pid)
        },
        countCalls: () => {
          // The gateway's CPU over the round (every thread, to 200 ms after the last answer).
          cpuNs = threadRunNs(gw.pid) - cpuNs
          return platformCalls()
        },
        expectBody: body,
      })
      r.cpuMs = cpuNs / 1e6
      return r
    }
    // BENCH_STAMPEDE_CONTROL=1: a gateway started just before the stampedes and given nothing
    // else (as bench/stampede-cpu.mjs starts its own) takes a round, with no quietMoment
    // before it, beside each of the L1 gateway's, the order alternating: the two set-ups
    // paired in one run.
    const control = CONTROL ? await gateway('targets-stampede-control', { config: teamConfig }) : null
    // BENCH_STAMPEDE_CONTROL=caller: the control's callers in a process that does nothing else.
    const caller = CONTROL === 'caller' ? spawn(...pin(LOAD_CORE, process.execPath, ['bench/lib/stampede-caller.mjs']), { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }) : null
    const callerRound = (name) =>
      new Promise((resolve, reject) => {
        caller.once('message', (m) => (m.error ? reject(new Error(m.error)) : resolve(m)))
        caller.send({ port: control.port, path: `${REPORT_PATH}&r=${tag}-${name}`, key, gatewayPid: control.pid, standin: standin.url, bodyFile })
      })
    const controlRound = (name) => (caller ? callerRound(name) : stampedeRound(control, name))
    const controlRounds = []
    const runStampedes = async (sid, gw, withControl = false) => {
      stampedes[sid] = []
      coldRounds[sid] = []
      for (let round = 0; round < STAMPEDE_WARM + STAMPEDE_ROUNDS; round += 1) {
        const counted = round >= STAMPEDE_WARM
        if (withControl && round % 2 === 0) {
          const c = await controlRound(`control-${round}`)
          log(`stampede control round ${round}${counted ? '' : ' (not counted)'}: p50 ${fmtMs(c.p50)}, gateway CPU ${fmtMs(c.cpuMs)}, its callers' collections ${fmtMs(c.clientGcMs)} and CPU ${fmtMs(c.clientCpuMs)}, ${c.calls} call(s)`)
          if (counted) controlRounds.push(c)
        }
        await quietMoment()
        const load = loadAverage()
        const r = await stampedeRound(gw, `${sid}-${round}`)
        r.load = load
        log(
          `${sid} round ${round}${counted ? '' : ' (warm-up, not counted)'}: ${r.calls} platform call(s), min ${fmtMs(r.min)}, p50 ${fmtMs(r.p50)}, p99 ${fmtMs(r.p99)}, max ${fmtMs(r.max)}, gateway CPU ${fmtMs(r.cpuMs)}` +
            ` (writes took ${fmtMs(r.writesMs)}, this process's collections ${fmtMs(r.clientGcMs)} and CPU ${fmtMs(r.clientCpuMs)}); ${Object.entries(r.statuses).map(([k, v]) => `${v}× ${k}`).join(', ')}${r.wrongBodies ? `; ${r.wrongBodies} wrong bodies` : ''}`,
        )
        if (!r.ok) problems.push(`${sid} round ${round}: ${JSON.stringify(r.statuses)}${r.wrongBodies ? `, ${r.wrongBodies} bodies other than the platform's` : ''}`)
        if (r.calls !== 1) problems.push(`${sid} round ${round}${counted ? '' : ' (warm-up)'}: ${r.calls} platform calls, not 1`)
        if (counted) stampedes[sid].push(r)
        else if (round === 0) firstRounds[sid] = r
        else if (round <= COLD_ROUNDS) coldRounds[sid].push(r)
        if (withControl && round % 2 === 1) {
          const c = await controlRound(`control-${round}`)
          log(`stampede control round ${round}${counted ? '' : ' (not counted)'}: p50 ${fmtMs(c.p50)}, gateway CPU ${fmtMs(c.cpuMs)}, its callers' collections ${fmtMs(c.clientGcMs)} and CPU ${fmtMs(c.clientCpuMs)}, ${c.calls} call(s)`)
          if (counted) controlRounds.push(c)
        }
      }
    }
    try {
      await runStampedes('stampede-l1', gwL1, Boolean(control))
    } finally {
      caller?.disconnect()
    }
    if (gwL2) await runStampedes('stampede-l2', gwL2)

    // ---- the tables
    const agg = (cid) => {
      const rs = runs[cid]
      return { rps: median(rs.map((r) => r.rps)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), cpuUs: median(rs.map((r) => r.cpuUs ?? NaN)), rs }
    }
    const bareA = agg('bare')
    const rows = cases.map((c) => {
      const a = agg(c.id)
      const check = c.gw ? `${fmtInt(a.rs.reduce((s, r) => s + r.tierHits, 0))} ${c.tier} HITs / ${fmtInt(a.rs.reduce((s, r) => s + r.requests, 0))} req` : '—'
      return [c.label, fmtInt(a.rps), fmtMs(a.p50), fmtMs(a.p99), a.cpuUs.toFixed(1), fmtX(a.rps / bareA.rps), fmtX(bareA.cpuUs / a.cpuUs), check]
    })
    const throughputTable = markdownTable(['case', 'req/s', 'p50', 'p99', 'server CPU µs/req', '× bare (req/s)', '× bare (CPU/req)', 'served as'], rows)

    const sAgg = (sid, rs = stampedes[sid]) => ({
      min: median(rs.map((r) => r.min)),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      max: median(rs.map((r) => r.max)),
      cpuMs: median(rs.map((r) => r.cpuMs)),
      calls: rs.map((r) => r.calls),
      rs,
    })
    const stampedeLabel = {
      'stampede-l1': `gateway (no Redis): ${STAMPEDE_CALLERS} identical misses`,
      'stampede-l2': `L2-only gateway (Redis, l1MaxBytes 0): ${STAMPEDE_CALLERS} identical misses (information, not a target)`,
    }
    const stampedeTable = markdownTable(
      ['stampede', 'min', 'p50', 'p99', 'max', 'gateway CPU a round', 'platform calls per round'],
      Object.keys(stampedes).flatMap((sid) => {
        const s = sAgg(sid)
        const f = firstRounds[sid]
        const c = coldRounds[sid].length ? sAgg(sid, coldRounds[sid]) : null
        return [
          [`${stampedeLabel[sid]}, median of ${s.rs.length} rounds after ${STAMPEDE_WARM} uncounted`, fmtMs(s.min), fmtMs(s.p50), fmtMs(s.p99), fmtMs(s.max), fmtMs(s.cpuMs), s.calls.join(', ')],
          [`the same, its first round (not counted)`, fmtMs(f.min), fmtMs(f.p50), fmtMs(f.p99), fmtMs(f.max), fmtMs(f.cpuMs), String(f.calls)],
          ...(c ? [[`the same, its rounds 2 to ${COLD_ROUNDS + 1} (not counted; counted until 2026-12-01), median`, fmtMs(c.min), fmtMs(c.p50), fmtMs(c.p99), fmtMs(c.max), fmtMs(c.cpuMs), c.calls.join(', ')]] : []),
        ]
      }),
    )

    // ---- targets
    const invalid = (cid) => problems.some((p) => p.startsWith(`${cid} run`))
    const targetLines = []
    for (const c of cases.filter((x) => x.target)) {
      const a = agg(c.id)
      const x = a.rps / bareA.rps
      const ok = x >= c.target
      const paired = runs[c.id].map((r, i) => r.rps / runs.bare[i].rps)
      const by = ok ? `${((x / c.target - 1) * 100).toFixed(0)} % above the target` : `short by ${(c.target - x).toFixed(2)}×: needs ${fmtInt(c.target * bareA.rps)} req/s, ${((c.target / x - 1) * 100).toFixed(0)} % more`
      targetLines.push(
        `- ${invalid(c.id) || invalid('bare') ? `INVALID (${ok ? 'PASS' : 'MISS'} on these figures, but its runs were not all what they should be: see the problems below)` : ok ? 'PASS' : 'MISS'} ${c.label}: ${fmtX(x)} the bare server's req/s, median ${fmtInt(a.rps)} vs ${fmtInt(bareA.rps)} (target ≥ ${c.target}×; ${by}). ` +
          `Round by round: ${paired.map(fmtX).join(', ')}. By server CPU per request: ${fmtX(bareA.cpuUs / a.cpuUs)} (${a.cpuUs.toFixed(1)} vs ${bareA.cpuUs.toFixed(1)} µs).`,
      )
    }
    const verdict = (ids, ok) => (ids.some(invalid) ? `INVALID (${ok ? 'PASS' : 'MISS'} on these figures, but its runs were not all what they should be: see the problems below)` : ok ? 'PASS' : 'MISS')
    const l1 = agg('l1')
    if (runs.nginx) {
      const n = agg('nginx')
      const x = l1.rps / n.rps
      targetLines.push(
        `- ${verdict(['l1', 'nginx'], x >= TARGET_NGINX)} gateway L1 hits against nginx proxy_cache on the same core: ${fmtX(x)} nginx's req/s, median ${fmtInt(l1.rps)} vs ${fmtInt(n.rps)} (target ≥ ${TARGET_NGINX}×). ` +
          `Round by round: ${runs.l1.map((r, i) => fmtX(r.rps / runs.nginx[i].rps)).join(', ')}. By server CPU per request: ${fmtX(n.cpuUs / l1.cpuUs)} (${l1.cpuUs.toFixed(1)} vs ${n.cpuUs.toFixed(1)} µs, nginx's master and worker).`,
      )
    }
    const on = agg('traced')
    const price = on.cpuUs / l1.cpuUs
    targetLines.push(
      `- ${verdict(['l1', 'traced'], price <= TARGET_TRACED_CPU)} tracing on, every request sampled: server CPU per L1 hit ${fmtX(price)} tracing off (${on.cpuUs.toFixed(1)} vs ${l1.cpuUs.toFixed(1)} µs, medians; target ≤ ${TARGET_TRACED_CPU}×). ` +
        `Round by round: ${runs.traced.map((r, i) => fmtX(r.cpuUs / runs.l1[i].cpuUs)).join(', ')}. Spans the sink received per hit: ${on.rs.map((r) => (r.spans / r.requests).toFixed(2)).join(', ')} (3: the request, admission, cache.lookup).`,
    )
    const s1 = sAgg('stampede-l1')
    const oneCall = s1.calls.every((n) => n === 1)
    const inBudget = s1.p50 <= STAMPEDE_BUDGET_MS
    targetLines.push(
      `- ${oneCall && s1.rs.every((r) => r.ok) ? (inBudget ? 'PASS' : 'MISS') : 'INVALID (platform calls or answers wrong)'} stampede: the waiters' p50 ${fmtMs(s1.p50)} (median of ${s1.rs.length} rounds after ${STAMPEDE_WARM} uncounted: ${s1.rs.map((r) => fmtMs(r.p50)).join(', ')}; gateway CPU a round ${s1.rs.map((r) => fmtMs(r.cpuMs)).join(', ')}), ` +
        `target ≤ ${STAMPEDE_BUDGET_MS} ms = platform latency ${PLATFORM_LATENCY_MS} ms + 10 ms (${inBudget ? `${fmtMs(STAMPEDE_BUDGET_MS - s1.p50)} to spare` : `${fmtMs(s1.p50 - STAMPEDE_BUDGET_MS)} over`}); platform calls per round ${s1.calls.join(', ')} (must be exactly 1). The first, uncounted round (the gateway's first stampede, after the hit runs): p50 ${fmtMs(firstRounds['stampede-l1'].p50)}, CPU ${fmtMs(firstRounds['stampede-l1'].cpuMs)}, ${firstRounds['stampede-l1'].calls} platform call(s).` +
        (coldRounds['stampede-l1'].length
          ? ` Its next ${coldRounds['stampede-l1'].length} (uncounted; this target's rounds until 2026-12-01, V8 still compiling the waiters' path): p50 ${coldRounds['stampede-l1'].map((r) => fmtMs(r.p50)).join(', ')}, CPU ${coldRounds['stampede-l1'].map((r) => fmtMs(r.cpuMs)).join(', ')}.`
          : ''),
    )
    if (controlRounds.length) {
      const rs = stampedes['stampede-l1']
      const pairs = controlRounds.map((c, i) => ({ p50: rs[i].p50 - c.p50, cpuMs: rs[i].cpuMs - c.cpuMs }))
      targetLines.push(
        `- Control (BENCH_STAMPEDE_CONTROL=${CONTROL}, not a target): a gateway started just before the stampedes, given nothing else, its rounds without quietMoment${caller ? ', its callers in a process of their own' : ''}, paired with the L1 gateway's round by round: p50 ${fmtMs(median(controlRounds.map((r) => r.p50)))} (rounds ${controlRounds.map((r) => fmtMs(r.p50)).join(', ')}), CPU a round ${fmtMs(median(controlRounds.map((r) => r.cpuMs)))}; ` +
          `the L1 gateway's minus the control's, medians of the rounds' differences: p50 ${fmtMs(median(pairs.map((d) => d.p50)))} (higher in ${pairs.filter((d) => d.p50 > 0).length} of ${pairs.length}), CPU ${fmtMs(median(pairs.map((d) => d.cpuMs)))}; ` +
          `the callers' process in its own collections during the rounds, summed: ${fmtMs(rs.reduce((sum, r) => sum + r.clientGcMs, 0))} (this one) against ${fmtMs(controlRounds.reduce((sum, r) => sum + r.clientGcMs, 0))} (the control's), in ${rs.filter((r) => r.clientGcMs > 0).length} and ${controlRounds.filter((r) => r.clientGcMs > 0).length} of ${pairs.length} rounds; its CPU a round, medians, ${fmtMs(median(rs.map((r) => r.clientCpuMs)))} against ${fmtMs(median(controlRounds.map((r) => r.clientCpuMs)))}.`,
      )
    }
    const loads = [...Object.values(runs).flat(), ...Object.values(stampedes).flat()].map((r) => r.load)
    const foreign = Object.values(runs).flat().map((r) => r.foreign).filter((f) => typeof f === 'number')
    const foreignHere = Object.values(runs).flat().map((r) => r.foreignHere).filter((f) => typeof f === 'number')
    targetLines.push(
      `- Machine load with these figures: load average (1/5/15 min) ${loads[0]} at the first measured run, ${loads.at(-1)} at the last; other processes used a median ${median(foreign).toFixed(2)} cores (max ${Math.max(...foreign).toFixed(2)}) during the throughput runs${foreignHere.length ? `, ${median(foreignHere).toFixed(2)} (max ${Math.max(...foreignHere).toFixed(2)}) of them on the servers' core ${SERVER_CORE}` : ''}.`,
    )

    const logged = [gwL1, gwL2, gwTraced, gwSampled, gwBase, gwBaseTraced].filter(Boolean).map(gatewayLog).filter(Boolean)
    // The price of tracing, and of this build against the baseline: L1 hits side by side.
    const priced = cases.filter((c) => c.spans || c.id.startsWith('baseline'))
    if (priced.length) {
      const lines = priced.map((c) => {
        const a = agg(c.id)
        // A baseline traced is priced against the baseline's own L1 row.
        const [ref, refId] = c.id === 'baseline-traced' ? [agg('baseline'), 'baseline'] : [l1, 'l1']
        const exported = c.spans ? ` Exported to the sink: ${a.rs.map((r) => `${fmtInt(r.exports)} exports, ${fmtInt(r.exportKBs)} KB/s, ${(r.spans / r.requests).toFixed(2)} spans a hit`).join(' / ')}.` : ''
        return `- ${c.label}: ${fmtInt(a.rps)} req/s, ${fmtX(a.rps / ref.rps)} the ${refId} row's (${fmtX(a.rps / bareA.rps)} bare); server CPU ${a.cpuUs.toFixed(1)} µs/req against ${ref.cpuUs.toFixed(1)} (${fmtX(a.cpuUs / ref.cpuUs)}). Round by round against ${refId}, req/s: ${a.rs.map((r, i) => fmtX(r.rps / runs[refId][i].rps)).join(', ')}; CPU: ${a.rs.map((r, i) => fmtX(r.cpuUs / runs[refId][i].cpuUs)).join(', ')}.${exported}`
      })
      targetLines.push('', 'Against the L1 rows (not targets):', '', ...lines)
    }
    const perRun = (cid) =>
      runs[cid].map((r) => `${fmtInt(r.rps)} (${r.cpuUs?.toFixed(1) ?? '?'} µs, ${r.serverBusy?.toFixed(2) ?? '?'}, ${r.foreignHere?.toFixed(2) ?? '?'}, ${r.load.split(' ')[0]})`).join(' / ')
    notes.push(
      `Build: dist/ from ${build}. The report: \`GET ${REPORT_PATH}\`, ${fmtInt(body.length)} bytes of JSON (the sandbox's answer for it), sent as it is (identity) by the bare server and by the platform stand-in; wrk sends \`x-api-key\` and no accept-encoding, and every answer was checked to be those bytes without content-encoding.`,
      `Gateways: \`node dist/main.js\` (what \`npm start\` runs) with HOST/PORT/ADMIN_HOST/ADMIN_PORT on 127.0.0.1, LOG_LEVEL=warn, PLATFORM_BASE_URL (the stand-in), PLATFORM_TOKEN (any: the stand-in accepts all), CONFIG_FILE: one team \`bench\`, \`advertisers: ["*"]\`, \`rateLimit: { max: 1000000000, window: 1m }\`, one key; the gateway's other variables inherited from the shell removed. L2-only: the same plus REDIS_URL (redis-server on 127.0.0.1, core ${LOAD_CORE}) and \`cache: { l1MaxBytes: 0 }\`. Every other setting is the default.`,
      `Traced gateways: the same as L1 plus OTEL_EXPORTER_OTLP_ENDPOINT (bench/otlp-sink.mjs on core ${LOAD_CORE}, answering each export at once and keeping counts), the default protocol (http/protobuf) and batching (BatchSpanProcessor: a queue of 8,192 spans, batches of 2,048, spans past a full queue dropped, as in production: src/config/tracing.ts), OTEL_TRACES_SAMPLER parentbased_always_on (each hit three spans: the request, admission, the L1 lookup) or parentbased_traceidratio with OTEL_TRACES_SAMPLER_ARG 0.01.${baseline ? ` Baseline: the same as L1, run from ${baseline}/dist/main.js.` : ''}`,
      `nginx: bench/lib/nginx.mjs, one worker process \`taskset -c ${SERVER_CORE}\`, \`proxy_cache\` (valid 1 h, \`proxy_cache_lock\`) in front of the same platform stand-in, keep-alive to the callers, access log off; its hits are checked to be the platform's bytes (\`x-cache-status: HIT\`, one platform call in all); its CPU is its master's and worker's.`,
      `Bare server and platform stand-in: bench/bare-server.mjs with BENCH_HEADERS=plain (node:http, content-type and content-length only, the body from memory); the stand-in answers every call after ${PLATFORM_LATENCY_MS} ms and counts calls to /api/v1/report/.`,
      `Pinning: ${pinning() ? `gateways and bare server \`taskset -c ${SERVER_CORE}\` (affinity read back: gateway ${affinity(gwL1.pid)}, bare ${affinity(bare.pid)}); wrk, this script (stampede callers), the platform stand-in and Redis on core ${LOAD_CORE}` : 'NONE (taskset or a second core missing): not the hidden benchmark set-up'}.`,
      `Throughput: per run a ${WARMUP_S} s wrk warm-up, a wait (up to ${GATE_MAX_WAIT_MS / 1000} s, within the run's budget) for other processes to use < ${GATE_FOREIGN_CORES} cores, then wrk -t1 -c${CONNECTIONS} for ${DURATION_S} s; ${ROUNDS} round(s) of bare / L1 / L2 in rotating order; each column is the median of the runs. × bare (req/s) is the ratio of the medians, which the targets use; × bare (CPU/req) is the bare server's CPU time per request over the gateway's (process user + system time over wrk's completed requests), steadier on a shared machine. Per run, req/s (server CPU µs/req, cores the server used, other load on core ${SERVER_CORE} in cores, 1-min load average): ${cases.map((c) => `${c.id} ${perRun(c.id)}`).join('; ')}.`,
      `Served as: the gateway's own count (${CACHE_METRIC} on its admin /metrics) of HITs of the tier under test during the measured runs, against wrk's completed requests (the gateway also counts the ≤ ${CONNECTIONS} requests in flight when wrk stops); any other cache result (MISS, L1 HIT on the L2-only gateway, ...) or platform call during a run is listed under problems.`,
      `The gateways' own output (LOG_LEVEL=warn) over the whole scenario: ${logged.length ? logged.join('. ') : 'none'}.`,
      `Stampede: ${STAMPEDE_CALLERS} raw TCP connections (node:net) opened and each used once for GET /healthz (keep-alive), then one GET of a query nobody asked before (\`&r=<run>-<round>\` added to the report's query) written on all of them in one loop; each time runs from the start of the writes to the last byte of its answer (content-length). ${STAMPEDE_ROUNDS} counted rounds after ${STAMPEDE_WARM} that are not counted (their platform calls are checked all the same): a gateway's first stampedes, after hits answered at the socket entrance, are its waiters' path's first runs through Node's parser and the fill's answers, which V8 compiles over several rounds (a round's CPU 1.5 to 2.5 times a settled one's in its rounds 2 to 4; docs/decisions/stampede-warm-rounds.md); the table shows the medians over the rounds; the gateway's CPU a round is every thread's run time (/proc schedstat) from just before the writes to 200 ms after the last answer; platform calls are the stand-in's count 200 ms after the last answer.`,
    )
    const section = [
      throughputTable,
      '',
      stampedeTable,
      '',
      'Targets:',
      '',
      ...targetLines,
      '',
      ...(problems.length ? ['Problems (the set-up or the gateway did not behave as it should):', '', ...problems.map((p) => `- ${p}`), ''] : []),
      'Notes:',
      '',
      ...notes.map((n) => `- ${n}`),
      '',
    ].join('\n')
    return section
  } finally {
    await Promise.all(own.map((p) => stopProcess(p)))
  }
}
