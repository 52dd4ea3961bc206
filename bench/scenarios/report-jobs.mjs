// Report jobs beside a dashboard (issue 53, item 7): team A (a BI team) asks 50 distinct
// year-long reports at once with `prefer: respond-async`, then follows each job with
// `GET /api/v1/jobs/{id}?wait=30` until it ends; team B, the dashboard team of two-teams
// (8 callers asking week-long reports never asked before, closed loop), works the whole
// time. The platform and the gateway's settings are two-teams' (the sandbox with 16
// workers, a year-long report about 4.4 s; one replica, platform.maxConcurrent 64), with
// Redis when it is installed (jobs live there; else in the replica's memory).
// Targets: the dashboard keeps two-teams' targets of answers and errors (>= 70 % of its
// answers/s alone, the same dashboard in the same order; no error); the governor is
// work-conserving as its model bounds it (docs/governor.md, "Guarantees"; issue 51): of
// the samples from SETTLE_S after the jobs arrive, at most IDLE_SHARE with calls waiting
// at the gateway while a worker is idle and the gateway has fewer calls in flight than
// workers (two-teams' idle sample; those of the first SETTLE_S are counted, not judged:
// the limit learns the platform's room for more from answers); every job ends `done`;
// and each of the 50 reports is asked of the platform once: the jobs ask a route the
// dashboard does not, so the platform's calls on it are the jobs' calls, and 50 of them
// for 50 distinct reports all done (each needs one at least) is one each.

import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent } from 'undici'
import { http } from '../lib/http.mjs'
import { log, stopProcess } from '../lib/processes.mjs'
import { fmtInt, fmtMs, latencyFigures, markdownTable } from '../lib/stats.mjs'
import { CREATIVES, DASHBOARD_CALLERS, TARGET_SHARE, WARM_SECONDS, WORKERS, dashboardCallers, fresh, idleSamples, sampler, setSpeed } from './two-teams.mjs'

export const id = 'report-jobs'
export const title = 'Report jobs: 50 year-long reports asked as jobs by one team beside the dashboard team of two-teams'

const JOBS = 50
const YEAR_DAYS = 365
/** Every job followed at most this long after it was asked; past it, the row is missed. */
const JOBS_WITHIN_S = 120
const WAIT_S = 30
const ENDED = new Set(['done', 'failed', 'expired'])
/** The model's work-conserving bound (docs/governor.md, "Guarantees"): idle while calls wait at most this share of the samples... */
const IDLE_SHARE = 0.02
/** ...after the first seconds of a phase (test/sim/checks.ts, SETTLE_MS). */
const SETTLE_S = 10

/** The 50 jobs asked at once: each answer's status and the job's id (null when not 202). */
async function askJobs({ gw, key, agent }) {
  const headers = { 'x-api-key': key, 'accept-encoding': 'gzip', prefer: 'respond-async' }
  return Promise.all(
    Array.from({ length: JOBS }, async () => {
      const r = await http('GET', `${gw.url}${fresh(CREATIVES, YEAR_DAYS)}`, { headers, dispatcher: agent })
      return { status: r.status, id: r.status === 202 ? r.json().id : null }
    }),
  )
}

/** `['503 X', '503 X', '429 Y']` as `2× 503 X, 1× 429 Y`; '' for none. */
function countBy(items) {
  const counts = new Map()
  for (const item of items) counts.set(item, (counts.get(item) ?? 0) + 1)
  return [...counts].map(([item, n]) => `${n}× ${item}`).join(', ')
}

function safeJson(r) {
  try {
    return r.json()
  } catch {
    return null
  }
}

/**
 * A job followed with `?wait=` until it ends or `until` (performance.now()): its last
 * status, and `at` when it ended; each 429 or 503 it was told to come back after is pushed
 * on `later`.
 */
async function follow({ gw, key, agent, id, until, later }) {
  let status = null
  while (performance.now() < until) {
    const r = await http('GET', `${gw.url}/api/v1/jobs/${id}?wait=${WAIT_S}`, { headers: { 'x-api-key': key }, dispatcher: agent })
    if (r.status === 429 || r.status === 503) {
      // Come back when the answer says, as the contract asks of a client; counted in the row.
      later.push(`${r.status} ${safeJson(r)?.code ?? ''}`.trim())
      await sleep(Math.min(5, Number(r.headers['retry-after']) || 1) * 1000)
      continue
    }
    if (r.status !== 200) return { state: `HTTP ${r.status} ${safeJson(r)?.code ?? ''} ${safeJson(r)?.message ?? ''}`.trim(), at: performance.now(), tookSeconds: null }
    status = r.json()
    if (ENDED.has(status.state)) return { state: status.state, at: performance.now(), tookSeconds: status.tookSeconds ?? null, error: status.error ?? null }
  }
  return { state: status?.state ?? 'unknown', at: null, tookSeconds: null }
}

/**
 * One row on a gateway of its own: the dashboard alone WARM_SECONDS, then (with `jobs`)
 * team A's jobs asked and followed, the dashboard judged from then until the last job
 * ended; without jobs, judged `seconds`.
 */
async function phase({ fixture, gw, jobs, seconds }) {
  const { sandbox, teamKey, teamBKey, adminToken } = fixture
  const stopDashboard = dashboardCallers({ origin: gw.url, key: teamBKey, maxSeconds: WARM_SECONDS + JOBS_WITHIN_S + 10 })
  await sleep(WARM_SECONDS * 1000)
  await sandbox.clearCalls()
  const stopSampler = sampler(gw, sandbox, adminToken)
  const started = performance.now()
  let ended
  let asked = []
  let outcomes = []
  const later = []
  if (jobs) {
    const agent = new Agent({ connections: JOBS + 10, keepAliveTimeout: 60_000, headersTimeout: (WAIT_S + 30) * 1000, bodyTimeout: 60_000 })
    try {
      asked = await askJobs({ gw, key: teamKey, agent })
      const until = started + JOBS_WITHIN_S * 1000
      outcomes = await Promise.all(asked.filter((a) => a.id).map((a) => follow({ gw, key: teamKey, agent, id: a.id, until, later })))
    } finally {
      await agent.close()
    }
    ended = Math.max(started + 1000, ...outcomes.map((o) => o.at ?? performance.now()))
  } else {
    await sleep(seconds * 1000)
    ended = performance.now()
  }
  const samples = (await stopSampler()).filter((s) => s.at <= ended)
  const all = await stopDashboard()
  const answers = all.filter((a) => a.at >= started && a.at <= ended)
  const ok = answers.filter((a) => a.status === 200)
  const { idleWhileWaiting } = idleSamples(samples)
  const settled = samples.filter((s) => s.at >= started + SETTLE_S * 1000)
  const idleSettled = idleSamples(settled).idleWhileWaiting.length
  return {
    seconds: (ended - started) / 1000,
    rate: ok.length / ((ended - started) / 1000),
    ...latencyFigures(ok.map((a) => a.ms)),
    errors: answers.length - ok.length,
    busy: samples.length ? samples.reduce((sum, s) => sum + s.busy, 0) / samples.length : 0,
    idleWhileWaiting: idleWhileWaiting.length,
    idleSettled,
    settled: settled.length,
    idleAt: idleWhileWaiting.map((s) => `${((s.at - started) / 1000).toFixed(1)} s (${s.waiting} waiting, ${s.busy} at the platform, ${s.sent} in flight, limit ${s.limit})`),
    samples: samples.length,
    accepted: asked.filter((a) => a.id).length,
    refused: asked.filter((a) => !a.id).map((a) => a.status),
    done: outcomes.filter((o) => o.state === 'done').length,
    notDone: outcomes.filter((o) => o.state !== 'done').map((o) => o.state),
    later: countBy(later),
    tookNothing: outcomes.filter((o) => o.state === 'done' && o.tookSeconds === 0).length,
    jobCalls: jobs ? await sandbox.calls(CREATIVES) : null,
  }
}

export async function run({ fixture, quick }) {
  const { sandbox, startGateway, redisUrl } = fixture
  const seconds = quick ? 10 : 30
  const config = { teams: { bench: { rateLimit: { max: 600, window: '1m' } } }, platform: { maxConcurrent: 64, queue: 200 } }
  const rows = []
  await setSpeed(sandbox, 1)
  try {
    let alone = null
    for (const jobs of [false, true]) {
      const gw = await startGateway(`gw-report-jobs-${jobs ? 'jobs' : 'alone'}`, { redis: Boolean(redisUrl), config })
      try {
        const r = await phase({ fixture, gw, jobs, seconds })
        if (!jobs) alone = r
        const share = jobs ? r.rate / alone.rate : 1
        const checks = jobs
          ? {
              share: share >= TARGET_SHARE,
              errors: r.errors === 0,
              idle: r.idleSettled <= IDLE_SHARE * r.settled,
              done: r.done === JOBS,
              once: r.jobCalls === JOBS,
            }
          : null
        const missed = checks ? Object.entries(checks).filter(([, met]) => !met).map(([k]) => k) : []
        log(`report-jobs ${jobs ? 'jobs' : 'alone'}: dashboard ${fmtInt(r.rate)}/s (${Math.round(share * 100)} %), p99 ${fmtMs(r.p99)}, ${r.errors} errors, idle while waiting ${r.idleWhileWaiting}/${r.samples} (from ${SETTLE_S} s: ${r.idleSettled}/${r.settled})${jobs ? `, jobs ${r.accepted} accepted, ${r.done} done in ${r.seconds.toFixed(1)} s, ${r.jobCalls} platform calls${missed.length ? `, MISSED: ${missed.join(', ')}` : ''}` : ''}`)
        rows.push([
          jobs ? `asks ${JOBS} year-long reports as jobs at once, follows each with ?wait=${WAIT_S}` : 'nothing: the dashboard team alone',
          `${r.seconds.toFixed(1)} s`,
          fmtInt(r.rate),
          `${Math.round(share * 100)} %`,
          fmtMs(r.p95),
          fmtMs(r.p99),
          String(r.errors),
          `${r.idleWhileWaiting} of ${r.samples}${r.idleAt.length ? `: at ${r.idleAt.join('; ')}` : ''}`,
          `${r.idleSettled} of ${r.settled} (${r.settled ? ((100 * r.idleSettled) / r.settled).toFixed(1) : '0.0'} %)`,
          r.busy.toFixed(1),
          jobs ? `${r.done} of ${JOBS}${r.notDone.length ? ` (others: ${r.notDone.join(', ')})` : ''}${r.refused.length ? `; refused: ${r.refused.join(', ')}` : ''}${r.later ? `; status calls told to come back: ${r.later}` : ''}` : '–',
          jobs ? `${r.jobCalls} for ${JOBS} reports${r.tookNothing ? ` (${r.tookNothing} jobs' status says \`tookSeconds\` 0)` : ''}` : '–',
          jobs ? (missed.length ? `MISSED: ${missed.join(', ')}` : 'met') : '',
        ])
      } finally {
        await stopProcess(gw)
      }
    }
  } finally {
    await sandbox.control('POST', '/capacity', {})
    await sandbox.setLatency(0)
  }
  const header = ['what team A does', 'judged for', 'dashboard answers/s', 'of alone', 'dashboard p95', 'dashboard p99', 'dashboard errors', 'samples with calls waiting, a worker idle and fewer calls in flight than workers (two-teams)', `the same from ${SETTLE_S} s (judged: at most ${IDLE_SHARE * 100} %)`, 'calls at the platform (mean)', 'jobs done', "platform calls on the jobs' route", 'targets']
  return [
    markdownTable(header, rows),
    '',
    `The platform and the gateway: as two-teams (the sandbox with ${WORKERS} workers, a year-long report about 4.4 s, a week-long one about 124 ms; one replica, \`platform.maxConcurrent\` 64, team A limited to 600 calls a minute, every jobs setting at its default), ${redisUrl ? 'with Redis (jobs live there)' : 'without Redis (jobs in the replica\'s memory)'}. The dashboard team: ${DASHBOARD_CALLERS} callers in a closed loop asking week-long reports never asked before, alone ${WARM_SECONDS} s on each row's fresh gateway, then judged: alone for ${seconds} s, beside the jobs from when they are asked until the last one ended (at most ${JOBS_WITHIN_S} s). Team A asks ${JOBS} distinct year-long reports (\`${CREATIVES}\`, a route the dashboard does not ask) at once with \`prefer: respond-async\`, then follows each with \`GET /api/v1/jobs/{id}?wait=${WAIT_S}\` until it ends (after a 429 or a 503 it comes back when \`retry-after\` says, and the row counts those answers). Targets: the dashboard's of two-teams for its answers (>= ${TARGET_SHARE * 100} % of its answers/s alone, no error); work-conserving as the governor's model bounds it (docs/governor.md, "Guarantees"): from ${SETTLE_S} s after the jobs arrive, at most ${IDLE_SHARE * 100} % of the samples idle while calls wait (those of the first ${SETTLE_S} s counted, not judged); every job \`done\`, and ${JOBS} platform calls on the jobs' route for ${JOBS} distinct reports all done: each needs one at least, so one each.`,
    '',
  ].join('\n')
}
