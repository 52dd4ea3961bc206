// What the console shows of the whole cluster, worked out from GET /admin/cluster and
// GET /admin/status: plain functions, no DOM (tested like any other module, loaded by
// the page as they are). The shapes are those of src/observe/history.ts and replicas.ts.
import { plural, span, utcInstant } from './console-format.js'

export type Series = (number | null)[]

export interface HistoryView {
  bucketSeconds: number
  /** Epoch ms of the oldest bucket's start. */
  start: number
  requests: Series
  statuses: Record<'2xx' | '3xx' | '4xx' | '5xx', Series>
  reportReads: Series
  hits: Series
  platformCalls: Series
  latencyP50Ms: Series
  latencyP99Ms: Series
  credentials: { credential: string; inFlight: Series; waiting: Series; limit: Series; latencyFloorMs: Series }[]
  teams: { team: string; tooManyRequests: Series; errors: Series }[]
}

export interface Replica {
  id: string
  self: boolean
  version: string
  commit: string
  uptimeSeconds: number
  /** When it started (absent in an older replica's announcement). */
  startedAt?: string
  phase: string
  ready: boolean
  /** The log level in force (absent in an older replica's announcement). */
  logLevel?: string
  inFlight: number
  waiting: number
  degraded: string[]
  /** null: live; else how it left and its last announcement (listed for an hour). */
  gone?: { how: 'stopped' | 'vanished'; lastSeen: string } | null
  history: HistoryView
}

export interface Cluster {
  at: string
  redis: 'ok' | 'down' | 'not configured'
  complete: boolean
  note: string | null
  replicas: Replica[]
}

/** The series the charts draw, on one time axis: each replica's buckets summed where they add up. */
export interface Charted {
  /** Bucket starts, epoch seconds (uPlot's x axis). */
  times: number[]
  requests: Series
  clientErrors: Series
  serverErrors: Series
  tooManyRequests: Series
  /** Hits per report read, in percent; null where no report was read. */
  hitRatio: Series
  platformCalls: Series
  /** One replica: its own. Several: the calls-weighted mean of their p50, the highest of their p99. */
  latencyP50Ms: Series
  latencyP99Ms: Series
  inFlight: Series
  waiting: Series
  /**
   * Per credential: its calls in flight and waiting (summed over the replicas), the limit
   * in force and the latency floor (the replicas share both; the highest is shown), and
   * `readers`, how many replicas read its gauges in each bucket.
   */
  credentials: { credential: string; inFlight: Series; waiting: Series; limit: Series; latencyFloorMs: Series; readers: Series }[]
  teams: { team: string; tooManyRequests: Series; errors: Series }[]
}

/** `series` read on a time axis of `length` buckets starting `shift` buckets after its own start. */
function shifted(series: Series, shift: number, length: number): Series {
  const out: Series = new Array<number | null>(length).fill(null)
  for (let i = 0; i < length; i++) {
    const j = i + shift
    if (j >= 0 && j < series.length) out[i] = series[j] ?? null
  }
  return out
}

/** Bucket by bucket: `fold` of the values present; null where none is. */
function combine(all: Series[], length: number, fold: (values: number[]) => number): Series {
  const out: Series = []
  for (let i = 0; i < length; i++) {
    const values: number[] = []
    for (const s of all) {
      const v = s[i]
      if (v !== null && v !== undefined) values.push(v)
    }
    out.push(values.length === 0 ? null : fold(values))
  }
  return out
}

const total = (values: number[]) => values.reduce((a, b) => a + b, 0)
const highest = (values: number[]) => Math.max(...values)

/** Element-wise sum of series of one length; null where every one is null. */
export function sumSeries(all: Series[], length: number): Series {
  return combine(all, length, total)
}

/** `part` over `whole` per bucket, in percent (one decimal); null where `whole` is 0 or unknown. */
export function percentSeries(part: Series, whole: Series): Series {
  return whole.map((w, i) => {
    const p = part[i]
    return w === null || w === 0 || p === null || p === undefined ? null : Math.round((p / w) * 1000) / 10
  })
}

/** The histories of `replicas` on the time axis of the newest one. */
export function chartData(replicas: readonly Pick<Replica, 'history'>[]): Charted {
  const histories = replicas.map((r) => r.history)
  const base = histories.reduce((a, b) => (b.start > a.start ? b : a), histories[0] as HistoryView)
  const bucketMs = base.bucketSeconds * 1000
  const length = base.requests.length
  const on = (h: HistoryView, s: Series) => shifted(s, Math.round((base.start - h.start) / bucketMs), length)
  const sum = (pick: (h: HistoryView) => Series) => sumSeries(histories.map((h) => on(h, pick(h))), length)
  const calls = histories.map((h) => on(h, h.platformCalls))
  const p50s = histories.map((h) => on(h, h.latencyP50Ms))
  const credentials = [...new Set(histories.flatMap((h) => h.credentials.map((c) => c.credential)))].sort()
  const teams = [...new Set(histories.flatMap((h) => h.teams.map((t) => t.team)))].sort()
  const ofCredential = (name: string, pick: (c: HistoryView['credentials'][number]) => Series) =>
    histories.flatMap((h) => h.credentials.filter((c) => c.credential === name).map((c) => on(h, pick(c))))
  const ofTeam = (name: string, pick: (t: HistoryView['teams'][number]) => Series) =>
    sumSeries(histories.flatMap((h) => h.teams.filter((t) => t.team === name).map((t) => on(h, pick(t)))), length)
  const teamSeries = teams.map((team) => ({ team, tooManyRequests: ofTeam(team, (t) => t.tooManyRequests), errors: ofTeam(team, (t) => t.errors) }))
  const hits = sum((h) => h.hits)
  const reads = sum((h) => h.reportReads)
  const times: number[] = []
  for (let i = 0; i < length; i++) times.push((base.start + i * bucketMs) / 1000)
  return {
    times,
    requests: sum((h) => h.requests),
    clientErrors: sum((h) => h.statuses['4xx']),
    serverErrors: sum((h) => h.statuses['5xx']),
    tooManyRequests: sumSeries(teamSeries.map((t) => t.tooManyRequests), length),
    hitRatio: percentSeries(hits, reads),
    platformCalls: sumSeries(calls, length),
    latencyP50Ms: weightedMean(p50s, calls, length),
    latencyP99Ms: combine(histories.map((h) => on(h, h.latencyP99Ms)), length, highest),
    inFlight: sumSeries(credentials.flatMap((c) => ofCredential(c, (s) => s.inFlight)), length),
    waiting: sumSeries(credentials.flatMap((c) => ofCredential(c, (s) => s.waiting)), length),
    credentials: credentials.map((credential) => ({
      credential,
      inFlight: sumSeries(ofCredential(credential, (s) => s.inFlight), length),
      waiting: sumSeries(ofCredential(credential, (s) => s.waiting), length),
      limit: combine(ofCredential(credential, (s) => s.limit), length, highest),
      latencyFloorMs: combine(ofCredential(credential, (s) => s.latencyFloorMs), length, highest),
      readers: combine(ofCredential(credential, (s) => s.inFlight), length, (values) => values.length),
    })),
    teams: teamSeries,
  }
}

/** Per bucket, the mean of `values` weighted by `weights` (a value without weight counts 1). */
function weightedMean(values: Series[], weights: Series[], length: number): Series {
  const out: Series = []
  for (let i = 0; i < length; i++) {
    let sum = 0
    let weight = 0
    values.forEach((s, k) => {
      const v = s[i]
      if (v === null || v === undefined) return
      const w = Math.max(1, weights[k]?.[i] ?? 1)
      sum += v * w
      weight += w
    })
    out.push(weight === 0 ? null : Math.round((sum / weight) * 10) / 10)
  }
  return out
}

/** The windows the charts offer, as buckets of 10 s: 5 min, 15 min, the hour. */
export const WINDOWS = { '5m': 30, '15m': 90, '1h': 360 } as const
export type ChartWindow = keyof typeof WINDOWS

/** `d` over its last `buckets` buckets only: every series and the time axis cut alike. */
export function lastBuckets(d: Charted, buckets: number): Charted {
  const cut = (s: Series) => s.slice(-buckets)
  return {
    times: d.times.slice(-buckets),
    requests: cut(d.requests),
    clientErrors: cut(d.clientErrors),
    serverErrors: cut(d.serverErrors),
    tooManyRequests: cut(d.tooManyRequests),
    hitRatio: cut(d.hitRatio),
    platformCalls: cut(d.platformCalls),
    latencyP50Ms: cut(d.latencyP50Ms),
    latencyP99Ms: cut(d.latencyP99Ms),
    inFlight: cut(d.inFlight),
    waiting: cut(d.waiting),
    credentials: d.credentials.map((c) => ({ credential: c.credential, inFlight: cut(c.inFlight), waiting: cut(c.waiting), limit: cut(c.limit), latencyFloorMs: cut(c.latencyFloorMs), readers: cut(c.readers) })),
    teams: d.teams.map((t) => ({ team: t.team, tooManyRequests: cut(t.tooManyRequests), errors: cut(t.errors) })),
  }
}

/** The buckets from the oldest one any replica saw (a request count, 0 included) to the newest: the data's age in buckets. */
export function dataBuckets(d: Pick<Charted, 'requests'>): number {
  const first = d.requests.findIndex((v) => v !== null && v !== undefined)
  return first === -1 ? 0 : d.requests.length - first
}

/** The default window: the data's age (5 minutes at least, the hour at most), what the choice says and what the summaries call it. */
export interface FittedWindow {
  buckets: number
  /** The choice's words: `since the data starts (25 min)`. */
  label: string
  /** The window in the summaries' words (`Last 25 min: …`). */
  span: string
}

export function fitWindow(d: Pick<Charted, 'requests' | 'times'>): FittedWindow {
  const bucketSeconds = d.times.length > 1 ? (d.times[1] as number) - (d.times[0] as number) : 10
  const data = dataBuckets(d)
  const buckets = Math.min(d.times.length, Math.max(WINDOWS['5m'], data))
  const minutes = (n: number) => Math.round((n * bucketSeconds) / 60)
  const whole = data >= WINDOWS['1h']
  const age = whole ? 'the hour' : minutes(data) === 0 ? 'under a minute' : `${minutes(data)} min`
  return { buckets, label: `since the data starts (${age})`, span: buckets >= WINDOWS['1h'] ? 'hour' : `${minutes(buckets)} min` }
}

/** The sum of the last `buckets` values of a series (nulls count 0). */
export function lastSum(series: Series, buckets: number): number {
  return series.slice(-buckets).reduce<number>((a, b) => a + (b ?? 0), 0)
}

/** What each chart says in words, below it and for a screen reader. */
export interface ChartSummaries {
  requests: string
  errors: string
  hits: string
  platform: string
  inflight: string
}

/** The index of the newest bucket of `series` with a value; -1 when none has one. */
export function newestBucket(series: Series): number {
  for (let i = series.length - 1; i >= 0; i--) if (series[i] !== null && series[i] !== undefined) return i
  return -1
}

/**
 * The newest bucket of a credential's gauges that every replica read which read them the
 * bucket before (by `readers`), -1 when none read them: a live replica whose history ends a
 * bucket earlier (written just before this bucket began, or no reading in it yet) is not
 * left out of a sum; a replica gone for good is, from the bucket after its last.
 */
export function settledBucket(readers: Series): number {
  for (let i = readers.length - 1; i >= 0; i--) {
    const now = readers[i] ?? 0
    if (now > 0 && (i === 0 || now >= (readers[i - 1] ?? 0))) return i
  }
  return -1
}

const capital = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)
const say = (v: number | null | undefined, unit = '') => (v === null || v === undefined ? '–' : `${v}${unit}`)

/**
 * The summaries of the charts of `d`, the buckets of the window `span` names (`5 min`).
 * Counts are sums over the window. Every other figure is a bucket's, and the figures of
 * one sentence are of one bucket, whose time it says: a replica that has gone, or a
 * bucket without calls, never puts a reading of minutes before beside a fresh one.
 */
export function chartSummaries(d: Charted, span: string): ChartSummaries {
  const n = (series: Series) => lastSum(series, series.length)
  const several = d.credentials.length > 1
  const bucket = (i: number) => `in the 10 s from ${utcInstant((d.times[i] as number) * 1000)}`
  const read = newestBucket(d.hitRatio)
  const timed = newestBucket(d.latencyP50Ms)
  const floors = d.credentials.map((c) => `${say(c.latencyFloorMs[timed], ' ms')}${several ? ` (${c.credential})` : ''}`).join(', ') || '–'
  const gauges = d.credentials.map((c) => {
    const i = settledBucket(c.readers)
    return i === -1
      ? { name: c.credential, read: false, said: `no reading in the last ${span}` }
      : { name: c.credential, read: true, said: `${bucket(i)}: ${say(c.inFlight[i])} in flight of a limit of ${say(c.limit[i])}, ${say(c.waiting[i])} waiting` }
  })
  const only = gauges[0]
  return {
    requests: `Last ${span}: ${plural(n(d.requests), 'request')}, of which ${n(d.clientErrors)} 4xx and ${n(d.serverErrors)} 5xx.`,
    errors: `Last ${span}: ${n(d.clientErrors)} 4xx (${n(d.tooManyRequests)} of them 429), ${n(d.serverErrors)} 5xx.`,
    hits: read === -1 ? `Last ${span}: no report read.` : `${capital(bucket(read))}, the newest with report reads: ${say(d.hitRatio[read], ' %')} of them answered by the cache.`,
    platform: `Last ${span}: ${plural(n(d.platformCalls), 'platform call')}; ${timed === -1 ? 'none timed' : `${bucket(timed)}: latency p50 ${say(d.latencyP50Ms[timed], ' ms')}, p99 ${say(d.latencyP99Ms[timed], ' ms')}, floor ${floors}`}.`,
    inflight: !only
      ? 'No credential.'
      : several
        ? `Newest reading of each credential: ${gauges.map((g) => `${g.name}, ${g.said}`).join('; ')}.`
        : only.read
          ? `Newest reading, ${only.said}.`
          : `${capital(only.said)}.`,
  }
}

/** The replicas table's window of requests: the last 5 minutes. */
const RECENT_MS = 300_000

/** What the replicas table says of a replica, column by column. */
export interface ReplicaFigures {
  up: string
  inFlight: string
  waiting: string
  requests: string
  degraded: string
}

/**
 * A replica's row of the replicas table. A gone replica's announcement is of when it was
 * last seen: it holds no call now (–), and its uptime and what it served without are
 * said as of then, never beside the live replicas' as if they were now. The requests are
 * those of the buckets that start in the 5 minutes to `now` (the cluster's, epoch ms): a
 * history written a minute before (a replica that did not answer in time) counts no
 * bucket older than that, and a gone one's ends where it left.
 */
export function replicaFigures(r: Pick<Replica, 'uptimeSeconds' | 'inFlight' | 'waiting' | 'degraded' | 'gone' | 'history'>, now: number): ReplicaFigures {
  const degraded = r.degraded.length === 0 ? 'none' : r.degraded.join(', ')
  const h = r.history
  const since = now - RECENT_MS
  const requests = String(h.requests.reduce<number>((sum, v, i) => (h.start + i * h.bucketSeconds * 1000 > since ? sum + (v ?? 0) : sum), 0))
  if (r.gone) return { up: `ran ${span(r.uptimeSeconds)}`, inFlight: '–', waiting: '–', requests, degraded: r.degraded.length === 0 ? '–' : `when last seen: ${degraded}` }
  return { up: span(r.uptimeSeconds), inFlight: String(r.inFlight), waiting: String(r.waiting), requests, degraded }
}

/** How long a gone replica stays listed (observe/replicas.ts, GONE_KEEP_MS). */
const GONE_LISTED_MS = 3_600_000

/** `iso` (plus `later` ms) in UTC with its date, `2026-11-23 14:02:05 UTC`. */
function instant(iso: string, later = 0): string {
  return utcInstant(Date.parse(iso) + later)
}

type Listed = Pick<Replica, 'id' | 'self' | 'ready' | 'phase' | 'degraded' | 'gone' | 'startedAt'>

/**
 * The replicas that replace those that stopped announcing themselves without a clean stop:
 * a live, ready replica that started after a crashed one's last announcement replaces it
 * (a Deployment's new pod, a restarted container), each replacing one, the earliest crash
 * first and by the earliest start. Crashed replica id → its replacement's id.
 */
export function replacements(replicas: readonly Listed[]): Map<string, string> {
  const crashed = replicas.filter((r) => r.gone?.how === 'vanished').sort((a, b) => Date.parse(a.gone?.lastSeen ?? '') - Date.parse(b.gone?.lastSeen ?? ''))
  const fresh = replicas
    .filter((r) => !r.gone && r.ready && r.startedAt !== undefined && Number.isFinite(Date.parse(r.startedAt)))
    .sort((a, b) => Date.parse(a.startedAt as string) - Date.parse(b.startedAt as string))
  const taken = new Set<string>()
  const out = new Map<string, string>()
  for (const c of crashed) {
    const lastSeen = Date.parse(c.gone?.lastSeen ?? '')
    const by = fresh.find((r) => !taken.has(r.id) && Date.parse(r.startedAt as string) >= lastSeen)
    if (!by) continue
    taken.add(by.id)
    out.set(c.id, by.id)
  }
  return out
}

/** What the status call says that the banner reads. */
export interface HealthStatus {
  redis: { state: string; address: string }
  credentials: { name: string; state: string; pause: { scope: string; until: string } | null }[]
  governors: { credential: string; pausedUntil: string | null }[]
  /** `suspendedUntil` absent from a replica before it: not suspended. */
  teams: { name: string; suspendedUntil?: string | null }[]
  /** `refused`: this replica's refused reload of its files, absent from a replica before it (null: none). */
  teamsReload?: { refused?: { since: string; problems: string[] } | null }
}

export interface Health {
  level: 'ok' | 'warn' | 'bad'
  text: string
}

/** The problems of a refused reload the banner names; past them it says how many more and where they are. */
const REFUSAL_PROBLEMS = 3

/**
 * Why a replica refuses to reload its teams: this replica's status carries its refusal
 * (`teamsReload.refused`), so the banner says its problems; another replica's are in that
 * replica's own status, which the banner names.
 */
function reloadRefusal(r: Listed, refused: { since: string; problems: string[] } | null | undefined): string {
  const stays = 'it runs older teams and admin tokens, a key or admin token removed since still works there'
  const name = `replica ${r.id}${r.self ? ' (this one)' : ''}`
  if (!r.self || !refused) return `${name} refuses to reload its teams (its files do not validate): ${stays} (why: teamsReload.refused in ${r.self ? "this replica's" : `replica ${r.id}'s`} GET /admin/status)`
  const shown = refused.problems.slice(0, REFUSAL_PROBLEMS)
  const more = refused.problems.length - shown.length
  const problems = [...shown, ...(more > 0 ? [`and ${more} more: teamsReload.refused in GET /admin/status`] : [])].join(' | ')
  return `${name} refuses to reload its teams since ${instant(refused.since)}, its files do not validate (${problems}): ${stays}`
}

/** A replica's degraded entry of a credential whose latest platform calls fail there: `platform:<credential>`. */
const FAILING = 'platform:'

/**
 * The health banner: in one line, what is wrong (the worst first), or that all is well.
 * `cluster` is null when it could not be read.
 */
export function healthLine(status: HealthStatus, cluster: { replicas: Listed[] } | null): Health {
  const bad: string[] = []
  const warn: string[] = []
  if (status.redis.state === 'down') bad.push(`Redis (${status.redis.address}) is down: each replica serves on its own and only this replica is listed`)
  if (status.redis.state === 'readonly') warn.push(`Redis (${status.redis.address}) refuses writes: the copies in it are served, no new one is stored (see redis refuses writes in the log)`)
  for (const c of status.credentials) {
    if (c.state === 'rejected') bad.push(`the platform refuses the token of credential ${c.name}`)
    if (c.state === 'missing') bad.push(`credential ${c.name} has no token`)
  }
  // A suspended team is the chart's critical alert (GatewayTeamSuspended): the team holds a secret, or knew it among its guesses.
  for (const t of status.teams) {
    if (t.suspendedUntil)
      bad.push(`team ${t.name} is suspended until ${instant(t.suspendedUntil)}, every request with its keys refused: a request of its held a secret of the gateway's; replace that secret, then lift it (DELETE /admin/suspensions/${t.name})`)
  }
  const listed = cluster?.replicas ?? []
  const replaced = replacements(listed)
  for (const r of listed) {
    if (r.gone) {
      // A replica that crashed, was killed or lost Redis, and none replaced it: the others serve, but someone should know why.
      if (r.gone.how === 'vanished' && !replaced.has(r.id))
        warn.push(`replica ${r.id} stopped announcing itself at ${instant(r.gone.lastSeen)} without a clean stop (crashed, killed or cut off from Redis), and no replica has started since to replace it; listed as gone until ${instant(r.gone.lastSeen, GONE_LISTED_MS)}`)
      continue
    }
    if (!r.ready) bad.push(`replica ${r.id}${r.self ? ' (this one)' : ''} is not ready (${r.phase})`)
    else if (!r.self && r.degraded.some((d) => d.startsWith('platformToken:'))) warn.push(`replica ${r.id} cannot use the platform token (${r.degraded.filter((d) => d.startsWith('platformToken:')).join(', ')})`)
    // A reload an operator asked on another replica answered there alone: this says which did not take it.
    if (r.degraded.includes('teams-reload')) warn.push(reloadRefusal(r, status.teamsReload?.refused))
  }
  // A platform whose latest calls fail (no answer, or a 5xx) on a replica: `platform:<credential>` in its degraded list, this replica's too.
  const failingOn = new Map<string, string[]>()
  for (const r of listed) {
    if (r.gone) continue
    for (const d of r.degraded) {
      if (!d.startsWith(FAILING)) continue
      const name = d.slice(FAILING.length)
      failingOn.set(name, [...(failingOn.get(name) ?? []), r.id])
    }
  }
  for (const [name, ids] of [...failingOn].sort(([a], [b]) => a.localeCompare(b)))
    bad.push(`the platform fails the calls of credential ${name} (no answer, or a 5xx, to its latest calls on ${ids.length === 1 ? 'replica' : 'replicas'} ${ids.join(', ')})`)
  const paused = new Set(status.governors.filter((g) => g.pausedUntil !== null).map((g) => g.credential))
  for (const c of status.credentials) if (c.pause) paused.add(c.name)
  for (const name of paused) warn.push(`the platform paused credential ${name} (429)`)
  if (bad.length > 0) return { level: 'bad', text: `Needs attention: ${[...bad, ...warn].join('; ')}.` }
  if (warn.length > 0) return { level: 'warn', text: `Degraded: ${warn.join('; ')}.` }
  const replicas = cluster ? listed.filter((r) => !r.gone).length : 1
  const stopped = listed.filter((r) => r.gone?.how === 'stopped').length
  const scope = status.redis.state === 'not configured' ? 'this replica (no Redis: the others are not seen)' : `${replicas} ${replicas === 1 ? 'replica' : 'replicas'}`
  const gone = [
    ...listed.flatMap((r) => (r.gone && replaced.has(r.id) ? [`replica ${r.id} crashed (no clean stop, last seen ${instant(r.gone.lastSeen)}) and was replaced by ${replaced.get(r.id) as string}`] : [])),
    ...(stopped === 0 ? [] : [`${stopped} stopped cleanly in the last hour`]),
  ]
  const left = gone.length === 0 ? '' : ` (${gone.join('; ')})`
  return { level: 'ok', text: `All is well: ${scope} ready${left}, Redis ${status.redis.state}, every platform token usable, no pause.` }
}
