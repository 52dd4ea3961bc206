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
// and no answer has yet said the platform has room (docs/decisions/long-calls.md, "A
// fresh gateway's first second").

import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { connect } from 'node:net'
import { closedLoop } from '../lib/load.mjs'
import { http } from '../lib/http.mjs'
import { log, stopProcess } from '../lib/processes.mjs'
import { fmtInt, fmtMs, markdownTable, percentile } from '../lib/stats.mjs'

export const id = 'two-teams'
export const title = 'Two teams on one credential: a dashboard team beside a team of year-long reports, of unread answers, of failing reports, of throttled routes'

const WORKERS = 16
const LATENCY_MS = 40
const PER_DAY_MS = 12
const DASHBOARD_CALLERS = 8
const TARGET_SHARE = 0.7
/** In the 'warm' order, how long the dashboard works alone before the other team starts. */
const WARM_SECONDS = 10
/**
 * In the 'cold' order, the dashboard's first window of the learned limit (DEFAULT_WINDOW_MS):
 * its samples are reported, not judged, as a gateway that has not yet had an answer of the
 * dashboard's cannot know the platform has room for it.
 */
const FIRST_WINDOW_MS = 1000
const CAMPAIGNS = '/api/v1/report/campaigns/get'
const CREATIVES = '/api/v1/report/creatives/get'
const PLACEMENTS = '/api/v1/report/adPlacementPositions/get'

let nextDay = 0
/** A report over `days` days never asked before, on `path`. */
function fresh(path, days) {
  const day = (offset) => new Date(Date.UTC(1990, 0, 1 + offset)).toISOString().slice(0, 10)
  const first = nextDay
  nextDay += 1
  return `${path}?advertiserId=${100 + (first % 4)}&byDate=1&dateFrom=${day(first)}&dateTo=${day(first + days - 1)}`
}

/** The attacks: what the other team does while the dashboard team works. */
const ATTACKS = [
  {
    id: 'year-long',
    label: 'asks year-long reports (24 callers)',
    start: async ({ gw, key }) => closedLoop({ origins: [gw.url], key, callers: 24, nextPath: () => fresh(CAMPAIGNS, 365), maxSeconds: 120 }),
  },
  {
    id: 'unread',
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
  {
    id: 'failing',
    label: 'asks reports the platform answers 500 on two routes (12 callers)',
    start: async ({ gw, key, sandbox }) => {
      for (const path of [CREATIVES, PLACEMENTS]) await sandbox.setRouteFailure(path, { kind: 'status', status: 500 })
      let n = 0
      return closedLoop({ origins: [gw.url], key, callers: 12, nextPath: () => fresh(n++ % 2 ? CREATIVES : PLACEMENTS, 60), maxSeconds: 120 })
    },
  },
  {
    id: 'throttled',
    label: 'is throttled (429) on two routes (12 callers)',
    start: async ({ gw, key, sandbox }) => {
      for (const path of [CREATIVES, PLACEMENTS]) await sandbox.setRouteFailure(path, { kind: 'status', status: 429, headers: { 'retry-after': '1' } })
      let n = 0
      return closedLoop({ origins: [gw.url], key, callers: 12, nextPath: () => fresh(n++ % 2 ? CREATIVES : PLACEMENTS, 60), maxSeconds: 120 })
    },
  },
]

/**
 * Every 250 ms: the calls waiting at the gateway (those of a team it holds back on purpose,
 * paused for the 429s it draws, apart), the platform's busy workers, and the gateway's
 * calls in flight with the seats it owes a team that waits for nothing. The status gives
 * each team's share, not the most it asked within the linger: the seats owed are taken as
 * each such team's share less what it holds, at most what the governor owes it.
 */
function sampler(gw, sandbox, adminToken) {
  const samples = []
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      try {
        const [status, load] = await Promise.all([http('GET', `${gw.admin}/admin/status`, { headers: { authorization: `Bearer ${adminToken}` } }), sandbox.concurrency()])
        const governor = status.json().governors.find((g) => g.credential === 'default')
        const paused = new Set(governor.pauses.map((p) => p.team).filter((team) => team !== null))
        const held = (t) => paused.has(t.team)
        const waiting = (teams) => teams.reduce((sum, t) => sum + t.waiting, 0)
        const owed = governor.teams.filter((t) => t.waiting === 0).reduce((sum, t) => sum + Math.max(0, t.share - t.inFlight), 0)
        samples.push({ at: performance.now(), waiting: waiting(governor.teams.filter((t) => !held(t))), held: waiting(governor.teams.filter(held)), busy: load.inFlight, sent: governor.inFlight + owed })
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
 * The dashboard team's answers over `seconds`, beside what `attack` starts (none: alone),
 * in one of two orders. 'cold': on a fresh gateway the other team starts first, and the
 * dashboard is judged from its arrival, once the other team's load has run 5 s. 'warm':
 * the dashboard works alone for WARM_SECONDS (the gateway learns the platform, as one in
 * service has), then the other team starts, and the dashboard is judged from that moment.
 */
async function phase({ fixture, gw, seconds, attack, order }) {
  const { sandbox, teamKey, teamBKey, adminToken } = fixture
  const dashboard = () => closedLoop({ origins: [gw.url], key: teamBKey, callers: DASHBOARD_CALLERS, nextPath: () => fresh(CAMPAIGNS, 7), maxSeconds: seconds + WARM_SECONDS + 5 })
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
  await sleep(seconds * 1000)
  const ended = performance.now()
  const samples = await stopSampler()
  const answers = (await stopDashboard()).filter((a) => a.at >= started && a.at <= ended)
  const others = (await stopAttack()).filter((a) => a.at >= started && a.at <= ended && a.status === 200)
  await sandbox.clearRouteFailures()
  const ok = answers.filter((a) => a.status === 200)
  const sorted = ok.map((a) => a.ms).sort((x, y) => x - y)
  const idle = samples.filter((s) => s.waiting > 0 && s.busy < WORKERS)
  // A call on its way to the platform, or its answer on its way back, is in flight at the
  // gateway and not yet (or no longer) at a worker, and a seat owed to a team that asked
  // within the linger is lent to short calls only: the gateway left a worker idle only with
  // fewer calls in flight and seats owed than the platform has workers.
  const idleWhileWaiting = idle.filter((s) => s.sent < WORKERS)
  const firstWindow = order === 'cold' ? idleWhileWaiting.filter((s) => s.at - started < FIRST_WINDOW_MS).length : 0
  const heldBack = samples.filter((s) => s.held > 0).length
  return {
    rate: ok.length / ((ended - started) / 1000),
    otherRate: attack?.id === 'unread' ? null : others.length / ((ended - started) / 1000),
    p95: percentile(sorted, 95),
    errors: answers.length - ok.length,
    busy: samples.length ? samples.reduce((sum, s) => sum + s.busy, 0) / samples.length : 0,
    idleWhileWaiting: idleWhileWaiting.length,
    firstWindow,
    idleInTransit: idle.length - idleWhileWaiting.length,
    heldBack,
    samples: samples.length,
  }
}

export async function run({ fixture, quick }) {
  const { sandbox, startGateway } = fixture
  const seconds = quick ? 10 : 30
  await sandbox.setLatency(LATENCY_MS)
  await sandbox.control('POST', '/capacity', { workers: WORKERS, perDayMs: PER_DAY_MS })
  const rows = { warm: [], cold: [] }
  try {
    for (const order of ['warm', 'cold']) {
      let alone = null
      for (const attack of [null, ...ATTACKS]) {
        // A gateway of its own per row: nothing learned from one carries into the next.
        const gw = await startGateway(`gw-two-teams-${order}-${attack?.id ?? 'alone'}`, { config: { teams: { bench: { rateLimit: { max: 600, window: '1m' } } }, platform: { maxConcurrent: 64, queue: 200 } } })
        try {
          const r = await phase({ fixture, gw, seconds, attack, order })
          alone ??= r
          const share = r.rate / alone.rate
          const met = !attack || (share >= TARGET_SHARE && r.errors === 0 && r.idleWhileWaiting - r.firstWindow === 0)
          rows[order].push([
            attack ? attack.label : 'nothing: the dashboard team alone',
            fmtInt(r.rate),
            attack ? `${Math.round(share * 100)} %` : '100 %',
            fmtMs(r.p95),
            String(r.errors),
            attack && r.otherRate !== null ? r.otherRate.toFixed(1) : '–',
            r.busy.toFixed(1),
            `${r.idleWhileWaiting} of ${r.samples}`,
            order === 'cold' ? String(r.firstWindow) : '–',
            `${r.idleInTransit} of ${r.samples}`,
            `${r.heldBack} of ${r.samples}`,
            attack ? (met ? 'met' : 'MISSED') : '',
          ])
          log(`two-teams ${order} ${attack?.id ?? 'alone'}: dashboard ${fmtInt(r.rate)}/s (${Math.round(share * 100)} %), p95 ${fmtMs(r.p95)}, ${r.errors} errors, the other team ${r.otherRate === null ? '–' : r.otherRate.toFixed(1)}/s, platform ${r.busy.toFixed(1)} of ${WORKERS} busy, idle while waiting ${r.idleWhileWaiting}/${r.samples} (${r.firstWindow} in the first second)`)
        } finally {
          await stopProcess(gw)
        }
      }
    }
  } finally {
    await sandbox.control('POST', '/capacity', {})
    await sandbox.setLatency(0)
  }
  const header = ['what the other team does', 'dashboard answers/s', 'of alone', 'dashboard p95', 'dashboard errors', "the other team's answers/s (200)", 'platform workers busy (mean)', 'samples with calls waiting, a worker idle and fewer calls in flight (seats owed to a team that waits for nothing counted) than workers', "of those, in the dashboard's first second on a fresh gateway (not judged)", 'samples with calls waiting and a worker idle, a call in transit or a seat owed (as many in flight or owed as workers)', 'samples with a team held back (paused)', 'target']
  return [
    `The dashboard in service (it works alone ${WARM_SECONDS} s, then the other team starts; judged from that moment):`,
    '',
    markdownTable(header, rows.warm),
    '',
    `On a fresh gateway (the other team starts first; the dashboard arrives 5 s later and is judged from its arrival; its first ${FIRST_WINDOW_MS / 1000} s of samples reported, not judged):`,
    '',
    markdownTable(header, rows.cold),
    '',
    `The platform: the sandbox with ${WORKERS} workers (a call waits for a free one), ${LATENCY_MS} ms plus ${PER_DAY_MS} ms per day of a report's range (a week: about ${LATENCY_MS + 7 * PER_DAY_MS} ms, a year: about ${((LATENCY_MS + 365 * PER_DAY_MS) / 1000).toFixed(1)} s). The dashboard team: ${DASHBOARD_CALLERS} callers in a closed loop, each asking a week-long report never asked before; ${seconds} s judged per row. The other team: one read-only key with a rate limit of 600 a minute. One gateway replica per row, every governor setting at its default. Targets: the dashboard keeps >= ${TARGET_SHARE * 100} % of its answers/s alone and no error; the samples (every 250 ms, from \`GET /admin/status\`) say whether calls waited at the gateway while a worker of the platform was free and the gateway had fewer calls in flight, seats owed to a team that waits for nothing counted (each such team's \`share\` less its \`inFlight\`: the status gives no peak, so at most what the governor owes it), than the platform has workers (with as many, a call is on its way to a worker, its answer on its way back, or a seat is kept for a team that asked within the linger, lent to short calls only: counted in a column of their own), the calls of a team held back on purpose (paused for its 429s) apart: those are counted in a column of their own. On a fresh gateway, the samples of the dashboard's first ${FIRST_WINDOW_MS / 1000} s (a window of the learned limit) are counted and not judged: the limit starts at \`platform.initialConcurrent\` (8), and until an answer of the dashboard's comes back at its floor nothing says the platform has room for more; an operator who knows the platform's workers sets that start, and with Redis a replica adopts the limit the others learned.`,
    '',
  ].join('\n')
}
