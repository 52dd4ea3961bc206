// Dashboards (issue 17): many users load dashboards of several reports each (Zipf
// popularity over a few hundred reports), think between loads, on a short TTL and a
// slow platform. One trace, replayed against the gateway with and without
// `cache.refreshAhead` and, where installed, nginx (proxy_cache_lock,
// proxy_cache_use_stale updating, proxy_cache_background_update). Caller latency, the
// share of answers whose data is older than the TTL, and platform calls per report and
// minute, side by side.

import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, request } from 'undici'
import { http } from '../lib/http.mjs'
import { versionOf } from '../lib/machine.mjs'
import { startNginx } from '../lib/nginx.mjs'
import { LOAD_CORE, launch, log, pin, stopProcess } from '../lib/processes.mjs'
import { fmtMs, fmtPct, latencyFigures, markdownTable } from '../lib/stats.mjs'

export const id = 'dashboard'
export const title = 'Dashboards (issue 17): Zipf-popular reports on a short TTL and a slow platform'

const TTL_S = 10
const PLATFORM_LATENCY_MS = 300
const REPORTS = 300
const DASHBOARDS = 60
const REPORTS_PER_DASHBOARD = 4
const USERS = 40
const ZIPF_S = 1.1

/** A small seeded generator (mulberry32), so every target gets the same trace. */
function random(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

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
  const from = new Date(Date.UTC(2025, 0, 1 + (i % 200))).toISOString().slice(0, 10)
  const to = new Date(Date.UTC(2025, 0, 8 + (i % 200))).toISOString().slice(0, 10)
  return `/api/v1/report/campaigns/get?advertiserId=${100 + (i % 4)}&dateFrom=${from}&dateTo=${to}&byDate=1${i >= 200 ? '&byCampaign=1' : ''}`
}

/**
 * The trace: per user, a list of [start offset ms, dashboard] loads within `seconds`;
 * dashboards are drawn by Zipf popularity, each made of reports drawn by Zipf too
 * (popular dashboards share popular reports), think time exponential with mean `thinkMs`.
 */
function makeTrace(seconds, thinkMs) {
  const rand = random(17)
  const pickReport = zipf(REPORTS, ZIPF_S, rand)
  const dashboards = Array.from({ length: DASHBOARDS }, () => {
    const set = new Set()
    while (set.size < REPORTS_PER_DASHBOARD) set.add(pickReport())
    return [...set]
  })
  const pickDashboard = zipf(DASHBOARDS, ZIPF_S, rand)
  return Array.from({ length: USERS }, () => {
    const loads = []
    for (let at = rand() * thinkMs; at < seconds * 1000; at += -Math.log(1 - rand()) * thinkMs) loads.push([at, dashboards[pickDashboard()]])
    return loads
  })
}

/** Replays the trace against `origin`; each user loads a dashboard's reports together. */
async function replay(origin, trace, key) {
  const agent = new Agent({ connections: USERS * REPORTS_PER_DASHBOARD, keepAliveTimeout: 60_000, headersTimeout: 30_000, bodyTimeout: 30_000 })
  const answers = []
  const start = performance.now()
  await Promise.all(
    trace.map(async (loads) => {
      for (const [at, reports] of loads) {
        const wait = at - (performance.now() - start)
        if (wait > 0) await sleep(wait)
        await Promise.all(
          reports.map(async (r) => {
            const t0 = performance.now()
            try {
              const res = await request(`${origin}${reportPath(r)}`, { dispatcher: agent, headers: { 'x-api-key': key } })
              const text = await res.body.text()
              const ageMs = res.statusCode === 200 ? Date.now() - JSON.parse(text).generatedAt : null
              answers.push({ ms: performance.now() - t0, status: res.statusCode, ageMs, report: r })
            } catch (err) {
              answers.push({ ms: performance.now() - t0, status: err.code ?? 'error', ageMs: null, report: r })
            }
          }),
        )
      }
    }),
  )
  await agent.close()
  return { answers, seconds: (performance.now() - start) / 1000 }
}

export async function run({ fixture, quick }) {
  const { startGateway, sandbox, teamKey } = fixture
  const seconds = quick ? 20 : 60
  const trace = makeTrace(seconds, quick ? 1000 : 2000)
  const [cmd, args] = pin(LOAD_CORE, process.execPath, ['bench/dashboard-origin.mjs'])
  const originProcess = await launch('dashboard-origin', cmd, args, { env: { BENCH_LATENCY_MS: String(PLATFORM_LATENCY_MS) }, ready: /^READY / })
  const origin = `http://127.0.0.1:${JSON.parse(originProcess.line.slice('READY '.length)).port}`
  const calls = async () => (await http('GET', `${origin}/__count`)).json().count
  const cache = (refreshAhead) => ({ cache: { ttl: { recent: `${TTL_S}s`, settled: `${TTL_S}s` }, staleWhileRevalidate: `${TTL_S}s`, refreshAhead } })
  const targets = [
    { id: 'gw-ahead', label: 'gateway, `cache.refreshAhead: 0.8`', start: () => startGateway('gw-dash-ahead', { config: cache(0.8), platformUrl: origin }) },
    { id: 'gw-plain', label: 'gateway, `cache.refreshAhead: 0` (fresh, then stale-while-revalidate)', start: () => startGateway('gw-dash-plain', { config: cache(0), platformUrl: origin }) },
    versionOf('nginx', ['-v']) && { id: 'nginx', label: `nginx proxy_cache, valid ${TTL_S}s, use_stale updating + background_update`, start: () => startNginx({ name: 'nginx-dash', origin, platformToken: sandbox.token, valid: `${TTL_S}s`, updating: true }) },
  ].filter(Boolean)
  const rows = []
  const notes = []
  for (const target of targets) {
    let server
    try {
      server = await target.start()
    } catch (err) {
      notes.push(`${target.label}: not run (${err.message.split('\n')[0]})`)
      log(notes.at(-1))
      continue
    }
    await http('DELETE', `${origin}/__count`)
    const { answers, seconds: took } = await replay(server.url, trace, teamKey)
    const platformCalls = await calls()
    await stopProcess(server)
    const ok = answers.filter((a) => a.status === 200)
    const old = ok.filter((a) => a.ageMs > TTL_S * 1000).length
    const reportsAsked = new Set(answers.map((a) => a.report)).size
    const figures = latencyFigures(answers.map((a) => a.ms))
    const failed = answers.length - ok.length
    rows.push([target.label, String(answers.length), failed ? String(failed) : '0', fmtMs(figures.p50), fmtMs(figures.p95), fmtMs(figures.p99), fmtPct(old / Math.max(1, ok.length)), (platformCalls / reportsAsked / (took / 60)).toFixed(2)])
    log(`dashboard ${target.id}: ${answers.length} answers, p50 ${fmtMs(figures.p50)}, p99 ${fmtMs(figures.p99)}, older than TTL ${fmtPct(old / Math.max(1, ok.length))}, platform calls ${platformCalls}`)
  }
  await stopProcess(originProcess)
  return [
    markdownTable(['target', 'answers', 'not 200', 'p50', 'p95', 'p99', 'data older than the TTL', 'platform calls per report and minute'], rows),
    '',
    `${USERS} users for ${seconds} s, each loading a dashboard of ${REPORTS_PER_DASHBOARD} reports at once, then thinking (exponential, mean ${quick ? 1 : 2} s); ${DASHBOARDS} dashboards over ${REPORTS} reports, both drawn with Zipf popularity (s = ${ZIPF_S}); the same seeded trace for every target. TTL ${TTL_S} s (gateway: \`cache.ttl\` ${TTL_S} s and \`staleWhileRevalidate\` ${TTL_S} s); the platform stand-in (bench/dashboard-origin.mjs) answers after ${PLATFORM_LATENCY_MS} ms and stamps each answer with the time it made it, so the data's age is measured the same way behind every cache. Platform calls per report and minute: report calls the stand-in received / distinct reports asked / minutes of the replay.`,
    ...notes.map((n) => `- ${n}`),
    '',
  ].join('\n')
}
