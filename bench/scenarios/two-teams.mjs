// Two teams on one credential: a dashboard team beside a team that, as an ordinary
// read-only key within its rate limit may, asks year-long reports, leaves its answers
// unread, asks reports the platform fails, or is throttled on two routes. The platform:
// the sandbox with 16 workers (a call waits for one), a week-long report about 130 ms, a
// year-long one about 4.5 s. The dashboard team: 8 callers asking week-long reports never
// asked before (closed loop). One gateway replica, every setting at its default. Each row
// runs in two orders: the dashboard in service when the other team starts, and a fresh
// gateway the other team reaches first (the limit not learned yet).
// Targets: the dashboard team keeps >= 70 % of the answers/s it gets alone, and gets no
// error it did not cause; the platform is never idle while either team waits (samples
// every 250 ms of the teams' calls waiting at the gateway, the platform's busy workers and
// the gateway's calls in flight and seats owed to a team that waits for nothing (kept for
// it while it asked within the linger, docs/governor.md); a team held back on purpose,
// paused for its 429s, counted apart). On a fresh gateway the dashboard's
// first second is reported and not judged: the limit starts at platform.initialConcurrent,
// and no answer has yet said the platform has room (docs/governor.md, the limit rule's
// start).
// Two rows of issue 51 (item 5), with a dashboard that waits for all its answers: it asks
// 8 distinct week-long reports at once, waits for all of them, then asks its next view.
// - Beside the year-long team, in both orders: it keeps >= 80 % of its answers/s alone
//   (the same dashboard alone, in the same order), no error, no sample idle while calls
//   wait (as above).
// - A platform that gets 3x slower over a minute (no errors, the same 16 workers: the
//   sandbox's latency and cost per day raised every second), the dashboard in service
//   beside a team of 32 callers of week-long reports (no rate limit: they keep the
//   workers busy): the learned limit never falls to its minimum (platform.minConcurrent,
//   2); from 30 s after the slowdown began, the workers busy >= 90 % of the 16 (busy
//   workers are what 16 workers do at the cost of the moment); at 3x, the dashboard keeps
//   >= 80 % of its answers/s alone on the platform 3x slower throughout; no error. Run
//   with the dashboard in service only: a drift is what a gateway in service meets. In
//   this row and its reference alone each call's latency spreads (LATENCY_SPREAD).
// BENCH_TWO_TEAMS_ROWS=<id>[,<id>] runs only those rows (ids in ROWS below), e.g. the new
// rows on an older build.

import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { connect } from 'node:net'
import { Agent } from 'undici'
import { closedLoop, timedGet } from '../lib/load.mjs'
import { http } from '../lib/http.mjs'
import { log, stopProcess } from '../lib/processes.mjs'
import { fmtInt, fmtMs, markdownTable, percentile } from '../lib/stats.mjs'

export const id = 'two-teams'
export const title = 'Two teams on one credential: a dashboard team beside a team of year-long reports, of unread answers, of failing reports, of throttled routes; a dashboard that waits for all its answers, and a platform 3× slower'

export const WORKERS = 16
const LATENCY_MS = 40
const PER_DAY_MS = 12
export const DASHBOARD_CALLERS = 8
/** A view of the dashboard that waits for all its answers: this many distinct week-long reports at once. */
const VIEW_REPORTS = 8
export const TARGET_SHARE = 0.7
/** The dashboard that waits for all its answers, against itself alone (issue 51, item 4). */
const TARGET_VIEW_SHARE = 0.8
/** The slowdown: the platform this many times slower, over RAMP seconds, the same workers. */
const SLOWER = 3
/**
 * In the two rows judged at SLOWER (the slowdown and its reference alone), each call's
 * latency is drawn evenly within this fraction of LATENCY_MS either side (at any speed): a
 * week's report then spreads about 2 % of its cost, as the simulator's replay of the row
 * (issue-shapes.test.ts). With every call of one cost to the millisecond, the workers'
 * ends keep the phases the start and the ramp left them, and the dashboard's share was a
 * draw of those phases: 50 % when they bunch into one, 67 % with two even ones, where
 * any work-conserving order gives 68 % on ends spread over a call's time
 * (docs/decisions/governor-model.md, "The dashboard at 3x slower, traced").
 */
const LATENCY_SPREAD = 0.1
/** platform.minConcurrent at its default: the learned limit must not fall to it. */
const MIN_CONCURRENT = 2
/** From this long after the slowdown began, the workers busy at least TARGET_BUSY of WORKERS. */
const BUSY_WITHIN_S = 30
const TARGET_BUSY = 0.9
/** In the 'warm' order, how long the dashboard works alone before the other team starts. */
export const WARM_SECONDS = 10
/**
 * In the 'cold' order, the dashboard's first second: its samples are reported, not
 * judged, as a gateway that has not yet had an answer of the dashboard's cannot know the
 * platform has room for it (the limit rule starts at platform.initialConcurrent).
 */
const FIRST_WINDOW_MS = 1000
export const CAMPAIGNS = '/api/v1/report/campaigns/get'
export const CREATIVES = '/api/v1/report/creatives/get'
const PLACEMENTS = '/api/v1/report/adPlacementPositions/get'

let nextDay = 0
/** A report over `days` days never asked before, on `path`. */
export function fresh(path, days) {
  const day = (offset) => new Date(Date.UTC(1990, 0, 1 + offset)).toISOString().slice(0, 10)
  const first = nextDay
  nextDay += 1
  return `${path}?advertiserId=${100 + (first % 4)}&byDate=1&dateFrom=${day(first)}&dateTo=${day(first + days - 1)}`
}

/**
 * The dashboard team: DASHBOARD_CALLERS callers in a closed loop, each asking a week-long
 * report never asked before (closedLoop's `stop()` and answers).
 */
export function dashboardCallers({ origin, key, maxSeconds }) {
  return closedLoop({ origins: [origin], key, callers: DASHBOARD_CALLERS, nextPath: () => fresh(CAMPAIGNS, 7), maxSeconds })
}

/** The attacks: what the other team does while the dashboard team works. */
const ATTACKS = {
  'year-long': {
    label: 'asks year-long reports (24 callers)',
    start: async ({ gw, key }) => closedLoop({ origins: [gw.url], key, callers: 24, nextPath: () => fresh(CAMPAIGNS, 365), maxSeconds: 120 }),
  },
  unread: {
    label: 'leaves 8 answers of 32 MB unread',
    start: async ({ gw, key, sandbox }) => {
      await sandbox.setRouteFailure('/api/v1/campaign/get', { kind: 'large', bytes: 32_000_000 })
      const body = '{"userId":101}'
      const sockets = Array.from({ length: 8 }, () => {
        const socket = connect(Number(new URL(gw.url).port), '127.0.0.1')
        socket.pause()
        socket.on('error', () => undefined)
        socket.write(`POST /api/v1/campaign/get HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`)
        return socket
      })
      return async () => {
        for (const socket of sockets) socket.destroy()
        return []
      }
    },
  },
  failing: {
    label: 'asks reports the platform answers 500 on two routes (12 callers)',
    start: async ({ gw, key, sandbox }) => {
      for (const path of [CREATIVES, PLACEMENTS]) await sandbox.setRouteFailure(path, { kind: 'status', status: 500 })
      let n = 0
      return closedLoop({ origins: [gw.url], key, callers: 12, nextPath: () => fresh(n++ % 2 ? CREATIVES : PLACEMENTS, 60), maxSeconds: 120 })
    },
  },
  throttled: {
    label: 'is throttled (429) on two routes (12 callers)',
    start: async ({ gw, key, sandbox }) => {
      for (const path of [CREATIVES, PLACEMENTS]) await sandbox.setRouteFailure(path, { kind: 'status', status: 429, headers: { 'retry-after': '1' } })
      let n = 0
      return closedLoop({ origins: [gw.url], key, callers: 12, nextPath: () => fresh(n++ % 2 ? CREATIVES : PLACEMENTS, 60), maxSeconds: 120 })
    },
  },
  weeks: {
    label: 'asks week-long reports (32 callers, no rate limit)',
    start: async ({ gw, key }) => closedLoop({ origins: [gw.url], key, callers: 32, nextPath: () => fresh(CAMPAIGNS, 7), maxSeconds: 240 }),
  },
}

/**
 * The rows: the dashboard ('callers': DASHBOARD_CALLERS in a closed loop; 'views': one that
 * asks VIEW_REPORTS at once and waits for all of them), what the other team does (null:
 * the dashboard alone), the row judged against (`alone`), the platform's speed (`speed`:
 * that many times slower throughout; `slowdown`: SLOWER times slower over a minute), the
 * spread of its latency (`spread`, LATENCY_SPREAD) and the orders it runs in. `against`:
 * the row whose answers/s are the dashboard's alone.
 */
const ROWS = [
  { id: 'alone', dashboard: 'callers', attack: null, label: 'nothing: the dashboard team alone' },
  ...['year-long', 'unread', 'failing', 'throttled'].map((a) => ({ id: a, dashboard: 'callers', attack: a, against: 'alone', target: TARGET_SHARE, label: ATTACKS[a].label })),
  { id: 'views-alone', dashboard: 'views', attack: null, label: `nothing: a dashboard that waits for all its answers (${VIEW_REPORTS} week-long reports a view) alone` },
  { id: 'views-year-long', dashboard: 'views', attack: 'year-long', against: 'views-alone', target: TARGET_VIEW_SHARE, label: `${ATTACKS['year-long'].label}, beside a dashboard that waits for all its answers` },
  { id: 'views-alone-slow', dashboard: 'views', attack: null, speed: SLOWER, spread: LATENCY_SPREAD, orders: ['warm'], label: `nothing, the platform ${SLOWER}× slower throughout: the dashboard that waits for all its answers alone` },
  { id: 'views-slower', dashboard: 'views', attack: 'weeks', slowdown: true, spread: LATENCY_SPREAD, orders: ['warm'], against: 'views-alone-slow', target: TARGET_VIEW_SHARE, label: `${ATTACKS.weeks.label} while the platform gets ${SLOWER}× slower over a minute, beside a dashboard that waits for all its answers (judged at ${SLOWER}×)` },
]

/**
 * A dashboard that waits for all its answers: asks VIEW_REPORTS distinct week-long
 * reports at once, waits for every one, then asks its next view, until `stop()` or
 * `maxSeconds`. `stop()` resolves with every answer, { ms, status, at }, and every view,
 * { ms, at, ok } (`at`: performance.now() when it was in).
 */
function viewLoop({ origin, key, maxSeconds }) {
  const agent = new Agent({ connections: VIEW_REPORTS + 2, keepAliveTimeout: 60_000, headersTimeout: 60_000, bodyTimeout: 60_000 })
  const answers = []
  const views = []
  const until = performance.now() + maxSeconds * 1000
  let stopped = false
  const viewer = (async () => {
    while (!stopped && performance.now() < until) {
      const t0 = performance.now()
      const got = await Promise.all(Array.from({ length: VIEW_REPORTS }, () => timedGet(agent, `${origin}${fresh(CAMPAIGNS, 7)}`, key)))
      const at = performance.now()
      for (const r of got) answers.push({ ms: r.ms, status: r.status, at: t0 + r.ms })
      views.push({ ms: at - t0, at, ok: got.every((r) => r.status === 200) })
      const refused = got.find((r) => r.status === 429 || r.status === 503)
      if (refused) await sleep(Math.min(5, Number(refused.retryAfter) || 1) * 1000)
    }
  })()
  return async () => {
    stopped = true
    await viewer
    await agent.close()
    return { answers, views }
  }
}

/** The sandbox `factor` times slower than LATENCY_MS + PER_DAY_MS a day, the same WORKERS; `spread`: the latency drawn evenly within that fraction either side. */
export async function setSpeed(sandbox, factor, spread = 0) {
  await sandbox.setLatency(LATENCY_MS * factor * (1 - spread), LATENCY_MS * factor * (1 + spread))
  await sandbox.control('POST', '/capacity', { workers: WORKERS, perDayMs: PER_DAY_MS * factor })
}

/**
 * Every 250 ms: the calls waiting at the gateway (those of a team it holds back on purpose,
 * paused for the 429s it draws, apart), the platform's calls (at a worker or in its queue)
 * and busy workers, the gateway's calls in flight with the seats it owes a team that waits
 * for nothing, and the limit in force, knee and phase of the limit rule. The status gives
 * each team's share, not the most it asked within the linger: the seats owed are taken as
 * each such team's share less what it holds, at most what the governor owes it. (A
 * gateway before the governor of docs/governor.md, as at 4c03196, gives instead the seats
 * it keeps 50 ms for a caller on its way back, `seatsKept`, and braked teams, `brake`:
 * read the same way, so that the rows run on it too.)
 */
export function sampler(gw, sandbox, adminToken) {
  const samples = []
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      try {
        const [status, load] = await Promise.all([http('GET', `${gw.admin}/admin/status`, { headers: { authorization: `Bearer ${adminToken}` } }), sandbox.concurrency()])
        const governor = status.json().governors.find((g) => g.credential === 'default')
        const paused = new Set(governor.pauses.map((p) => p.team).filter((team) => team !== null))
        const held = (t) => paused.has(t.team) || (t.brake !== undefined && t.brake !== null)
        const waiting = (teams) => teams.reduce((sum, t) => sum + t.waiting, 0)
        const owed = governor.teams.reduce((sum, t) => sum + ('share' in t ? (t.waiting === 0 ? Math.max(0, t.share - t.inFlight) : 0) : (t.seatsKept ?? 0)), 0)
        samples.push({
          at: performance.now(),
          waiting: waiting(governor.teams.filter((t) => !held(t))),
          held: waiting(governor.teams.filter(held)),
          busy: load.inFlight,
          workers: Math.min(load.inFlight, WORKERS),
          sent: governor.inFlight + owed,
          limit: governor.limit,
          knee: governor.knee ?? null,
          phase: governor.phase ?? null,
        })
      } catch {
        // a sample missed
      }
      await sleep(250)
    }
  })()
  return async () => {
    stopped = true
    await loop
    return samples
  }
}

/**
 * The sampler's samples with calls waiting at the gateway and a worker of the platform
 * idle (`idle`), and of those the ones with fewer calls in flight and seats owed than the
 * platform has workers (`idleWhileWaiting`, the judged ones). A call on its way to the
 * platform, or its answer on its way back, is in flight at the gateway and not yet (or no
 * longer) at a worker, and a seat owed to a team that asked within the linger is lent to
 * short calls only: the gateway left a worker idle only with fewer of those than workers.
 */
export function idleSamples(samples) {
  const idle = samples.filter((s) => s.waiting > 0 && s.busy < WORKERS)
  return { idle, idleWhileWaiting: idle.filter((s) => s.sent < WORKERS) }
}

/** The stretches of a slowdown row, in seconds from when the other team started. */
function slowdownStretches(quick) {
  const before = quick ? 5 : 20
  const ramp = quick ? 20 : 60
  const hold = quick ? 10 : 30
  // A quick run's ramp is shorter than BUSY_WITHIN_S: judged from half of it.
  return { before, ramp, hold, total: before + ramp + hold, within: Math.min(BUSY_WITHIN_S, ramp / 2) }
}

/**
 * The dashboard team's answers over `seconds`, beside what `row.attack` starts (none:
 * alone), in one of two orders. 'cold': on a fresh gateway the other team starts first,
 * and the dashboard is judged from its arrival, once the other team's load has run 5 s.
 * 'warm': the dashboard works alone for WARM_SECONDS (the gateway learns the platform, as
 * one in service has), then the other team starts, and the dashboard is judged from that
 * moment. A slowdown row: judged from then too, the platform's speed stepped each second
 * from 1 to SLOWER over the ramp, after `before` seconds, then held there.
 */
async function phase({ fixture, gw, seconds, row, order, quick }) {
  const { sandbox, teamKey, teamBKey, adminToken } = fixture
  const attack = row.attack ? ATTACKS[row.attack] : null
  const stretch = row.slowdown ? slowdownStretches(quick) : null
  const judged = stretch ? stretch.total : seconds
  const dashboard = () =>
    row.dashboard === 'views'
      ? viewLoop({ origin: gw.url, key: teamBKey, maxSeconds: judged + WARM_SECONDS + 5 })
      : (() => {
          const stop = dashboardCallers({ origin: gw.url, key: teamBKey, maxSeconds: judged + WARM_SECONDS + 5 })
          return async () => ({ answers: await stop(), views: null })
        })()
  const startAttack = () => (attack ? attack.start({ gw, key: teamKey, sandbox }) : async () => [])
  let stopDashboard
  let stopAttack
  if (order === 'cold') {
    stopAttack = await startAttack()
    if (attack) await sleep(5000)
    stopDashboard = dashboard()
  } else {
    stopDashboard = dashboard()
    await sleep(WARM_SECONDS * 1000)
    stopAttack = await startAttack()
  }
  const stopSampler = sampler(gw, sandbox, adminToken)
  const started = performance.now()
  if (stretch) {
    await sleep(stretch.before * 1000)
    for (let s = 1; s <= stretch.ramp; s += 1) {
      await setSpeed(sandbox, 1 + ((SLOWER - 1) * s) / stretch.ramp, row.spread)
      const wait = started + (stretch.before + s) * 1000 - performance.now()
      if (wait > 0) await sleep(wait)
    }
    const wait = started + stretch.total * 1000 - performance.now()
    if (wait > 0) await sleep(wait)
  } else {
    await sleep(seconds * 1000)
  }
  const ended = performance.now()
  const samples = await stopSampler()
  const { answers: all, views } = await stopDashboard()
  const otherAll = await stopAttack()
  await sandbox.clearRouteFailures()
  // At SLOWER, the stretch the dashboard's share is judged on; else the whole.
  const from = stretch ? started + (stretch.before + stretch.ramp) * 1000 : started
  const answers = all.filter((a) => a.at >= from && a.at <= ended)
  const others = otherAll.filter((a) => a.at >= from && a.at <= ended && a.status === 200)
  const ok = answers.filter((a) => a.status === 200)
  const sorted = (views ? views.filter((v) => v.at >= from && v.at <= ended) : ok).map((a) => a.ms).sort((x, y) => x - y)
  const { idle, idleWhileWaiting } = idleSamples(samples)
  const firstWindow = order === 'cold' ? idleWhileWaiting.filter((s) => s.at - started < FIRST_WINDOW_MS).length : 0
  const heldBack = samples.filter((s) => s.held > 0).length
  const result = {
    rate: ok.length / ((ended - from) / 1000),
    otherRate: row.attack === 'unread' ? null : others.length / ((ended - from) / 1000),
    p95: percentile(sorted, 95),
    errors: all.filter((a) => a.at >= started && a.at <= ended && a.status !== 200).length,
    otherErrors: row.attack === 'weeks' ? otherAll.filter((a) => a.at >= started && a.at <= ended && a.status !== 200).length : null,
    busy: samples.length ? samples.reduce((sum, s) => sum + s.busy, 0) / samples.length : 0,
    idleWhileWaiting: idleWhileWaiting.length,
    firstWindow,
    idleInTransit: idle.length - idleWhileWaiting.length,
    heldBack,
    samples: samples.length,
    limitMin: samples.length ? Math.min(...samples.map((s) => s.limit)) : null,
  }
  if (stretch) result.stretches = slowdownFigures({ stretch, started, samples, all, otherAll })
  return result
}

/** A slowdown row, stretch by stretch: the limit, the knee, the busy workers, each team's answers/s, samples idle while calls wait. */
function slowdownFigures({ stretch, started, samples, all, otherAll }) {
  const parts = [
    ['before, 1×', 0, stretch.before],
    [`the ramp's first ${stretch.within} s`, stretch.before, stretch.before + stretch.within],
    [`the ramp's last ${stretch.ramp - stretch.within} s`, stretch.before + stretch.within, stretch.before + stretch.ramp],
    [`held at ${SLOWER}×`, stretch.before + stretch.ramp, stretch.total],
    [`judged: from ${stretch.within} s after the slowdown began`, stretch.before + stretch.within, stretch.total],
  ].filter(([, a, b]) => b > a)
  return parts.map(([name, a, b]) => {
    const [t0, t1] = [started + a * 1000, started + b * 1000]
    const inside = samples.filter((s) => s.at >= t0 && s.at < t1)
    const span = (xs) => (xs.length ? `${Math.min(...xs)}–${Math.max(...xs)}` : '—')
    const mean = (xs) => (xs.length ? xs.reduce((x, y) => x + y, 0) / xs.length : NaN)
    const rate = (answers) => answers.filter((x) => x.at >= t0 && x.at < t1 && x.status === 200).length / (b - a)
    return {
      name,
      limit: span(inside.map((s) => s.limit)),
      knee: span(inside.map((s) => s.knee).filter((k) => k !== null)),
      phases: [...new Set(inside.map((s) => s.phase).filter((p) => p !== null))].join(', ') || '—',
      workers: mean(inside.map((s) => s.workers)),
      atPlatform: mean(inside.map((s) => s.busy)),
      dashboard: rate(all),
      other: rate(otherAll),
      idle: inside.filter((s) => s.waiting > 0 && s.busy < WORKERS && s.sent < WORKERS).length,
      samples: inside.length,
      judged: name.startsWith('judged'),
    }
  })
}

/** The rows chosen by BENCH_TWO_TEAMS_ROWS (all without it). */
function chosenRows() {
  const only = process.env.BENCH_TWO_TEAMS_ROWS?.split(',').filter(Boolean) ?? null
  for (const id of only ?? []) if (!ROWS.some((r) => r.id === id)) throw new Error(`BENCH_TWO_TEAMS_ROWS: no row ${id} (the rows are ${ROWS.map((r) => r.id).join(', ')})`)
  return only ? ROWS.filter((r) => only.includes(r.id)) : ROWS
}

export async function run({ fixture, quick }) {
  const { sandbox, startGateway } = fixture
  const seconds = quick ? 10 : 30
  const rows = chosenRows()
  await setSpeed(sandbox, 1)
  const table = { warm: [], cold: [] }
  const slowdowns = []
  try {
    for (const order of ['warm', 'cold']) {
      const results = new Map()
      for (const row of rows.filter((r) => (r.orders ?? ['warm', 'cold']).includes(order))) {
        // A gateway of its own per row: nothing learned from one carries into the next.
        // The team of week-long reports has no rate limit: it keeps the workers busy.
        const teams = row.attack === 'weeks' ? {} : { teams: { bench: { rateLimit: { max: 600, window: '1m' } } } }
        const gw = await startGateway(`gw-two-teams-${order}-${row.id}`, { config: { ...teams, platform: { maxConcurrent: 64, queue: 200 } } })
        try {
          await setSpeed(sandbox, row.speed ?? 1, row.spread)
          const r = await phase({ fixture, gw, seconds, row, order, quick })
          results.set(row.id, r)
          const alone = row.against ? results.get(row.against) : null
          const share = alone ? r.rate / alone.rate : null
          const judged = r.stretches?.find((s) => s.judged)
          const met = !row.attack
            ? true
            : row.slowdown
              ? (share === null || share >= row.target) && r.errors === 0 && r.otherErrors === 0 && r.limitMin > MIN_CONCURRENT && judged.workers >= TARGET_BUSY * WORKERS
              : (share === null || share >= row.target) && r.errors === 0 && r.idleWhileWaiting - r.firstWindow === 0
          table[order].push([
            row.label,
            fmtInt(r.rate),
            !row.attack ? '100 %' : share === null ? '– (alone not run)' : `${Math.round(share * 100)} %`,
            fmtMs(r.p95),
            row.attack === 'weeks' ? `${r.errors} (the other team: ${r.otherErrors})` : String(r.errors),
            row.attack && r.otherRate !== null ? r.otherRate.toFixed(1) : '–',
            r.busy.toFixed(1),
            `${r.idleWhileWaiting} of ${r.samples}`,
            order === 'cold' ? String(r.firstWindow) : '–',
            `${r.idleInTransit} of ${r.samples}`,
            `${r.heldBack} of ${r.samples}`,
            row.attack ? `${met ? 'met' : 'MISSED'}${row.target ? ` (≥ ${Math.round(row.target * 100)} %)` : ''}` : '',
          ])
          if (r.stretches) slowdowns.push({ row, r, share })
          log(`two-teams ${order} ${row.id}: dashboard ${fmtInt(r.rate)}/s (${share === null ? '–' : Math.round(share * 100)} %), p95 ${fmtMs(r.p95)}, ${r.errors} errors, the other team ${r.otherRate === null ? '–' : r.otherRate.toFixed(1)}/s, platform ${r.busy.toFixed(1)} of ${WORKERS} busy, idle while waiting ${r.idleWhileWaiting}/${r.samples} (${r.firstWindow} in the first second), limit at least ${r.limitMin}`)
          for (const s of r.stretches ?? []) log(`  ${s.name}: limit ${s.limit}, knee ${s.knee} (${s.phases}), workers busy ${s.workers.toFixed(1)} of ${WORKERS}, dashboard ${s.dashboard.toFixed(1)}/s, the other team ${s.other.toFixed(1)}/s, idle while waiting ${s.idle}/${s.samples}`)
        } finally {
          await stopProcess(gw)
          await setSpeed(sandbox, 1)
        }
      }
    }
  } finally {
    await sandbox.control('POST', '/capacity', {})
    await sandbox.setLatency(0)
  }
  const header = ['what the other team does', 'dashboard answers/s', 'of alone', 'dashboard p95 (a view\'s, for a dashboard that waits for all its answers)', 'dashboard errors', "the other team's answers/s (200)", 'calls at the platform, at a worker or queued there (mean)', 'samples with calls waiting, a worker idle and fewer calls in flight (seats owed to a team that waits for nothing counted) than workers', "of those, in the dashboard's first second on a fresh gateway (not judged)", 'samples with calls waiting and a worker idle, a call in transit or a seat owed (as many in flight or owed as workers)', 'samples with a team held back (paused)', 'target']
  const slowHeader = ['stretch (from the other team\'s start)', 'limit in force', 'knee (phase)', 'workers busy (mean of 16)', 'calls at the platform (mean)', 'dashboard answers/s', "the other team's answers/s", 'samples idle while calls wait (as above)']
  const slowTables = slowdowns.flatMap(({ r, share }) => {
    const judged = r.stretches.find((s) => s.judged)
    return [
      `The platform ${SLOWER}× slower over a minute (the dashboard in service; the other team ${ATTACKS.weeks.label}):`,
      '',
      markdownTable(
        slowHeader,
        r.stretches.map((s) => [s.name, s.limit, `${s.knee} (${s.phases})`, `${s.workers.toFixed(1)} (${Math.round((s.workers / WORKERS) * 100)} %)`, s.atPlatform.toFixed(1), s.dashboard.toFixed(1), s.other.toFixed(1), `${s.idle} of ${s.samples}`]),
      ),
      '',
      `Targets: the limit never at its minimum (${MIN_CONCURRENT}): its lowest ${r.limitMin}, **${r.limitMin > MIN_CONCURRENT ? 'met' : 'MISSED'}**; the workers busy from ${slowdownStretches(quick).within} s after the slowdown began ≥ ${TARGET_BUSY * 100} % of ${WORKERS}: ${judged.workers.toFixed(1)} (${Math.round((judged.workers / WORKERS) * 100)} %), **${judged.workers >= TARGET_BUSY * WORKERS ? 'met' : 'MISSED'}**; the dashboard at ${SLOWER}× ≥ ${TARGET_VIEW_SHARE * 100} % of its answers/s alone at ${SLOWER}×: ${share === null ? '– (alone not run)' : `${Math.round(share * 100)} %, **${share >= TARGET_VIEW_SHARE ? 'met' : 'MISSED'}**`}; no error: ${r.errors} (the dashboard), ${r.otherErrors} (the other team), **${r.errors === 0 && r.otherErrors === 0 ? 'met' : 'MISSED'}**.`,
      '',
    ]
  })
  return [
    `The dashboard in service (it works alone ${WARM_SECONDS} s, then the other team starts; judged from that moment):`,
    '',
    markdownTable(header, table.warm),
    '',
    `On a fresh gateway (the other team starts first; the dashboard arrives 5 s later and is judged from its arrival; its first ${FIRST_WINDOW_MS / 1000} s of samples reported, not judged):`,
    '',
    markdownTable(header, table.cold),
    '',
    ...slowTables,
    `The platform: the sandbox with ${WORKERS} workers (a call waits for a free one), ${LATENCY_MS} ms plus ${PER_DAY_MS} ms per day of a report's range (a week: about ${LATENCY_MS + 7 * PER_DAY_MS} ms, a year: about ${((LATENCY_MS + 365 * PER_DAY_MS) / 1000).toFixed(1)} s). The dashboard team: ${DASHBOARD_CALLERS} callers in a closed loop, each asking a week-long report never asked before, or a dashboard that waits for all its answers (${VIEW_REPORTS} distinct week-long reports at once, all awaited, then its next view), judged against the same dashboard alone in the same order; ${seconds} s judged per row. The other team: one read-only key with a rate limit of 600 a minute (none for the ${ATTACKS.weeks.label.replace(/^asks /, '')}). One gateway replica per row, every governor setting at its default. Targets: the dashboard keeps >= ${TARGET_SHARE * 100} % of its answers/s alone (>= ${TARGET_VIEW_SHARE * 100} % for the dashboard that waits for all its answers) and no error; the samples (every 250 ms, from \`GET /admin/status\`) say whether calls waited at the gateway while a worker of the platform was free and the gateway had fewer calls in flight, seats owed to a team that waits for nothing counted (each such team's \`share\` less its \`inFlight\`: the status gives no peak, so at most what the governor owes it), than the platform has workers (with as many, a call is on its way to a worker, its answer on its way back, or a seat is kept for a team that asked within the linger, lent to short calls only: counted in a column of their own), the calls of a team held back on purpose (paused for its 429s) apart: those are counted in a column of their own. On a fresh gateway, the samples of the dashboard's first ${FIRST_WINDOW_MS / 1000} s are counted and not judged: the limit starts at \`platform.initialConcurrent\` (8), and until an answer of the dashboard's comes back nothing says the platform has room for more; an operator who knows the platform's workers sets that start, and with Redis a replica adopts the limit the others learned. The slowdown: the sandbox's latency and cost per day raised each second from 1× to ${SLOWER}× over ${slowdownStretches(quick).ramp} s after ${slowdownStretches(quick).before} s at 1×, then held ${slowdownStretches(quick).hold} s at ${SLOWER}×, the same ${WORKERS} workers, no error, each call's latency drawn evenly within ±${LATENCY_SPREAD * 100} % in it and in the dashboard's row alone at ${SLOWER}× (with one cost per call to the millisecond, the workers' ends keep their phases, and the dashboard's share is a draw of them); a worker is busy while the platform has a call at it (the sandbox's calls in flight, at most ${WORKERS}); judged: the limit never at \`platform.minConcurrent\` (${MIN_CONCURRENT}), the workers busy >= ${TARGET_BUSY * 100} % of ${WORKERS} from ${BUSY_WITHIN_S} s after the slowdown began (busy workers are what ${WORKERS} workers do at the cost of the moment), the dashboard's answers/s held at ${SLOWER}× >= ${TARGET_VIEW_SHARE * 100} % of its answers/s alone on a platform ${SLOWER}× slower throughout, no error of either team.`,
    '',
  ].join('\n')
}
