// The dashboard workload of the `dashboard`, `dashboard-noisy` and `dashboard-family`
// scenarios: one team's users load dashboards of several reports each (Zipf popularity),
// think between loads, on a TTL and a platform latency given by the trace's shape. One
// seeded trace, replayed against the gateway (default settings but the TTL and the stale
// window) and nginx proxy_cache (proxy_cache_lock, background update, a copy served stale
// while it is updated) in front of the same platform stand-in; with noise, a
// second team keeps its own misses outstanding during part of the replay or all of it.
// What is measured: how many answers to popular reports were past their freshness, the
// latency of popular answers and of all, and the platform calls.
//
// Both caches serve a copy stale for the TTL past its freshness and no longer: the gateway
// with `staleWhileRevalidate` = the TTL, nginx with `stale-while-revalidate` = the TTL
// (bench/lib/nginx.mjs, `staleS`). The next ask of a copy past that window waits for the
// platform behind either cache (the gateway's MISS, nginx's EXPIRED): a report silent for
// two freshnesses is answered fresh but at the platform's latency. nginx's `use_stale
// updating` alone serves a copy of any age (up to `inactive=10m`), where the gateway's
// contract serves none past its window; `--nginx-any-age` replays that nginx too.

import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, request } from 'undici'
import { REPORT_ROUTE, startMainGateway } from './fixture.mjs'
import { closedLoop, neverAsked } from './load.mjs'
import { versionOf } from './machine.mjs'
import { startNginx } from './nginx.mjs'
import { ROOT, log, stopProcess } from './processes.mjs'
import { startStandIn } from './stand-in.mjs'
import { REPORTS_PER_DASHBOARD, THINK_MS, makeTrace, popularReports, replaySeconds } from './dashboard-trace.mjs'
import { fmtMs, fmtPct, latencyFigures, markdownTable, metricValue, verdictLines } from './stats.mjs'
import { http } from './http.mjs'

export const TTL_S = 4
export const PLATFORM_LATENCY_MS = 400
/**
 * The trace of the `dashboard` scenarios: users, reports, Zipf exponent, TTL (s), the
 * platform's median latency (ms) and its log-normal spread (σ), the trace's seed, and
 * optionally how long it is measured (s; halved by --quick).
 */
export const DASHBOARD_SHAPE = { users: 30, reports: 120, zipf: 1.1, ttlS: TTL_S, latencyMs: PLATFORM_LATENCY_MS, spread: 0, seed: 17, measureS: 40 }
// The second team's misses go to another report route, so the stand-in counts them apart.
const NOISY_ROUTE = '/api/v1/report/creatives/get'
const NOISY_CALLERS = 200
// Before the first target, the stand-in and this load generator are warmed this long (s) by
// NOISY_CALLERS callers straight to the stand-in. Fresh, they spread the first target's first
// calls over 77 to 231 ms (warm, over 11 to 48 ms) and slow them by up to 180 ms: the fresh
// gateway then times several of its first answers, which its start's first decision can read
// as a queue (docs/benchmarks.md, "The dashboard-noisy bench's first row"). Warmed, every
// target meets the stand-in and the load as the second one does. `BENCH_WARM_S` sets it (0: not
// warmed, the first target meeting them fresh).
const WARM_S = Number(process.env.BENCH_WARM_S ?? 3)
if (!Number.isFinite(WARM_S) || WARM_S < 0) throw new RangeError(`BENCH_WARM_S must be a number of seconds >= 0 (got ${process.env.BENCH_WARM_S})`)
// The popular answers' latency target of the family: slower ones are counted by how the gateway answered them.
const SLOW_POPULAR_MS = 20

const reportPath = (i) => {
  const from = new Date(Date.UTC(2025, 0, 1 + i)).toISOString().slice(0, 10)
  const to = new Date(Date.UTC(2025, 0, 8 + i)).toISOString().slice(0, 10)
  return `${REPORT_ROUTE}?advertiserId=${100 + (i % 4)}&dateFrom=${from}&dateTo=${to}&byDate=1`
}

/**
 * Replays the trace against `origin`; each user loads a dashboard's reports together and
 * starts no load after `seconds`. An answer's data age is taken when its headers arrive;
 * `at`: its load's offset in the trace (ms).
 */
async function replay(origin, trace, key, seconds) {
  // The load generator's own event-loop delay: a measured latency includes it.
  const lag = monitorEventLoopDelay({ resolution: 10 })
  lag.enable()
  const agent = new Agent({ connections: trace.length * REPORTS_PER_DASHBOARD, keepAliveTimeout: 60_000, headersTimeout: 30_000, bodyTimeout: 30_000 })
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
              answers.push({ ms: performance.now() - t0, status: res.statusCode, ageMs, report: r, at, cache: res.headers['x-cache'] ?? res.headers['x-cache-status'] ?? null })
            } catch (err) {
              answers.push({ ms: performance.now() - t0, status: err.code ?? 'error', ageMs: null, report: r, at })
            }
          }),
        )
      }
    }),
  )
  await agent.close()
  lag.disable()
  answers.lag = { p99Ms: lag.percentile(99) / 1e6, maxMs: lag.max / 1e6 }
  return answers
}

/**
 * The measured answers (`from` ms on) that waited for the platform though an answer of their
 * report had come before they were asked: a copy past its stale window (the gateway's MISS,
 * nginx's EXPIRED) or dropped; a first fill, and an ask that joined it, is not one.
 */
function lapsedOf(answers, from) {
  const answered = new Map()
  const lapsed = []
  for (const a of [...answers].sort((x, y) => x.at - y.at)) {
    if (a.at >= from && answered.get(a.report) <= a.at && (a.cache === 'MISS' || a.cache === 'EXPIRED')) lapsed.push(a)
    answered.set(a.report, Math.min(answered.get(a.report) ?? Infinity, a.at + a.ms))
  }
  return lapsed
}

/**
 * Figures of one target's answers: stale shares are of the answers 200 (data older than the
 * TTL, `ttlS`); `popularOld`: of the popular answers 200, those older than twice the TTL (a
 * copy past the stale window, served); `popularLapsed`: popular answers that waited for a
 * copy past it (`lapsedOf`), and `popularP99Kept` the popular p99 without them.
 */
function figuresOf(answers, popular, ttlS, lapsed) {
  const ok = answers.filter((a) => a.status === 200)
  const stale = (xs) => xs.filter((a) => a.ageMs > ttlS * 1000).length / Math.max(1, xs.length)
  const okPopular = ok.filter((a) => popular.has(a.report))
  return {
    answers: answers.length,
    failed: answers.length - ok.length,
    popularStale: stale(okPopular),
    popularOld: okPopular.filter((a) => a.ageMs > 2 * ttlS * 1000).length,
    popularLapsed: lapsed.filter((a) => popular.has(a.report)).length,
    popularP99Kept: latencyFigures(answers.filter((a) => popular.has(a.report) && !lapsed.includes(a)).map((a) => a.ms)).p99,
    allStale: stale(ok),
    popularP99: latencyFigures(answers.filter((a) => popular.has(a.report)).map((a) => a.ms)).p99,
    all: latencyFigures(answers.map((a) => a.ms)),
  }
}

/**
 * The popular answers slower than `ms`, counted by their `x-cache` (nginx: its
 * `x-cache-status` when it sends one), and when they came (s from the replay's start):
 * where a slow popular answer's time went is first what the gateway did for it.
 */
function slowPopular(answers, popular, ms) {
  const slow = answers.filter((a) => popular.has(a.report) && a.ms > ms)
  if (slow.length === 0) return `no popular answer slower than ${ms} ms`
  const by = new Map()
  for (const a of slow) by.set(a.cache ?? 'no x-cache', (by.get(a.cache ?? 'no x-cache') ?? 0) + 1)
  const at = slow.map((a) => a.at / 1000).sort((x, y) => x - y)
  return `${slow.length} popular answers slower than ${ms} ms (x-cache ${[...by].map(([k, n]) => `${k} ${n}`).join(', ')}), dispatched from ${at[0].toFixed(1)} s to ${at.at(-1).toFixed(1)} s`
}

/** A gateway's `gateway_cache_refresh_ahead_total` by outcome, and its event-loop delay over the replay, in words. */
async function refreshOutcomes(admin) {
  const text = (await http('GET', `${admin}/metrics`)).body.toString('utf8')
  // Unlabelled gauges: `name value`.
  const lag = (q) => fmtMs(Number(text.match(new RegExp(`^gateway_process_nodejs_eventloop_lag_${q}_seconds (\\S+)$`, 'm'))?.[1]) * 1000)
  return `${['started', 'completed', 'skipped', 'failed'].map((outcome) => `${outcome} ${metricValue(text, 'gateway_cache_refresh_ahead_total', { outcome })}`).join(', ')}; its event-loop delay p99 ${lag('p99')}, max ${lag('max')}`
}

/**
 * The report calls one target made in the measured time, by cause, from the stand-in's log
 * of its calls (`calls`, from the target's start: each { at, answeredAt, path, requestId }),
 * each judged against the call of the same report before it: `first` (none before: a cold
 * miss), `ahead` (the gateway's refresh ahead, by its request id), `overlapping` (the call
 * before not answered yet: not coalesced), `early` (its copy not yet `ttlMs` old),
 * `stale` (its copy `ttlMs` to twice that old: stale-while-revalidate's call) and `expired`
 * (older). `waitMs`: the mean time past the copy's freshness at which `stale` and `expired`
 * calls came (the wait for the first ask after it, and nginx's whole seconds); `aheadMs`:
 * the mean age of the copy a refresh ahead replaced.
 */
export function callCauses(calls, { fromMs, ttlMs }) {
  const causes = { calls: 0, first: 0, ahead: 0, overlapping: 0, early: 0, stale: 0, expired: 0, waitMs: 0, aheadMs: 0 }
  const before = new Map()
  let waited = 0
  let aged = 0
  for (const c of [...calls].sort((x, y) => x.at - y.at)) {
    const prev = before.get(c.path)
    before.set(c.path, c)
    if (c.at < fromMs) continue
    causes.calls += 1
    const age = prev?.answeredAt == null ? null : c.at - prev.answeredAt
    if (prev === undefined) causes.first += 1
    else if (c.requestId?.startsWith('refresh-ahead-')) {
      causes.ahead += 1
      if (age !== null) aged += age
    } else if (age === null || age < 0) causes.overlapping += 1
    else if (age < ttlMs) causes.early += 1
    else {
      causes[age < 2 * ttlMs ? 'stale' : 'expired'] += 1
      waited += age - ttlMs
    }
  }
  causes.waitMs = waited / Math.max(1, causes.stale + causes.expired)
  causes.aheadMs = aged / Math.max(1, causes.ahead)
  return causes
}

/** `callCauses`' figures in words. */
export const causeWords = (c) =>
  `${c.calls} calls: ${c.first} first, ${c.ahead} ahead (the copy ${fmtMs(c.aheadMs)} old), ${c.stale} stale, ${c.expired} expired (${fmtMs(c.waitMs)} past freshness on average), ${c.early} early, ${c.overlapping} overlapping`

/**
 * Replays the trace of `shape` against the gateway and nginx, one after the other; `noise`:
 * null, or { fromS, forS } (from the replay's start) during which a second team keeps
 * NOISY_CALLERS misses outstanding; `baseline`: a folder with another build of the gateway,
 * replayed too (its figures as `baseline`); `withoutAhead`: the gateway with `cache.refreshAhead: false`
 * replayed too (as `swr`). Each target's figures carry its platform calls by cause (`callCauses`). Resolves with { rows (a table's), measured: { gateway,
 * nginx } figures, notes, popular: { size, reportsAsked, shareOfAsks, leastAsksPerS }, warmupS, seconds }.
 */
export async function replayShape({ fixture, shape, quick, noise, name, baseline = null, withoutAhead = false, nginxAnyAge = false }) {
  const { sandbox, teamKey, teamBKey, teams } = fixture
  const { warmupS, seconds } = replaySeconds(shape, quick)
  const total = warmupS + seconds
  const trace = makeTrace(shape, total)
  const { popular, ...popularInfo } = popularReports(trace, warmupS, total)
  const standIn = await startStandIn(`${name}-origin`, { latencyMs: shape.latencyMs, spread: shape.spread, callLog: true })
  const warming = closedLoop({ origins: [standIn.url], key: teamBKey, callers: NOISY_CALLERS, nextPath: () => neverAsked(NOISY_ROUTE), maxSeconds: WARM_S })
  await sleep(WARM_S * 1000)
  await warming()
  const ttl = `${shape.ttlS}s`
  // Alone, the dashboard team is the only team the gateway knows.
  const config = { teams: noise ? teams : { bench: teams.bench }, cache: { ttl: { recent: ttl, settled: ttl }, staleWhileRevalidate: ttl } }
  const servers = [
    { id: 'gateway', label: `gateway (defaults; \`cache.ttl\` and \`staleWhileRevalidate\` ${ttl})`, start: () => startMainGateway(`gw-${name}`, { platformUrl: standIn.url, platformToken: sandbox.token, config }) },
    withoutAhead && { id: 'swr', label: `gateway with \`cache.refreshAhead: false\` (the same settings otherwise)`, start: () => startMainGateway(`gw-${name}-swr`, { platformUrl: standIn.url, platformToken: sandbox.token, config: { ...config, cache: { ...config.cache, refreshAhead: false } } }) },
    baseline && { id: 'baseline', label: `gateway built in ${baseline} (the same settings)`, start: () => startMainGateway(`gw-${name}-baseline`, { platformUrl: standIn.url, platformToken: sandbox.token, config, root: baseline }) },
    versionOf('nginx', ['-v']) && { id: 'nginx', label: `nginx proxy_cache, valid ${ttl}, lock + background_update, stale-while-revalidate ${ttl}`, start: () => startNginx({ name: `nginx-${name}`, origin: standIn.url, platformToken: sandbox.token, valid: ttl, updating: true, staleS: shape.ttlS }) },
    nginxAnyAge && versionOf('nginx', ['-v']) && { id: 'nginx-any-age', label: `nginx proxy_cache, valid ${ttl}, lock + use_stale updating + background_update (stale at any age)`, start: () => startNginx({ name: `nginx-${name}-any-age`, origin: standIn.url, platformToken: sandbox.token, valid: ttl, updating: true }) },
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
    const noisy = noise ? sleep(noise.fromS * 1000).then(() => closedLoop({ origins: [server.url], key: teamBKey, callers: NOISY_CALLERS, nextPath: () => neverAsked(NOISY_ROUTE), maxSeconds: noise.forS })) : null
    const logFrom = (await standIn.counts()).count
    const startedAt = Date.now()
    const callsAtWarm = sleep(warmupS * 1000).then(() => standIn.counts())
    const answers = await replay(server.url, trace, teamKey, total)
    const calls = ((await standIn.counts()).byRoute[REPORT_ROUTE] ?? 0) - ((await callsAtWarm).byRoute[REPORT_ROUTE] ?? 0)
    const noiseAnswers = noisy ? await (await noisy)() : null
    // A gateway's refreshes ahead, by outcome, for the notes under the table.
    if (server.admin) notes.push(`${target.label}: refreshes ahead ${await refreshOutcomes(server.admin)}`)
    await stopProcess(server)
    const measuredAnswers = answers.filter((a) => a.at >= warmupS * 1000)
    const ownCalls = (await standIn.calls(logFrom)).filter((c) => c.path.startsWith(`${REPORT_ROUTE}?`))
    const causes = callCauses(ownCalls, { fromMs: startedAt + warmupS * 1000, ttlMs: shape.ttlS * 1000 })
    notes.push(`${target.label}: platform calls by cause, ${causeWords(causes)}`)
    // Each call, for a closer look than the causes (not committed).
    mkdirSync(join(ROOT, '.bench'), { recursive: true })
    writeFileSync(join(ROOT, '.bench', `calls-${name}-${target.id}.json`), JSON.stringify({ fromMs: startedAt + warmupS * 1000, ttlMs: shape.ttlS * 1000, calls: ownCalls, asks: answers.map((a) => ({ at: startedAt + a.at, path: reportPath(a.report), cache: a.cache, ms: a.ms, ageMs: a.ageMs, popular: popular.has(a.report) })) }))
    const lapsed = lapsedOf(answers, warmupS * 1000)
    // The calls a target is compared by: its calls less those made while the report's call
    // before was unanswered. nginx's proxy_cache_lock holds back only a new copy's callers, so
    // with a stale window the asks of a copy past it each call the origin (EXPIRED) where the
    // gateway joins them to one call; counted, they would make nginx's reference calls that
    // its `use_stale updating` does not make.
    const f = { ...figuresOf(measuredAnswers, popular, shape.ttlS, lapsed), platformCalls: calls, coalescedCalls: calls - causes.overlapping, causes }
    notes.push(`${target.label}: ${f.popularLapsed} popular answers waited for the platform on a copy past the stale window (${lapsed.length} of all answers; the popular p99 without them ${fmtMs(f.popularP99Kept)}), ${f.popularOld} popular answers served from a copy past it`)
    notes.push(`${target.label}: ${slowPopular(measuredAnswers, popular, SLOW_POPULAR_MS)}; the load generator's event-loop delay p99 ${fmtMs(answers.lag.p99Ms)}, max ${fmtMs(answers.lag.maxMs)}`)
    measured[target.id] = f
    const noiseCell = noiseAnswers ? [`${noiseAnswers.filter((a) => a.status === 200).length} / ${noiseAnswers.length}`] : []
    rows.push([target.label, String(f.answers), String(f.failed), fmtPct(f.popularStale), fmtMs(f.popularP99), fmtPct(f.allStale), fmtMs(f.all.p50), fmtMs(f.all.p99), String(f.platformCalls), ...noiseCell])
    log(`${name} ${target.id}: ${f.answers} answers, popular past freshness ${fmtPct(f.popularStale)}, popular p99 ${fmtMs(f.popularP99)}, p99 ${fmtMs(f.all.p99)}, platform calls ${f.platformCalls}${noiseAnswers ? `, team B ${noiseCell[0]} answered 200` : ''}`)
  }
  await stopProcess(standIn)
  return { rows, measured, notes, popular: { size: popular.size, ...popularInfo }, warmupS, seconds }
}

/**
 * The targets of a dashboard trace, judged on the gateway's figures (and nginx's platform
 * calls): popular answers past freshness ≤ `maxStale`, their p99 ≤ `maxPopularP99Ms`, the
 * p99 of all ≤ `maxP99Ms` (said as `p99Words`), platform calls ≤ `maxCallsXNginx` × nginx's
 * coalesced ones (`coalescedCalls`).
 */
export function dashboardTargets({ maxStale, maxPopularP99Ms, maxP99Ms, p99Words, maxCallsXNginx }, gateway, nginx) {
  return [
    { name: 'popular answers past their freshness', got: fmtPct(gateway.popularStale), target: `≤ ${fmtPct(maxStale)}`, pass: gateway.popularStale <= maxStale },
    { name: 'p99 of popular answers', got: fmtMs(gateway.popularP99), target: `≤ ${fmtMs(maxPopularP99Ms)}`, pass: gateway.popularP99 <= maxPopularP99Ms },
    { name: 'p99 of all answers', got: fmtMs(gateway.all.p99), target: `≤ ${fmtMs(maxP99Ms)}, ${p99Words}`, pass: gateway.all.p99 <= maxP99Ms },
    nginx
      ? { name: "platform calls against nginx's", got: `${gateway.platformCalls} / ${nginx.coalescedCalls}${nginx.coalescedCalls === nginx.platformCalls ? '' : ` (of its ${nginx.platformCalls}, the overlapping not counted)`} = ${(gateway.platformCalls / Math.max(1, nginx.coalescedCalls)).toFixed(2)}×`, target: `≤ ${maxCallsXNginx}×`, pass: gateway.platformCalls <= maxCallsXNginx * nginx.coalescedCalls }
      : { name: "platform calls against nginx's", got: 'nginx did not run', target: `≤ ${maxCallsXNginx}×`, pass: null },
  ]
}

/** The header of `replayShape`'s rows. */
export const tableHeader = (noisy) => ['target', 'answers', 'not 200', 'popular answers past freshness', 'popular p99', 'all answers past freshness', 'p50', 'p99', 'platform calls', ...(noisy ? ['team B answered 200'] : [])]

/** What a trace's popular reports are, in words, for the text under its table. */
export const popularWords = ({ size, reportsAsked, shareOfAsks, leastAsksPerS }) =>
  `Popular reports: the most-asked reports that together take half of the measured asks (${size} of the ${reportsAsked} asked, ${fmtPct(shareOfAsks)} of the asks, each asked ${leastAsksPerS.toFixed(1)} times a second or more)`

/**
 * The \`dashboard\` and \`dashboard-noisy\` scenarios: DASHBOARD_SHAPE replayed against the
 * gateway and nginx; \`noisy\`: while a second team keeps NOISY_CALLERS misses outstanding
 * from the replay's start to its end. Resolves with the scenario's Markdown: the table,
 * the targets judged on the gateway's row (\`targets(gateway, nginx)\` → [{ name, got,
 * target, pass }]), and how it was measured.
 */
export async function runDashboards({ fixture, quick, noisy, targets, baseline = null }) {
  const shape = DASHBOARD_SHAPE
  const { warmupS, seconds } = replaySeconds(shape, quick)
  const r = await replayShape({ fixture, shape, quick, noise: noisy ? { fromS: 0, forS: warmupS + seconds + 10 } : null, name: noisy ? 'dashnoisy' : 'dash', baseline })
  const { measured } = r
  return [
    markdownTable(tableHeader(noisy), r.rows),
    '',
    ...(measured.gateway ? verdictLines(targets(measured.gateway, measured.nginx ?? null)) : ['The gateway did not run: no target judged.']),
    '',
    `${shape.users} users of one team for ${warmupS} s not measured (the caches fill), then ${seconds} s measured, each loading a dashboard of ${REPORTS_PER_DASHBOARD} reports at once, then thinking (exponential, mean ${THINK_MS / 1000} s), distinct reports drawn by Zipf popularity (s = ${shape.zipf}) over ${shape.reports} reports; the same seeded trace for every target (${r.popular.reportsAsked} reports asked). TTL ${shape.ttlS} s; the platform stand-in (bench/dashboard-origin.mjs) answers after ${shape.latencyMs} ms and stamps each answer with the time it made it: an answer is past its freshness when its data is more than ${shape.ttlS} s old as its headers arrive, the same measure behind every cache. ${popularWords(r.popular)}. Latency: from dispatch to last byte. Platform calls: the dashboard's report calls the stand-in received in the measured time.${noisy ? ` Team B: ${NOISY_CALLERS} callers in a closed loop, each asking a report never asked before (on \`${NOISY_ROUTE}\`, not counted in the platform calls) as soon as its last is answered (after a 429/503, its retry-after), from the replay's start (warm-up included) to its end; nginx has no teams and gets the same load.` : ''}`,
    ...r.notes.map((n) => `- ${n}`),
    '',
  ].join('\n')
}
