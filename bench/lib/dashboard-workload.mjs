// The dashboard workload of the `dashboard` and `dashboard-noisy` scenarios: one team's
// users load dashboards of several reports each (Zipf popularity), think between loads,
// on a short TTL and a slow platform. One seeded trace, replayed against the gateway
// (default settings but the TTL) and nginx proxy_cache (proxy_cache_lock,
// proxy_cache_use_stale updating, proxy_cache_background_update) in front of the same
// platform stand-in; with `noisy`, a second team keeps its own misses outstanding during
// the replay. What is measured: how many answers to popular reports were past their
// freshness, the latency of popular answers and of all, and the platform calls.

import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, request } from 'undici'
import { seededRandom } from '../../scripts/soak-targets.mjs'
import { REPORT_ROUTE, startMainGateway } from './fixture.mjs'
import { closedLoop, neverAsked } from './load.mjs'
import { versionOf } from './machine.mjs'
import { startNginx } from './nginx.mjs'
import { log, stopProcess } from './processes.mjs'
import { startStandIn } from './stand-in.mjs'
import { fmtMs, fmtPct, latencyFigures, markdownTable, mostAsked, verdictLines } from './stats.mjs'

export const TTL_S = 4
export const PLATFORM_LATENCY_MS = 400
const REPORTS = 120
const REPORTS_PER_DASHBOARD = 3
const USERS = 30
const ZIPF_S = 1.1
const THINK_MS = 2000
// The replay's first seconds fill the caches and are not measured: the figures are those
// of a dashboard in use, not of its first loads (every first ask of a report is a miss).
const WARMUP_S = 2 * TTL_S
// The second team's misses go to another report route, so the stand-in counts them apart.
const NOISY_ROUTE = '/api/v1/report/creatives/get'
const NOISY_CALLERS = 200

/** Index 0..n-1 drawn with probability ∝ 1 / (i + 1)^s. */
function zipf(n, s, rand) {
  const weights = Array.from({ length: n }, (_, i) => 1 / (i + 1) ** s)
  const total = weights.reduce((x, y) => x + y, 0)
  const cumulative = []
  let acc = 0
  for (const w of weights) cumulative.push((acc += w / total))
  return () => {
    const u = rand()
    const i = cumulative.findIndex((c) => c >= u)
    return i === -1 ? n - 1 : i
  }
}

const reportPath = (i) => {
  const from = new Date(Date.UTC(2025, 0, 1 + i)).toISOString().slice(0, 10)
  const to = new Date(Date.UTC(2025, 0, 8 + i)).toISOString().slice(0, 10)
  return `${REPORT_ROUTE}?advertiserId=${100 + (i % 4)}&dateFrom=${from}&dateTo=${to}&byDate=1`
}

/**
 * The trace: per user, a list of [start offset ms, reports] loads within `seconds`; each
 * load's REPORTS_PER_DASHBOARD distinct reports drawn by Zipf popularity over REPORTS,
 * think time exponential with mean THINK_MS.
 */
function makeTrace(seconds) {
  // Seeded, so every target gets the same trace.
  const rand = seededRandom(17)
  const pickReport = zipf(REPORTS, ZIPF_S, rand)
  const dashboard = () => {
    const set = new Set()
    while (set.size < REPORTS_PER_DASHBOARD) set.add(pickReport())
    return [...set]
  }
  return Array.from({ length: USERS }, () => {
    const loads = []
    for (let at = rand() * THINK_MS; at < seconds * 1000; at += -Math.log(1 - rand()) * THINK_MS) loads.push([at, dashboard()])
    return loads
  })
}

/**
 * The popular reports: the most-asked reports of the trace's loads from `fromS` to `toS`
 * that together account for half of their asks. Each is asked about once a second or
 * more, so a cache that refreshes them in time never has to miss or serve them stale;
 * the rarer reports go unasked for longer than the TTL, and a cache would keep them
 * fresh only by calling the platform for nobody.
 */
function popularReports(trace, fromS, toS) {
  const asks = new Map()
  for (const loads of trace) {
    for (const [at, reports] of loads) if (at >= fromS * 1000 && at < toS * 1000) for (const r of reports) asks.set(r, (asks.get(r) ?? 0) + 1)
  }
  const top = mostAsked(asks, 0.5)
  const popular = new Set(top.keys)
  const leastAsksPerS = Math.min(...top.keys.map((r) => asks.get(r))) / (toS - fromS)
  return { popular, reportsAsked: asks.size, shareOfAsks: top.share, leastAsksPerS }
}

/**
 * Replays the trace against `origin`; each user loads a dashboard's reports together and
 * starts no load after `seconds`. An answer's data age is taken when its headers arrive;
 * `at`: its load's offset in the trace (ms).
 */
async function replay(origin, trace, key, seconds) {
  const agent = new Agent({ connections: USERS * REPORTS_PER_DASHBOARD, keepAliveTimeout: 60_000, headersTimeout: 30_000, bodyTimeout: 30_000 })
  const answers = []
  const start = performance.now()
  await Promise.all(
    trace.map(async (loads) => {
      for (const [at, reports] of loads) {
        const wait = at - (performance.now() - start)
        if (wait > 0) await sleep(wait)
        if (performance.now() - start > seconds * 1000) break
        await Promise.all(
          reports.map(async (r) => {
            const t0 = performance.now()
            try {
              const res = await request(`${origin}${reportPath(r)}`, { dispatcher: agent, headers: { 'x-api-key': key } })
              const servedAt = Date.now()
              const text = await res.body.text()
              const ageMs = res.statusCode === 200 ? servedAt - JSON.parse(text).generatedAt : null
              answers.push({ ms: performance.now() - t0, status: res.statusCode, ageMs, report: r, at })
            } catch (err) {
              answers.push({ ms: performance.now() - t0, status: err.code ?? 'error', ageMs: null, report: r, at })
            }
          }),
        )
      }
    }),
  )
  await agent.close()
  return answers
}

/** Figures of one target's answers: stale shares are of the answers 200 (data older than the TTL). */
function figuresOf(answers, popular) {
  const ok = answers.filter((a) => a.status === 200)
  const stale = (xs) => xs.filter((a) => a.ageMs > TTL_S * 1000).length / Math.max(1, xs.length)
  const okPopular = ok.filter((a) => popular.has(a.report))
  return {
    answers: answers.length,
    failed: answers.length - ok.length,
    popularStale: stale(okPopular),
    allStale: stale(ok),
    popularP99: latencyFigures(answers.filter((a) => popular.has(a.report)).map((a) => a.ms)).p99,
    all: latencyFigures(answers.map((a) => a.ms)),
  }
}

/**
 * Runs the workload against the gateway and nginx, one after the other, with the same
 * trace; `noisy`: while a second team keeps NOISY_CALLERS misses outstanding. Resolves
 * with the scenario's Markdown: the table, the targets judged on the gateway's row
 * (`targets(gateway, nginx)` → [{ name, got, target, pass }]), and how it was measured.
 */
export async function runDashboards({ fixture, quick, noisy, targets }) {
  const { sandbox, teamKey, teamBKey, teams } = fixture
  const seconds = quick ? 20 : 40
  const total = WARMUP_S + seconds
  const trace = makeTrace(total)
  const { popular, reportsAsked, shareOfAsks, leastAsksPerS } = popularReports(trace, WARMUP_S, total)
  const standIn = await startStandIn(noisy ? 'dashboard-noisy-origin' : 'dashboard-origin', { latencyMs: PLATFORM_LATENCY_MS })
  const ttl = `${TTL_S}s`
  // Alone, the dashboard team is the only team the gateway knows.
  const config = { teams: noisy ? teams : { bench: teams.bench }, cache: { ttl: { recent: ttl, settled: ttl }, staleWhileRevalidate: ttl } }
  const name = noisy ? 'dashnoisy' : 'dash'
  const servers = [
    { id: 'gateway', label: `gateway (defaults; \`cache.ttl\` and \`staleWhileRevalidate\` ${ttl})`, start: () => startMainGateway(`gw-${name}`, { platformUrl: standIn.url, platformToken: sandbox.token, config }) },
    versionOf('nginx', ['-v']) && { id: 'nginx', label: `nginx proxy_cache, valid ${ttl}, lock + use_stale updating + background_update`, start: () => startNginx({ name: `nginx-${name}`, origin: standIn.url, platformToken: sandbox.token, valid: ttl, updating: true }) },
  ].filter(Boolean)
  const rows = []
  const measured = {}
  const notes = []
  for (const target of servers) {
    let server
    try {
      server = await target.start()
    } catch (err) {
      notes.push(`${target.label}: not run (${err.message.split('\n')[0]})`)
      log(`${target.label}: not run (${err.message})`)
      continue
    }
    const stopNoise = noisy ? closedLoop({ origins: [server.url], key: teamBKey, callers: NOISY_CALLERS, nextPath: () => neverAsked(NOISY_ROUTE), maxSeconds: total + 10 }) : null
    const callsAtWarm = sleep(WARMUP_S * 1000).then(() => standIn.counts())
    const answers = await replay(server.url, trace, teamKey, total)
    const calls = ((await standIn.counts()).byRoute[REPORT_ROUTE] ?? 0) - ((await callsAtWarm).byRoute[REPORT_ROUTE] ?? 0)
    const noise = stopNoise ? await stopNoise() : null
    await stopProcess(server)
    const f = { ...figuresOf(answers.filter((a) => a.at >= WARMUP_S * 1000), popular), platformCalls: calls }
    measured[target.id] = f
    const noiseCell = noise ? [`${noise.filter((a) => a.status === 200).length} / ${noise.length}`] : []
    rows.push([target.label, String(f.answers), String(f.failed), fmtPct(f.popularStale), fmtMs(f.popularP99), fmtPct(f.allStale), fmtMs(f.all.p50), fmtMs(f.all.p99), String(f.platformCalls), ...noiseCell])
    log(`${name} ${target.id}: ${f.answers} answers, popular past freshness ${fmtPct(f.popularStale)}, popular p99 ${fmtMs(f.popularP99)}, p99 ${fmtMs(f.all.p99)}, platform calls ${f.platformCalls}${noise ? `, team B ${noiseCell[0]} answered 200` : ''}`)
  }
  await stopProcess(standIn)
  const header = ['target', 'answers', 'not 200', 'popular answers past freshness', 'popular p99', 'all answers past freshness', 'p50', 'p99', 'platform calls', ...(noisy ? ['team B answered 200'] : [])]
  return [
    markdownTable(header, rows),
    '',
    ...(measured.gateway ? verdictLines(targets(measured.gateway, measured.nginx ?? null)) : ['The gateway did not run: no target judged.']),
    '',
    `${USERS} users of one team for ${WARMUP_S} s not measured (the caches fill), then ${seconds} s measured, each loading a dashboard of ${REPORTS_PER_DASHBOARD} reports at once, then thinking (exponential, mean ${THINK_MS / 1000} s), distinct reports drawn by Zipf popularity (s = ${ZIPF_S}) over ${REPORTS} reports; the same seeded trace for every target (${reportsAsked} reports asked). TTL ${TTL_S} s; the platform stand-in (bench/dashboard-origin.mjs) answers after ${PLATFORM_LATENCY_MS} ms and stamps each answer with the time it made it: an answer is past its freshness when its data is more than ${TTL_S} s old as its headers arrive, the same measure behind every cache. Popular reports: the most-asked reports that together take half of the measured asks (${popular.size} reports, ${fmtPct(shareOfAsks)} of the asks, each asked ${leastAsksPerS.toFixed(1)} times a second or more). Latency: from dispatch to last byte. Platform calls: the dashboard's report calls the stand-in received in the measured time.${noisy ? ` Team B: ${NOISY_CALLERS} callers in a closed loop, each asking a report never asked before (on \`${NOISY_ROUTE}\`, not counted in the platform calls) as soon as its last is answered (after a 429/503, its retry-after), from the replay's start (warm-up included) to its end; nginx has no teams and gets the same load.` : ''}`,
    ...notes.map((n) => `- ${n}`),
    '',
  ].join('\n')
}
