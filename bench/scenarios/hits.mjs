// The hit path against its ceilings: the same report (a ~4 KB JSON body, ~0.8 KB gzip)
// asked, on loopback only, of
//   - a bare node:http server sending the gateway's stored bytes (the ceiling of any
//     Node gateway on one core),
//   - nginx proxy_cache (proxy_cache_lock on) in front of a tiny upstream that sends
//     the same bytes (a missing nginx is reported, not fatal),
//   - for reference, a minimal Fastify 5 + lru-cache server sending the same bytes,
//   - the gateway: L1 hits, L2-only hits (Redis, L1 off), misses against the platform
//     sandbox at 50 ms latency, and 200 concurrent identical misses (stampede), in one
//     process and in two processes sharing one Redis; and the same stampede on nginx.
// Throughput runs are repeated in alternating order and reported as medians; before each
// run the scenario waits (bounded) for other processes on the machine to go quiet, and
// it records the server's CPU time per request, which other load moves much less than req/s.

import { writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { gunzipSync } from 'node:zlib'
import { REPORT_PATH } from '../lib/fixture.mjs'
import { http } from '../lib/http.mjs'
import { wrk, stampede } from '../lib/load.mjs'
import { CLK_TCK, GATE_FOREIGN_CORES, GATE_MAX_WAIT_MS, cpuSnapshot, foreignCores, gateBudget, quietMoment, versionOf } from '../lib/machine.mjs'
import { startNginx } from '../lib/nginx.mjs'
import { LOAD_CORE, SERVER_CORE, launch, log, pin, pinning, stopProcess, tmp } from '../lib/processes.mjs'
import { fmtInt, fmtMs, fmtX, markdownTable, median, metricValue } from '../lib/stats.mjs'

export const id = 'hits'
export const title = 'Hits, misses and stampedes against a bare server and nginx'

const CONNECTIONS = 50
const PLATFORM_LATENCY_MS = 50
const STAMPEDE_CALLERS = 200
const WARMUP_S = 2

/** Runs the scenario; resolves with its Markdown section. */
export async function run({ fixture, quick, notes: runNotes }) {
  const { sandbox, redisUrl, teamKey, startGateway, purge, metrics, expectCache } = fixture
  const DURATION_S = quick ? 3 : 6
  const ROUNDS = quick ? 1 : 3
  const STAMPEDE_ROUNDS = quick ? 1 : 3
  const notes = []
  if (!redisUrl) notes.push('Redis rows skipped: redis-server is not installed.')
  const nginxVersion = versionOf('nginx', ['-v'])
  // Every process this scenario starts, stopped at its end.
  const own = []
  const keep = (p) => (own.push(p), p)

  const gwL1 = keep(await startGateway('gw-l1'))
  const gwMiss = keep(await startGateway('gw-miss'))
  const gwL2 = redisUrl ? keep(await startGateway('gw-l2', { redis: true, l1: false })) : null
  const gwShared = redisUrl
    ? [keep(await startGateway('gw-shared-a', { redis: true, prefix: 'rgwbench-shared:' })), keep(await startGateway('gw-shared-b', { redis: true, prefix: 'rgwbench-shared:' }))]
    : null

  // ---- the stored bytes: what the gateway keeps for the report, checked against the platform
  const missed = await expectCache(gwL1, 'MISS')
  const hit = await expectCache(gwL1, 'HIT')
  if (hit.headers['content-encoding'] !== 'gzip') throw new Error('the gateway did not answer gzip to accept-encoding: gzip')
  if (!hit.body.equals(missed.body)) throw new Error('a HIT sent other bytes than the MISS')
  const platformBody = (await http('GET', `${sandbox.url}${REPORT_PATH}`, { headers: { authorization: `Bearer ${sandbox.token}` } })).body
  if (!gunzipSync(hit.body).equals(platformBody)) throw new Error('the cached body is not byte-for-byte the platform body')
  const bodyFile = join(tmp, 'report.json.gz')
  writeFileSync(bodyFile, hit.body)
  const bodyInfo = `${platformBody.length.toLocaleString('en-US')} bytes of JSON, ${hit.body.length.toLocaleString('en-US')} bytes gzip`
  log(`report: ${bodyInfo}`)

  // ---- the bare node server (server core) and nginx's tiny upstream (load core)
  const bare = await (async () => {
    const [cmd, args] = pin(SERVER_CORE, process.execPath, ['bench/bare-server.mjs'])
    const p = keep(await launch('bare', cmd, args, { env: { BENCH_BODY_FILE: bodyFile }, ready: /^READY / }))
    return { url: `http://127.0.0.1:${JSON.parse(p.line.slice(6)).port}`, pid: p.child.pid }
  })()
  const fastifyMin = await (async () => {
    const [cmd, args] = pin(SERVER_CORE, process.execPath, ['bench/fastify-min-server.mjs'])
    const p = keep(await launch('fastify-min', cmd, args, { env: { BENCH_BODY_FILE: bodyFile }, ready: /^READY / }))
    return { url: `http://127.0.0.1:${JSON.parse(p.line.slice(6)).port}`, pid: p.child.pid }
  })()
  const origin = await (async () => {
    const [cmd, args] = pin(LOAD_CORE, process.execPath, ['bench/bare-server.mjs'])
    const p = keep(await launch('origin', cmd, args, { env: { BENCH_BODY_FILE: bodyFile, BENCH_LATENCY_MS: String(PLATFORM_LATENCY_MS) }, ready: /^READY / }))
    return `http://127.0.0.1:${JSON.parse(p.line.slice(6)).port}`
  })()
  const originCalls = async () => (await http('GET', `${origin}/__count`)).json().count
  const clearOriginCalls = () => http('DELETE', `${origin}/__count`)

  // ---- nginx (optional)
  let nginx = null
  if (nginxVersion) {
    try {
      nginx = keep(await startNginx({ origin, platformToken: sandbox.token }))
      const first = await http('GET', `${nginx.url}${REPORT_PATH}`, { headers: fixture.reportHeaders() })
      const second = await http('GET', `${nginx.url}${REPORT_PATH}`, { headers: fixture.reportHeaders() })
      if (first.status !== 200 || second.headers['x-cache-status'] !== 'HIT' || !second.body.equals(hit.body)) {
        throw new Error(`nginx does not cache the report (${first.status}, ${second.status} ${second.headers['x-cache-status']})`)
      }
    } catch (err) {
      notes.push(`nginx scenarios skipped: ${err.message.split('\n')[0]}`)
      log(notes.at(-1))
      nginx = null
    }
  } else {
    notes.push('nginx scenarios skipped: nginx is not installed (apt-get install -y nginx).')
    log(notes.at(-1))
  }

  await sandbox.setLatency(PLATFORM_LATENCY_MS)
  if (gwL2) {
    await expectCache(gwL2, 'MISS')
    await expectCache(gwL2, 'HIT')
  }

  // ---- throughput scenarios
  let missOffset = 0
  const targets = [
    { id: 'bare', label: 'bare node:http, same stored bytes', url: `${bare.url}${REPORT_PATH}`, pid: bare.pid, calls: null },
    nginx && { id: 'nginx', label: 'nginx proxy_cache hits', url: `${nginx.url}${REPORT_PATH}`, pid: nginx.pid, calls: [clearOriginCalls, originCalls] },
    { id: 'fastify', label: 'reference: minimal Fastify 5 + lru-cache, same bytes', url: `${fastifyMin.url}${REPORT_PATH}`, pid: fastifyMin.pid, calls: null },
    { id: 'l1', label: 'gateway L1 hits (memory only)', url: `${gwL1.url}${REPORT_PATH}`, pid: gwL1.child.pid, calls: [sandbox.clearCalls, () => sandbox.calls()], check: () => expectCache(gwL1, 'HIT') },
    gwL2 && { id: 'l2', label: 'gateway L2-only hits (Redis, L1 off)', url: `${gwL2.url}${REPORT_PATH}`, pid: gwL2.child.pid, calls: [sandbox.clearCalls, () => sandbox.calls()], check: () => expectCache(gwL2, 'HIT') },
    { id: 'miss', label: `gateway misses, platform ${PLATFORM_LATENCY_MS} ms (every request a new report)`, url: `${gwMiss.url}/`, pid: gwMiss.child.pid, script: 'wrk-misses.lua', miss: true, calls: [sandbox.clearCalls, () => sandbox.calls()] },
  ].filter(Boolean)
  const runs = Object.fromEntries(targets.map((t) => [t.id, []]))
  const measure = async (t, seconds, record) => {
    await t.check?.()
    const scriptArgs = t.miss ? [String(missOffset)] : []
    if (t.calls) await t.calls[0]()
    if (record) await quietMoment()
    const before = cpuSnapshot(t.pid)
    const r = await wrk(t.url, { seconds, connections: CONNECTIONS, key: teamKey, script: t.script, scriptArgs })
    const after = cpuSnapshot(t.pid)
    r.foreign = foreignCores(before, after)
    // CPU time of the server under test per request: unlike req/s, barely moved by other load.
    r.cpuUs = before && after && t.pid ? ((after.server - before.server) / CLK_TCK / r.requests) * 1e6 : null
    if (t.miss) missOffset += r.requests + CONNECTIONS + 100
    if (t.calls) {
      await sleep(t.miss ? PLATFORM_LATENCY_MS * 4 : 50)
      r.calls = await t.calls[1]()
    }
    if (r.errors) throw new Error(`${t.label}: ${r.errors} errors (${r.errorDetail})`)
    if (record) {
      runs[t.id].push(r)
      log(`${t.id.padEnd(7)} ${fmtInt(r.rps).padStart(7)} req/s  p50 ${fmtMs(r.p50)}  p99 ${fmtMs(r.p99)}${r.calls !== undefined ? `  platform calls ${r.calls}` : ''}  server CPU ${r.cpuUs?.toFixed(1) ?? '?'} µs/req  (other load ${r.foreign?.toFixed(2) ?? '?'} cores)`)
    }
    return r
  }
  log(`warm-up: ${WARMUP_S} s per target`)
  for (const t of targets) await measure(t, WARMUP_S, false)
  for (let round = 0; round < ROUNDS; round += 1) {
    // Alternate the order, so slow drift of the machine does not favour one target.
    const order = targets.map((_, i) => targets[(i + round) % targets.length])
    log(`round ${round + 1}/${ROUNDS}: ${order.map((t) => t.id).join(', ')} (${DURATION_S} s each, -c ${CONNECTIONS})`)
    for (const t of order) await measure(t, DURATION_S, true)
  }

  // The hit runs were what they say: count the gateways' own cache results.
  const l1Metrics = await metrics(gwL1)
  const l1Hits = metricValue(l1Metrics, 'gateway_cache_requests_total', { result: 'HIT', tier: 'l1' })
  let l2Hits = null
  let l2FromL1 = null
  if (gwL2) {
    const m = await metrics(gwL2)
    l2Hits = metricValue(m, 'gateway_cache_requests_total', { result: 'HIT', tier: 'l2' })
    l2FromL1 = metricValue(m, 'gateway_cache_requests_total', { result: 'HIT', tier: 'l1' })
  }

  // ---- stampedes: 200 concurrent identical misses
  const stampedes = {}
  const runStampede = async (id, make) => {
    stampedes[id] = []
    for (let round = 0; round < STAMPEDE_ROUNDS; round += 1) {
      await quietMoment()
      const r = await make(round)
      stampedes[id].push(r)
      log(`${id}: ${r.calls} platform call(s), min ${fmtMs(r.min)}, p50 ${fmtMs(r.p50)}, p99 ${fmtMs(r.p99)}, max ${fmtMs(r.max)}; ${Object.entries(r.statuses).map(([k, v]) => `${v}× ${k}`).join(', ')}`)
      if (!r.ok) throw new Error(`${id}: some callers did not get a 200: ${JSON.stringify(r.statuses)}`)
    }
  }
  await runStampede('stampede-gw', () =>
    stampede([{ origin: gwL1.url, callers: STAMPEDE_CALLERS, warmPath: '/healthz' }], REPORT_PATH, {
      key: teamKey,
      before: async () => {
        await purge(gwL1)
        await sandbox.clearCalls()
      },
      countCalls: () => sandbox.calls(),
    }),
  )
  if (gwShared) {
    await runStampede('stampede-gw2', () =>
      stampede(
        gwShared.map((gw) => ({ origin: gw.url, callers: STAMPEDE_CALLERS / 2, warmPath: '/healthz' })),
        REPORT_PATH,
        {
          key: teamKey,
          before: async () => {
            await purge(gwShared[0]) // L2, and every replica's L1 through the purge channel
            await sleep(100)
            await sandbox.clearCalls()
          },
          countCalls: () => sandbox.calls(),
        },
      ),
    )
  }
  if (nginx) {
    await runStampede('stampede-nginx', (round) =>
      stampede([{ origin: nginx.url, callers: STAMPEDE_CALLERS, warmPath: '/healthz' }], `${REPORT_PATH}&stampede=${Date.now()}-${round}`, {
        key: teamKey,
        before: clearOriginCalls,
        countCalls: originCalls,
      }),
    )
  }

  // ---- the table
  const agg = (id) => {
    const rs = runs[id]
    if (!rs?.length) return null
    return { rps: median(rs.map((r) => r.rps)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), runs: rs }
  }
  const bareA = agg('bare')
  const nginxA = agg('nginx')
  const rows = []
  for (const t of targets) {
    const a = agg(t.id)
    let calls = '—'
    if (t.miss) calls = `${fmtInt(median(a.runs.map((r) => r.calls)))} / ${fmtInt(median(a.runs.map((r) => r.requests)))} req`
    else if (t.calls) calls = String(Math.max(...a.runs.map((r) => r.calls)))
    rows.push([t.label, fmtInt(a.rps), fmtMs(a.p50), fmtMs(a.p99), calls, fmtX(a.rps / bareA.rps), nginxA ? fmtX(a.rps / nginxA.rps) : 'n/a'])
  }
  const stampedeLabel = {
    'stampede-gw': `gateway stampede: ${STAMPEDE_CALLERS} identical misses, 1 process`,
    'stampede-gw2': `gateway stampede: ${STAMPEDE_CALLERS} identical misses, 2 processes, one Redis`,
    'stampede-nginx': `nginx stampede: ${STAMPEDE_CALLERS} identical misses (proxy_cache_lock)`,
  }
  const sAgg = (id) => {
    const rs = stampedes[id]
    if (!rs?.length) return null
    return { p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), calls: rs.map((r) => r.calls), rs }
  }
  for (const id of Object.keys(stampedeLabel)) {
    const s = sAgg(id)
    if (!s) continue
    rows.push([stampedeLabel[id], '—', fmtMs(s.p50), fmtMs(s.p99), s.calls.join(', '), '—', '—'])
  }
  if (!nginx) rows.push(['nginx (not run: see the notes)', 'n/a', 'n/a', 'n/a', 'n/a', 'n/a', 'n/a'])

  const header = ['scenario', 'req/s', 'p50', 'p99', 'platform calls', '× bare node', '× nginx']
  const table = markdownTable(header, rows)

  // ---- targets
  const targetLines = []
  const cpuOf = (id) => median(runs[id].map((r) => r.cpuUs ?? NaN))
  const ratioTarget = (label, id, want) => {
    const a = agg(id)
    if (!a) return targetLines.push(`- n/a  ${label}: not measured`)
    const x = a.rps / bareA.rps
    const ok = x >= want
    const by = ok ? `${((x / want - 1) * 100).toFixed(0)} % above the target` : `short by ${(want - x).toFixed(2)}×: needs ${fmtInt(want * bareA.rps)} req/s, ${((want / x - 1) * 100).toFixed(0)} % more`
    const cpuX = cpuOf('bare') / cpuOf(id)
    targetLines.push(
      `- ${ok ? 'PASS' : 'MISS'} ${label}: ${fmtX(x)} the bare Node server's req/s (target ≥ ${want}×; ${by}). By server CPU per request: ${fmtX(cpuX)} (${cpuOf(id).toFixed(1)} vs ${cpuOf('bare').toFixed(1)} µs).`,
    )
  }
  ratioTarget('L1 hits', 'l1', 0.85)
  ratioTarget('L2-only hits', 'l2', 0.5)
  const sg = sAgg('stampede-gw')
  const oneCall = sg.calls.every((c) => c === 1)
  targetLines.push(`- ${oneCall ? 'PASS' : 'MISS'} stampede platform calls: ${sg.calls.join(', ')} in ${sg.calls.length} round(s) of ${STAMPEDE_CALLERS} (target: exactly 1)`)
  const budget = PLATFORM_LATENCY_MS + 10
  targetLines.push(
    `- ${sg.p50 <= budget ? 'PASS' : 'MISS'} stampede waiters' p50: ${fmtMs(sg.p50)} (target ≤ ${budget} ms = platform latency + 10 ms; ${sg.p50 <= budget ? `${fmtMs(budget - sg.p50)} to spare` : `${fmtMs(sg.p50 - budget)} over`})`,
  )
  const s2 = sAgg('stampede-gw2')
  if (s2) {
    const ok2 = s2.calls.every((c) => c === 1)
    targetLines.push(`- ${ok2 ? 'PASS' : 'MISS'} (optional) stampede over 2 processes and one Redis: platform calls ${s2.calls.join(', ')} (target: exactly 1); waiters' p50 ${fmtMs(s2.p50)} (≤ ${budget} ms: ${s2.p50 <= budget ? 'yes' : 'no'})`)
  }

  const perRun = (id) => runs[id]?.map((r) => fmtInt(r.rps)).join(' / ')
  const foreign = Object.values(runs).flat().map((r) => r.foreign).filter((x) => typeof x === 'number')
  notes.unshift(
    `The report: \`GET ${REPORT_PATH}\` (${bodyInfo}); every target is sent \`x-api-key\` and \`accept-encoding: gzip\`, and answers the same gzip bytes.`,
    `Throughput rows: wrk -t1 -c${CONNECTIONS}, ${DURATION_S} s per run after a ${WARMUP_S} s warm-up, ${ROUNDS} run(s) per target in alternating order; each column is the median of the runs (req/s per run: ${targets.map((t) => `${t.id} ${perRun(t.id)}`).join('; ')}).`,
    `Server CPU time per request (µs, median of the runs; the server process tree's user + system time over wrk's completed requests; a measure that other load moves much less than req/s): ${targets.map((t) => `${t.id} ${median(runs[t.id].map((r) => r.cpuUs ?? NaN)).toFixed(1)}`).join(', ')}. As a ratio to the bare server: ${targets.filter((t) => !t.miss).map((t) => `${t.id} ${fmtX(median(runs.bare.map((r) => r.cpuUs ?? NaN)) / median(runs[t.id].map((r) => r.cpuUs ?? NaN)))}`).join(', ')}.`,
    `Other processes on the machine (not ours) used a median ${median(foreign).toFixed(2)} cores (max ${Math.max(...foreign).toFixed(2)}) during the measured runs; before each run (and each stampede) the script waited up to ${GATE_MAX_WAIT_MS / 1000} s (${gateBudget.total / 1000} s in all) for them to use < ${GATE_FOREIGN_CORES} cores.`,
    `Pinning: ${pinning() ? `every server under test (gateways, bare server, nginx master and worker) on core ${SERVER_CORE}; wrk, this script (stampede callers), the platform sandbox, Redis and nginx's upstream on core ${LOAD_CORE}` : 'NONE (taskset or a second core missing)'}; ${cpus().length} cores (${cpus()[0]?.model ?? '?'}).`,
    `Platform calls: report requests the sandbox (or nginx's upstream) received during the measured runs. Misses: calls / wrk's completed requests; calls exceed requests by the ≤ ${CONNECTIONS} requests in flight when wrk stops. Hit counts from the gateways' own metrics: ${fmtInt(l1Hits)} L1 hits on the L1 gateway${l2Hits !== null ? `; ${fmtInt(l2Hits)} L2 hits and ${fmtInt(l2FromL1)} L1 hits on the L2-only gateway` : ''}.`,
    `Stampede rows: ${STAMPEDE_CALLERS} requests started together from one process on connections opened beforehand, after a purge (nginx: a new URL each round); latency from dispatch to last byte; p50/p99 are medians over ${STAMPEDE_ROUNDS} round(s); platform calls per round. The platform (sandbox, nginx's upstream) answers after ${PLATFORM_LATENCY_MS} ms. First caller answered after (median of the rounds): ${Object.keys(stampedeLabel).filter((id) => stampedes[id]).map((id) => `${id.replace('stampede-', '')} ${fmtMs(median(stampedes[id].map((r) => r.min)))}`).join(', ')}; the rest of the spread up to p50/p99 is the cost of answering the other callers.`,
    `Gateway setup: the compiled gateway (dist/) from bench/gateway-server.mjs, LOG_LEVEL=warn (no per-request log line is written), one team limited to advertisers 100-103 with a rate limit (counted on every request, too high to trip), the platform token from the sandbox. L1-only gateways have no Redis; the L2-only gateway has Redis and cache.l1MaxBytes: 0 (L1 off); the two-process stampede uses two gateways with L1 and one Redis.`,
    nginx && `nginx: worker_processes 1, access_log off, proxy_cache + proxy_cache_lock on, proxy_cache_valid 200 5m, proxy_ignore_headers Set-Cookie Cache-Control Expires Vary; its upstream is bench/bare-server.mjs sending the same gzip bytes after ${PLATFORM_LATENCY_MS} ms. nginx waiters poll the lock every 500 ms.`,
  )

  await Promise.all(own.map((p) => stopProcess(p)))
  runNotes.push(`nginx: ${nginxVersion?.replace(/^nginx version: /, '') ?? 'not installed'}`)
  return [
    table,
    '',
    'Targets:',
    '',
    ...targetLines,
    '',
    'Notes:',
    '',
    ...notes.filter(Boolean).map((n) => `- ${n}`),
    '',
  ].join('\n')
}
