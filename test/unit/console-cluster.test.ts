import { describe, expect, it } from 'vitest'
import { utcInstant } from '../../src/console/console-format.js'
import { chartData, chartSummaries, dataBuckets, replicaFigures, fitWindow, healthLine, lastBuckets, lastSum, percentSeries, replacements, sumSeries, WINDOWS, type HealthStatus, type HistoryView, type Series } from '../../src/console/console-cluster.js'

// The console's view of the whole cluster: the replicas' histories on one time axis,
// and the health banner's line.

const BUCKET_MS = 10_000
const START = Date.UTC(2026, 10, 23, 12, 0, 0)

/** A history of `length` buckets from `start`, `fill` giving each series (null elsewhere). */
function history(start: number, fill: Partial<Record<'requests' | 'hits' | 'reportReads' | 'platformCalls' | 'p50' | 'p99' | 'inFlight' | 'waiting' | 'limit' | 'floor', Series>>, length = 4, credential = 'default'): HistoryView {
  const none = (): Series => new Array<number | null>(length).fill(null)
  const s = (k: keyof typeof fill) => fill[k] ?? none()
  return {
    bucketSeconds: BUCKET_MS / 1000,
    start,
    requests: s('requests'),
    statuses: { '2xx': s('requests'), '3xx': none(), '4xx': none(), '5xx': none() },
    reportReads: s('reportReads'),
    hits: s('hits'),
    platformCalls: s('platformCalls'),
    latencyP50Ms: s('p50'),
    latencyP99Ms: s('p99'),
    credentials: [{ credential, inFlight: s('inFlight'), waiting: s('waiting'), limit: s('limit'), latencyFloorMs: s('floor') }],
    teams: [{ team: 'growth', tooManyRequests: s('requests'), errors: none() }],
  }
}

describe('the series', () => {
  it('sum bucket by bucket, null only where every replica saw nothing', () => {
    expect(sumSeries([[1, null, null], [2, 3, null]], 3)).toEqual([3, 3, null])
    expect(percentSeries([1, 0, 5, null], [4, 0, 5, 2])).toEqual([25, null, 100, null])
    expect(lastSum([1, null, 2, 3], 2)).toBe(5)
  })
})

describe('chartData', () => {
  it('puts every replica on the newest one\'s time axis and adds them up', () => {
    const a = history(START, { requests: [1, 2, 3, 4], reportReads: [1, 1, 2, 2], hits: [0, 1, 1, 2], inFlight: [1, 1, 1, 1], limit: [8, 8, 8, 9] })
    // One bucket later: its bucket i is a's bucket i + 1.
    const b = history(START + BUCKET_MS, { requests: [10, 20, 30, null], reportReads: [0, 2, 2, null], hits: [0, 2, 0, null], inFlight: [2, 2, 2, null], limit: [8, 8, 9, null] })
    const d = chartData([{ history: a }, { history: b }])
    expect(d.times).toEqual([0, 1, 2, 3].map((i) => (START + BUCKET_MS + i * BUCKET_MS) / 1000))
    expect(d.requests).toEqual([12, 23, 34, null])
    expect(d.hitRatio).toEqual([100, 75, 50, null])
    expect(d.inFlight).toEqual([3, 3, 3, null])
    // The replicas share the limit: the highest, not the sum. Two replicas read the gauges in each bucket but the newest.
    expect(d.credentials).toEqual([{ credential: 'default', inFlight: [3, 3, 3, null], waiting: [null, null, null, null], limit: [8, 8, 9, null], latencyFloorMs: [null, null, null, null], readers: [2, 2, 2, null] }])
    expect(d.teams).toEqual([{ team: 'growth', tooManyRequests: [12, 23, 34, null], errors: [null, null, null, null] }])
    expect(d.tooManyRequests).toEqual([12, 23, 34, null])
  })

  it('weighs the replicas\' p50 by their calls and takes the highest p99', () => {
    const a = history(START, { platformCalls: [3, 0], p50: [10, null], p99: [50, null] }, 2)
    const b = history(START, { platformCalls: [1, 1], p50: [30, 40], p99: [35, 45] }, 2)
    const d = chartData([{ history: a }, { history: b }])
    expect(d.platformCalls).toEqual([4, 1])
    expect(d.latencyP50Ms).toEqual([15, 40])
    expect(d.latencyP99Ms).toEqual([50, 45])
  })

  it('keeps a gone replica\'s past: its buckets count until it left, and none after', () => {
    // b died after its second bucket; a goes on. The cluster's past is the same as while b lived.
    const a = history(START, { requests: [1, 1, 1, 1] })
    const b = history(START, { requests: [5, 5, null, null] })
    expect(chartData([{ history: a }, { history: b }]).requests).toEqual([6, 6, 1, 1])
  })

  it('cuts every series and the time axis to the window asked: 5 min, 15 min, the hour', () => {
    expect(WINDOWS).toEqual({ '5m': 30, '15m': 90, '1h': 360 })
    const a = history(START, { requests: [1, 2, 3, 4], limit: [8, 8, 9, 9] })
    const d = lastBuckets(chartData([{ history: a }]), 2)
    expect(d.times).toEqual([START + 2 * BUCKET_MS, START + 3 * BUCKET_MS].map((t) => t / 1000))
    expect(d.requests).toEqual([3, 4])
    expect(d.credentials[0]?.limit).toEqual([9, 9])
    expect(d.credentials[0]?.inFlight).toEqual([null, null])
    expect(d.teams[0]?.tooManyRequests).toEqual([3, 4])
    expect(lastBuckets(chartData([{ history: a }]), 360).requests).toEqual([1, 2, 3, 4])
  })

  it('fits the default window to the data\'s age: from its oldest bucket to the newest, 5 minutes at least', () => {
    const length = 360
    const from = (first: number) => history(START, { requests: Array.from({ length }, (_, i) => (i < first ? null : 1)) }, length)
    // 25 minutes of data (151 buckets, the newest included): the last 25 minutes.
    const d = chartData([{ history: from(length - 151) }])
    expect(dataBuckets(d)).toBe(151)
    expect(fitWindow(d)).toEqual({ buckets: 151, label: 'since the data starts (25 min)', span: '25 min' })
    // Two minutes of data: 5 minutes at least.
    expect(fitWindow(chartData([{ history: from(length - 12) }]))).toEqual({ buckets: 30, label: 'since the data starts (2 min)', span: '5 min' })
    // A replica that just started: under a minute.
    expect(fitWindow(chartData([{ history: from(length - 1) }]))).toEqual({ buckets: 30, label: 'since the data starts (under a minute)', span: '5 min' })
    // The whole hour.
    expect(fitWindow(chartData([{ history: from(0) }]))).toEqual({ buckets: 360, label: 'since the data starts (the hour)', span: 'hour' })
    // No data at all: 5 minutes.
    expect(fitWindow(chartData([{ history: history(START, {}, length) }])).buckets).toBe(30)
    // A gone replica's past counts: the oldest bucket of any replica.
    expect(dataBuckets(chartData([{ history: from(length - 10) }, { history: from(length - 100) }]))).toBe(100)
  })

  it('one replica: its own series', () => {
    const a = history(START, { requests: [1, null], p50: [12.5, null] }, 2)
    const d = chartData([{ history: a }])
    expect(d.requests).toEqual([1, null])
    expect(d.latencyP50Ms).toEqual([12.5, null])
  })
})

describe('chartSummaries', () => {
  /** The UTC instant of bucket `i` of a history from START. */
  const at = (i: number) => utcInstant(START + i * BUCKET_MS)

  it('takes the platform latencies and the floor from one bucket, the newest with timed calls, and says which', () => {
    // A replica gone since its second bucket had learned a floor of 4017.9 ms; the live one has none (yet):
    // its newest p50 of 6.5 ms is never put beside the gone replica's floor of minutes before.
    const live = history(START, { platformCalls: [2, 2, 2, 2], p50: [6, 6, 7, 6.5], p99: [9, 9, 9, 8] })
    const gone = history(START, { platformCalls: [1, 1, null, null], p50: [4000, 4100, null, null], p99: [4500, 4600, null, null], floor: [4017.9, 4017.9, null, null] })
    const d = chartData([{ history: live }, { history: gone }])
    expect(chartSummaries(d, '5 min').platform).toBe(`Last 5 min: 10 platform calls; in the 10 s from ${at(3)}: latency p50 6.5 ms, p99 8 ms, floor –.`)
  })

  it('reads the floor in the bucket of the latencies, not a newer one without calls', () => {
    const a = history(START, { platformCalls: [1, 1, 0, 0], p50: [20, 30, null, null], p99: [40, 50, null, null], floor: [25, 26, 90, 91] })
    expect(chartSummaries(chartData([{ history: a }]), '5 min').platform).toBe(`Last 5 min: 2 platform calls; in the 10 s from ${at(1)}: latency p50 30 ms, p99 50 ms, floor 26 ms.`)
    // Several credentials: each floor of that bucket, named.
    const b = history(START, { floor: [null, 70, 71, 72] }, 4, 'second')
    expect(chartSummaries(chartData([{ history: a }, { history: b }]), '5 min').platform).toBe(`Last 5 min: 2 platform calls; in the 10 s from ${at(1)}: latency p50 30 ms, p99 50 ms, floor 26 ms (default), 70 ms (second).`)
    // No call timed in the window: no latency, and no floor beside it.
    expect(chartSummaries(lastBuckets(chartData([{ history: a }]), 2), '5 min').platform).toBe('Last 5 min: 0 platform calls; none timed.')
  })

  it('says the calls in flight, waiting and the limit of one reading, and when it was read', () => {
    const live = history(START, { inFlight: [1, 2, 3, null], waiting: [0, 0, 1, null], limit: [8, 8, 9, null] })
    // A credential only a gone replica used: its last reading is minutes old, and says so.
    const gone = history(START, { inFlight: [5, null, null, null], waiting: [2, null, null, null], limit: [6, null, null, null] }, 4, 'old')
    expect(chartSummaries(chartData([{ history: live }]), '5 min').inflight).toBe(`Newest reading, in the 10 s from ${at(2)}: 3 in flight of a limit of 9, 1 waiting.`)
    // Another live replica's history ends a bucket earlier (written before this bucket began, or no reading in it yet):
    // the newest bucket that both read, not a sum of one replica's calls alone.
    const a = history(START, { inFlight: [1, 1, 1, 1], waiting: [0, 0, 0, 0], limit: [8, 8, 8, 8] })
    const b = history(START, { inFlight: [2, 2, 2, null], waiting: [1, 1, 1, null], limit: [8, 8, 8, null] })
    expect(chartSummaries(chartData([{ history: a }, { history: b }]), '5 min').inflight).toBe(`Newest reading, in the 10 s from ${at(2)}: 3 in flight of a limit of 8, 1 waiting.`)
    // A credential no replica read in the window.
    expect(chartSummaries(chartData([{ history: history(START, {}) }]), '5 min').inflight).toBe('No reading in the last 5 min.')
    // A replica gone for good: the newest bucket of those left.
    const left = history(START, { inFlight: [2, 2, null, null], waiting: [1, 1, null, null], limit: [8, 8, null, null] })
    expect(chartSummaries(chartData([{ history: a }, { history: left }]), '5 min').inflight).toBe(`Newest reading, in the 10 s from ${at(3)}: 1 in flight of a limit of 8, 0 waiting.`)
    expect(chartSummaries(chartData([{ history: live }, { history: gone }]), '5 min').inflight).toBe(
      `Newest reading of each credential: default, in the 10 s from ${at(2)}: 3 in flight of a limit of 9, 1 waiting; old, in the 10 s from ${at(0)}: 5 in flight of a limit of 6, 2 waiting.`,
    )
  })

  it('says the hit ratio of the newest bucket with report reads, and when; the counts over the window', () => {
    const a = history(START, { requests: [3, 4, 5, 6], reportReads: [2, 4, 0, 0], hits: [1, 3, 0, 0] })
    const s = chartSummaries(chartData([{ history: a }]), '5 min')
    expect(s.hits).toBe(`In the 10 s from ${at(1)}, the newest with report reads: 75 % of them answered by the cache.`)
    expect(s.requests).toBe('Last 5 min: 18 requests, of which 0 4xx and 0 5xx.')
    expect(s.errors).toBe('Last 5 min: 0 4xx (18 of them 429), 0 5xx.')
    expect(chartSummaries(chartData([{ history: history(START, {}) }]), '5 min').hits).toBe('Last 5 min: no report read.')
  })
})

describe('replicaFigures', () => {
  const hour = history(START, { requests: [5, 5, 5, 5] })

  it('says a live replica\'s uptime, calls in flight and waiting as it announced them, and its requests of the last 5 minutes', () => {
    expect(replicaFigures({ uptimeSeconds: 1500, inFlight: 2, waiting: 1, degraded: [], gone: null, history: hour }, START + 3 * BUCKET_MS)).toEqual({ up: '25 min', inFlight: '2', waiting: '1', requests: '20', degraded: 'none' })
  })

  it('gives a gone replica no figure of its last announcement as if of now: it holds no call, and what it ran and lacked is of when it was last seen', () => {
    // It vanished with calls in flight and a degraded platform: that was minutes ago, not now.
    const gone = { how: 'vanished' as const, lastSeen: new Date(START).toISOString() }
    expect(replicaFigures({ uptimeSeconds: 1500, inFlight: 3, waiting: 2, degraded: ['platform:default'], gone, history: hour }, START + 3 * BUCKET_MS)).toEqual({
      up: 'ran 25 min',
      inFlight: '–',
      waiting: '–',
      requests: '20',
      degraded: 'when last seen: platform:default',
    })
    expect(replicaFigures({ uptimeSeconds: 60, inFlight: 0, waiting: 0, degraded: [], gone: { how: 'stopped', lastSeen: gone.lastSeen }, history: hour }, START + 3 * BUCKET_MS).degraded).toBe('–')
  })

  it('counts the requests of the 5 minutes to the cluster\'s now, not to the end of an hour written a minute before', () => {
    // 30 buckets of 1 request each, the newest starting at START: an hour as the replica wrote it then.
    const written = history(START - 29 * BUCKET_MS, { requests: new Array<number>(30).fill(1) }, 30)
    const live = { uptimeSeconds: 600, inFlight: 0, waiting: 0, degraded: [], gone: null, history: written }
    expect(replicaFigures(live, START + 5_000).requests).toBe('30')
    // Read 60 s later: 6 of its buckets are before the last 5 minutes.
    expect(replicaFigures(live, START + 60_000 + 5_000).requests).toBe('24')
  })
})

describe('healthLine', () => {
  const fine: HealthStatus = {
    redis: { state: 'ok', address: 'redis:6379' },
    credentials: [{ name: 'default', state: 'ok', pause: null }],
    governors: [{ credential: 'default', pausedUntil: null }],
    teams: [{ name: 'growth', suspendedUntil: null }],
  }
  const replica = (id: string, more: Partial<{ self: boolean; ready: boolean; phase: string; startedAt: string; degraded: string[]; gone: { how: 'stopped' | 'vanished'; lastSeen: string } | null }> = {}) => ({ id, self: false, ready: true, phase: 'serving', degraded: [], gone: null, ...more })

  it('says all is well in one line when nothing is wrong', () => {
    expect(healthLine(fine, { replicas: [replica('a', { self: true }), replica('b')] })).toEqual({ level: 'ok', text: 'All is well: 2 replicas ready, Redis ok, every platform token usable, no pause.' })
    expect(healthLine({ ...fine, redis: { state: 'not configured', address: 'none' } }, null).text).toMatch(/this replica \(no Redis: the others are not seen\)/)
  })

  it('names what is wrong, the worst first: Redis down, a replica not ready, a token refused', () => {
    const h = healthLine(
      { ...fine, redis: { state: 'down', address: 'redis:6379' }, credentials: [{ name: 'default', state: 'rejected', pause: null }] },
      { replicas: [replica('a', { self: true, ready: false, phase: 'stopping' })] },
    )
    expect(h.level).toBe('bad')
    expect(h.text).toBe(
      'Needs attention: Redis (redis:6379) is down: each replica serves on its own and only this replica is listed; the platform refuses the token of credential default; replica a (this one) is not ready (stopping).',
    )
  })

  // The chart's critical alert GatewayTeamSuspended fired while the banner said all is well.
  it('names a suspended team, until when and how to lift it: it needs attention', () => {
    const h = healthLine({ ...fine, teams: [{ name: 'growth', suspendedUntil: '2026-11-30T12:00:00.000Z' }, { name: 'etl', suspendedUntil: null }] }, { replicas: [replica('a', { self: true })] })
    expect(h).toEqual({
      level: 'bad',
      text: "Needs attention: team growth is suspended until 2026-11-30 12:00:00 UTC, every request with its keys refused: a request of its held a secret of the gateway's; replace that secret, then lift it (DELETE /admin/suspensions/growth).",
    })
  })

  it('a platform pause, Redis refusing writes, or another replica without a usable token, is a degradation', () => {
    const paused = healthLine({ ...fine, governors: [{ credential: 'default', pausedUntil: '2026-11-23T12:01:00Z' }] }, null)
    expect(paused).toEqual({ level: 'warn', text: 'Degraded: the platform paused credential default (429).' })
    const readonly = healthLine({ ...fine, redis: { state: 'readonly', address: 'redis:6379' } }, null)
    expect(readonly).toEqual({ level: 'warn', text: 'Degraded: Redis (redis:6379) refuses writes: the copies in it are served, no new one is stored (see redis refuses writes in the log).' })
    const other = healthLine(fine, { replicas: [replica('a', { self: true }), replica('b', { degraded: ['platformToken:default'] })] })
    expect(other.level).toBe('warn')
    expect(other.text).toMatch(/replica b cannot use the platform token \(platformToken:default\)/)
  })

  it('names a replica, this one too, whose files do not validate at a reload: it runs older teams and admin tokens', () => {
    const h = healthLine(fine, { replicas: [replica('a', { self: true, degraded: ['teams-reload'] }), replica('b', { degraded: ['teams-reload'] }), replica('c')] })
    expect(h).toEqual({
      level: 'warn',
      text: "Degraded: replica a (this one) refuses to reload its teams (its files do not validate): it runs older teams and admin tokens, a key or admin token removed since still works there (why: teamsReload.refused in this replica's GET /admin/status); replica b refuses to reload its teams (its files do not validate): it runs older teams and admin tokens, a key or admin token removed since still works there (why: teamsReload.refused in replica b's GET /admin/status).",
    })
  })

  // The banner sent the operator to a log for why; this replica's status says it (teamsReload.refused), another's its own.
  it("says why this replica refuses to reload its teams, from its status, and where another replica's why is", () => {
    const refused = { since: '2026-11-23T14:02:05.000Z', problems: ['TEAMS_FILE (/etc/gateway/teams.yaml): not valid YAML at line 4, column 1: bad indentation', 'TEAMS_FILE: teams.etl.write: must be true or false'] }
    const h = healthLine({ ...fine, teamsReload: { refused } }, { replicas: [replica('a', { self: true, degraded: ['teams-reload'] }), replica('b', { degraded: ['teams-reload'] })] })
    expect(h).toEqual({
      level: 'warn',
      text:
        'Degraded: replica a (this one) refuses to reload its teams since 2026-11-23 14:02:05 UTC, its files do not validate (TEAMS_FILE (/etc/gateway/teams.yaml): not valid YAML at line 4, column 1: bad indentation | TEAMS_FILE: teams.etl.write: must be true or false): it runs older teams and admin tokens, a key or admin token removed since still works there; ' +
        "replica b refuses to reload its teams (its files do not validate): it runs older teams and admin tokens, a key or admin token removed since still works there (why: teamsReload.refused in replica b's GET /admin/status).",
    })
    const many = { since: refused.since, problems: ['p1', 'p2', 'p3', 'p4', 'p5'] }
    expect(healthLine({ ...fine, teamsReload: { refused: many } }, { replicas: [replica('a', { self: true, degraded: ['teams-reload'] })] }).text).toBe(
      'Degraded: replica a (this one) refuses to reload its teams since 2026-11-23 14:02:05 UTC, its files do not validate (p1 | p2 | p3 | and 2 more: teamsReload.refused in GET /admin/status): it runs older teams and admin tokens, a key or admin token removed since still works there.',
    )
  })

  it('names a platform whose latest calls fail, on this replica or another, once per credential: it needs attention', () => {
    const down = healthLine(fine, { replicas: [replica('a', { self: true, degraded: ['platform:default'] }), replica('b', { degraded: ['platform:default', 'platform:agency'] }), replica('c')] })
    expect(down).toEqual({
      level: 'bad',
      text: 'Needs attention: the platform fails the calls of credential agency (no answer, or a 5xx, to its latest calls on replica b); the platform fails the calls of credential default (no answer, or a 5xx, to its latest calls on replicas a, b).',
    })
  })

  it('says a replica went without a clean stop and none replaced it, and when it leaves the list; a clean stop is no warning', () => {
    const vanished = healthLine(fine, { replicas: [replica('a', { self: true }), replica('b', { ready: false, gone: { how: 'vanished', lastSeen: '2026-11-23T14:02:05.000Z' } })] })
    expect(vanished).toEqual({
      level: 'warn',
      text: 'Degraded: replica b stopped announcing itself at 2026-11-23 14:02:05 UTC without a clean stop (crashed, killed or cut off from Redis), and no replica has started since to replace it; listed as gone until 2026-11-23 15:02:05 UTC.',
    })
    const stopped = healthLine(fine, { replicas: [replica('a', { self: true }), replica('c', { ready: false, gone: { how: 'stopped', lastSeen: '2026-11-23T14:02:05.000Z' } })] })
    expect(stopped).toEqual({ level: 'ok', text: 'All is well: 1 replica ready (1 stopped cleanly in the last hour), Redis ok, every platform token usable, no pause.' })
  })

  const crashed = (id: string, lastSeen: string) => replica(id, { ready: false, startedAt: '2026-11-23T13:00:00.000Z', gone: { how: 'vanished', lastSeen } })

  it('reads a crashed replica as replaced once a replica that started after it is ready: all is well, saying so', () => {
    const replaced = healthLine(fine, {
      replicas: [replica('a', { self: true, startedAt: '2026-11-23T13:00:00.000Z' }), replica('c', { startedAt: '2026-11-23T14:02:30.000Z' }), crashed('b', '2026-11-23T14:02:05.000Z')],
    })
    expect(replaced).toEqual({
      level: 'ok',
      text: 'All is well: 2 replicas ready (replica b crashed (no clean stop, last seen 2026-11-23 14:02:05 UTC) and was replaced by c), Redis ok, every platform token usable, no pause.',
    })
  })

  it('a replica that started before the crash, or is not ready yet, replaces nothing', () => {
    const before = healthLine(fine, { replicas: [replica('a', { self: true, startedAt: '2026-11-23T13:00:00.000Z' }), replica('c', { startedAt: '2026-11-23T14:01:00.000Z' }), crashed('b', '2026-11-23T14:02:05.000Z')] })
    expect(before.level).toBe('warn')
    expect(before.text).toMatch(/no replica has started since to replace it/)
    const starting = healthLine(fine, { replicas: [replica('a', { self: true, startedAt: '2026-11-23T13:00:00.000Z' }), replica('c', { ready: false, phase: 'starting', startedAt: '2026-11-23T14:02:30.000Z' }), crashed('b', '2026-11-23T14:02:05.000Z')] })
    expect(starting.level).toBe('bad')
    expect(starting.text).toMatch(/replica c is not ready \(starting\); replica b stopped announcing itself/)
  })

  it('each replacement stands for one crashed replica, the earliest crash first', () => {
    const listed = [
      replica('a', { self: true, startedAt: '2026-11-23T13:00:00.000Z' }),
      replica('d', { startedAt: '2026-11-23T14:03:00.000Z' }),
      crashed('b', '2026-11-23T14:02:05.000Z'),
      crashed('c', '2026-11-23T14:02:50.000Z'),
    ]
    expect(replacements(listed)).toEqual(new Map([['b', 'd']]))
    const h = healthLine(fine, { replicas: listed })
    expect(h.level).toBe('warn')
    expect(h.text).toMatch(/^Degraded: replica c stopped announcing itself at 2026-11-23 14:02:50 UTC/)
    expect(h.text).not.toMatch(/replica b stopped/)
    // A second new replica replaces the second crash too.
    expect(replacements([...listed, replica('e', { startedAt: '2026-11-23T14:03:10.000Z' })])).toEqual(new Map([['b', 'd'], ['c', 'e']]))
  })
})
