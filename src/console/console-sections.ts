// The console's sections of one replica's state (GET /admin/status, /admin/usage,
// /admin/keys, /admin/audit, /admin/config, /admin/cache/entry), each drawn from its
// answer: no call is made here, the page hands the answers in.
import { addSample, ago, bytes, expiryAt, expiryIn, limitInForce, pauseLeft, pauseScope, plural, ratio, seats, span, windowRatio, type CacheSample } from './console-format.js'
import { $, el, facts, mark, redraw, table, when, type Child } from './console-dom.js'

/** The span of the cache's hit ratio. */
const RATIO_WINDOW_MS = 5 * 60_000

export interface Credential {
  name: string
  state: string
  source: string | null
  fingerprint: string | null
  expiresAt: string | null
  secondsLeft: number | null
  login: boolean
  pause: { scope: string; until: string } | null
}
export interface Team {
  name: string
  credential: string
  advertisers: string
  keys: { id: string; expiresAt: string | null }[]
  rateLimit: { max: number; windowSec: number; remaining: number; resetSec: number } | null
  /** The team's bound of platform-seconds a UTC day; null (or absent, from a replica before it): none. */
  platformSecondsPerDay?: number | null
  /** When the team's suspension ends (a request of its held a secret of the gateway's); null (or absent, from a replica before it): not suspended. */
  suspendedUntil?: string | null
}
export interface Governor {
  credential: string
  maxConcurrent: number
  adaptive: boolean
  limit: number
  /** The knee learned and the limit rule's phase; null when the limit is not learned. */
  knee: number | null
  phase: string | null
  /** Whether this replica learns the limit (with Redis), else takes it from the one that does. */
  learner: boolean
  latencyFloorMs: number | null
  queueLimit: number
  inFlight: number
  queued: number
  seatsHeld: number
  pausedUntil: string | null
  /** The pauses under way after platform 429s (absent in an older replica's answer). */
  pauses?: { scope: string; team: string | null; route: string | null; until: string }[]
  /**
   * `share`: the team's share of the seats now (of the knee, by weight over the active
   * teams); `seatSeconds`: the seat-time its calls held on this replica since it started.
   */
  teams: { team: string; inFlight: number; waiting: number; share: number; maxConcurrent: number | null; queue: number | null; seatSeconds?: number }[]
  refusals: Record<string, number>
}
export interface Status {
  at: string
  phase: string
  build: { version: string; commit: string; node: string; uptimeSeconds: number; startedAt?: string }
  credentials: Credential[]
  redis: { state: string; address: string; topology: string }
  cache: { enabled: boolean; lookups: Record<string, number>; l1: { entries: number; bytes: number; maxBytes: number } }
  teams: Team[]
  /** Whether POST /admin/reload can read the teams again, or why not, and the files' refused reload (`refused`); each absent from a replica before it. */
  teamsReload?: { available: boolean; files: string[]; reason: string | null; refused?: { since: string; problems: string[] } | null }
  governors: Governor[]
}
/** A setting in force and where it came from (GET /admin/config). */
export interface Setting {
  setting: string
  value: unknown
  source: string
  from: string
  fingerprint?: string
}
/** A key's life (GET /admin/keys). */
export interface KeyLife {
  team: string
  id: string
  /** `active`, `grace` (replaced, still working), `ended` (refused, still in the file), `removed`. */
  state: string
  successor: string | null
  graceUntil: string | null
  removedAt: string | null
  createdAt: string | null
  lastUsedAt: string | null
  requestsLastHour: number
}
/** One report's entry under one credential (GET /admin/cache/entry). */
export interface CachedEntry {
  credential: string
  key: string
  tiers: { tier: string; fetchedAt: string; etag: string }[]
  state: string
  fetchedAt: string
  ageSeconds: number
  freshUntil: string
  ttlSeconds: number
  staleUntil: string
  errorUntil: string
  etag: string
  gzipBytes: number
  bodyBytes: number | null
  filledBy: { team: string; replica: string } | null
}
export interface UsageRow {
  team: string
  requests: number
  cacheHits: number
  platformCalls: number
  /** The platform time the team's calls held today (seat-time), in seconds. */
  platformSeconds: number
}

/** Readings of the cache counters, for the hit ratio of the last minutes. */
let samples: CacheSample[] = []

/** Forgets the readings (the token was forgotten or refused). */
export function forgetSamples(): void {
  samples = []
}

export function renderCredentials(credentials: Credential[], now: number, mayChange: boolean): void {
  const rows = credentials.map((c) => {
    const action = !mayChange ? el('span', { class: 'muted' }, 'read only') : c.login ? el('button', { type: 'button', 'data-relogin': c.name }, `Log in again (${c.name})`) : el('span', { class: 'muted' }, 'no password login')
    return el(
      'tr',
      {},
      el('th', { scope: 'row' }, c.name),
      el('td', {}, el('code', { class: 'fingerprint' }, c.fingerprint ?? '–')),
      el('td', {}, c.source ?? '–'),
      el('td', {}, c.expiresAt ? when(c.expiresAt, 'minutes') : '', c.expiresAt ? ' ' : '', mark(c.fingerprint === null ? { text: 'no token', level: 'expired' } : expiryIn(c.secondsLeft))),
      el('td', {}, el('span', { class: `state ${c.state}` }, c.state)),
      el('td', {}, c.pause ? el('span', { class: 'mark soon' }, `${c.pause.scope} paused, ${pauseLeft(c.pause.until, now)}`) : 'none'),
      el('td', {}, action),
    )
  })
  redraw('credentials', table('Platform credentials', ['Credential', 'Token fingerprint', 'Source', 'Expires', 'State', 'Pause', 'Action'], rows))
}

export function renderRedis(redis: Status['redis']): void {
  redraw('redis', facts([['State', el('span', { class: `state ${redis.state === 'ok' ? 'ok' : redis.state === 'down' ? 'rejected' : 'none'}` }, redis.state)], ['Address', redis.address], ['Topology', redis.topology]]))
}

/** The cache's facts; `from`, the answering replica's start instant, keeps the hit ratio to its own counters. */
export function renderCache(cache: Status['cache'], now: number, from: string | undefined): void {
  const n = (result: string) => cache.lookups[result] ?? 0
  const lookups = Object.values(cache.lookups).reduce((a, b) => a + b, 0)
  samples = addSample(samples, { at: now, hits: n('HIT') + n('STALE'), lookups, ...(from === undefined ? {} : { from }) }, RATIO_WINDOW_MS)
  const hit = windowRatio(samples, now, RATIO_WINDOW_MS)
  redraw(
    'cache',
    facts([
      [hit.minutes === null ? 'Hit ratio (since start)' : `Hit ratio (last ${hit.minutes} min)`, hit.text],
      ['Lookups since start', `${lookups} (HIT ${n('HIT')}, STALE ${n('STALE')}, MISS ${n('MISS')}, REFRESH ${n('REFRESH')}, BYPASS ${n('BYPASS')})`],
      ['L1 entries', String(cache.l1.entries)],
      ['L1 bytes', `${bytes(cache.l1.bytes)} of ${bytes(cache.l1.maxBytes)} (${ratio(cache.l1.bytes, cache.l1.maxBytes)})`],
      ['Refreshes', `${n('REFRESH')} asked, ${n('STALE')} stale copies served while refreshing`],
      ['Cache', cache.enabled ? 'on' : 'off'],
    ]),
  )
}

export function renderGovernors(governors: Governor[]): void {
  const rows = governors.map((g) => {
    const refusals = Object.entries(g.refusals)
    return el(
      'tr',
      {},
      el('th', { scope: 'row' }, g.credential),
      // With Redis, the seats this replica leased of the limit (calls in flight without it).
      el('td', {}, g.seatsHeld === g.inFlight ? `${g.inFlight} of ${g.limit}` : `${g.inFlight} of ${g.limit}, ${plural(g.seatsHeld, 'seat')} leased here`),
      el('td', {}, limitInForce(g)),
      el('td', {}, g.latencyFloorMs === null ? '–' : `${g.latencyFloorMs} ms`),
      el('td', {}, `${g.queued} of ${g.queueLimit}`),
      el('td', {}, el('ul', { class: 'plain' }, ...g.teams.map((t) => el('li', {}, teamLine(t))))),
      el('td', {}, refusals.length === 0 ? 'none' : refusals.map(([reason, count]) => `${reason} ${count}`).join(', ')),
      el('td', {}, paused(g)),
    )
  })
  redraw('governors', table('Platform calls per credential (this replica)', ['Credential', 'In flight', 'Limit in force', 'Latency floor', 'Waiting', 'Per team', 'Refusals', 'Paused'], rows))
}

/** A team's calls on a credential and its share of the seats, with the ceilings an operator set (none by default), and the seat-time its calls held. */
function teamLine(t: Governor['teams'][number]): string {
  const ceiling = (n: number | null) => (n === null ? '' : ` (at most ${n})`)
  const held = t.seatSeconds === undefined ? '' : `, ${span(t.seatSeconds)} of seat-time`
  return `${t.team}: ${t.inFlight} in flight${ceiling(t.maxConcurrent)}, share ${seats(t.share)}, ${t.waiting} waiting${ceiling(t.queue)}${held}`
}

/** The pauses under way after platform 429s: what each holds back, and until when. */
function paused(g: Governor): HTMLElement | string {
  const pauses = g.pauses ?? (g.pausedUntil ? [{ scope: 'credential', team: null, route: null, until: g.pausedUntil }] : [])
  if (pauses.length === 0) return 'no'
  return el('ul', { class: 'plain' }, ...pauses.map((p) => el('li', {}, el('span', { class: 'mark soon' }, `${pauseScope(p)} until `, when(p.until)))))
}

/** A key's life in words: when it was made (its date in UTC), when it was last used, its requests in the last hour. */
function keyLife(life: KeyLife | undefined, now: number): Child[] {
  if (!life) return []
  const made = life.createdAt === null ? [] : ['made ', when(life.createdAt, 'seconds', life.createdAt.slice(0, 10)), ' · ']
  return [...made, `last used ${ago(life.lastUsedAt, now)} · ${plural(life.requestsLastHour, 'request')} in the last hour`]
}

/** A rotated key's mark: its successor, and until when it works (or since when it is refused). */
function rotation(life: KeyLife | undefined): Child {
  if (!life || life.successor === null || (life.state !== 'grace' && life.state !== 'ended')) return ''
  const at = life.graceUntil === null ? '' : ` ${life.graceUntil.slice(0, 16).replace('T', ' ')} UTC`
  if (life.state === 'ended') return mark({ text: `replaced by ${life.successor}, refused${at ? ` since${at}` : ''}`, level: 'expired' })
  return mark({ text: `replaced by ${life.successor}${at ? `, works until${at}` : ''}`, level: 'soon' })
}

/** A key removed from the teams (GET /admin/keys, `state: removed`): greyed, with when and its last use. */
function removedKey(life: KeyLife, now: number): HTMLElement {
  const when = life.removedAt === null ? 'removed' : `removed ${ago(life.removedAt, now)}`
  return el('li', { class: 'removed', 'data-key': life.id }, el('code', {}, life.id), ' ', mark({ text: when, level: 'none' }), el('div', { class: 'muted' }, ...keyLife(life, now)))
}

export function renderTeams(teams: Team[], usage: UsageRow[] | null, keys: KeyLife[] | null, now: number): void {
  const lives = new Map((keys ?? []).filter((k) => k.state !== 'removed').map((k) => [k.id, k]))
  const removed = (team: string) => (keys ?? []).filter((k) => k.state === 'removed' && k.team === team).map((k) => removedKey(k, now))
  const rows = teams.map((t) => {
    const used = usage?.find((u) => u.team === t.name)
    const count = (n: number | undefined) => (usage === null ? 'unavailable' : String(n ?? 0))
    return el(
      'tr',
      {},
      el('th', { scope: 'row' }, t.name, t.suspendedUntil ? el('div', { 'data-suspended': t.name }, mark({ text: `suspended until ${t.suspendedUntil}: a request held a secret of the gateway's`, level: 'expired' })) : ''),
      el('td', {}, t.credential),
      el('td', {}, t.advertisers),
      // A team whose keys were all revoked cannot call: said, not left as an empty cell.
      el(
        'td',
        {},
        t.keys.length === 0 ? mark({ text: 'none: the team cannot call', level: 'expired' }) : '',
        t.keys.length === 0 && removed(t.name).length === 0
          ? ''
          : el(
              'ul',
              { class: 'plain' },
              ...t.keys.map((k) => {
                const life = lives.get(k.id)
                // A rotated key without an end of its own is marked by its rotation alone.
                const expiry = k.expiresAt === null && life?.successor ? '' : mark(expiryAt(k.expiresAt, now))
                return el('li', { 'data-key': k.id }, el('code', {}, k.id), ' ', expiry, ' ', rotation(life), el('div', { class: 'muted' }, ...keyLife(life, now)))
              }),
              ...removed(t.name),
            ),
      ),
      el('td', {}, t.rateLimit ? `${t.rateLimit.remaining} of ${t.rateLimit.max} left (per ${t.rateLimit.windowSec} s)` : 'none'),
      el('td', {}, count(used?.requests)),
      el('td', {}, count(used?.cacheHits)),
      el('td', {}, count(used?.platformCalls)),
      el('td', { 'data-platform-seconds': t.name }, usage === null ? 'unavailable' : platformSeconds(used?.platformSeconds ?? 0, t.platformSecondsPerDay ?? null)),
    )
  })
  // Teams removed whole, while their keys are listed (30 days): greyed rows of their removed keys.
  const running = new Set(teams.map((t) => t.name))
  const gone = [...new Set((keys ?? []).filter((k) => k.state === 'removed' && !running.has(k.team)).map((k) => k.team))].map((team) =>
    el('tr', { class: 'gone' }, el('th', { scope: 'row' }, `${team} (removed)`), el('td', {}, '–'), el('td', {}, '–'), el('td', {}, el('ul', { class: 'plain' }, ...removed(team))), el('td', {}, '–'), el('td', {}, '–'), el('td', {}, '–'), el('td', {}, '–'), el('td', {}, '–')),
  )
  redraw('teams', table('Teams and their usage today (UTC)', ['Team', 'Credential', 'Advertisers', 'Keys', 'Rate limit', 'Requests', 'Hits', 'Platform calls', 'Platform-seconds'], [...rows, ...gone]))
}

/** A team's platform-seconds of the day, and its bound when it has one. */
function platformSeconds(seconds: number, bound: number | null): string {
  return bound === null ? `${seconds.toFixed(3)} s` : `${seconds.toFixed(3)} of ${bound} s`
}

// Fields every audit line has, shown in their own place; the rest follow as name=value.
const AUDIT_SHOWN = new Set(['level', 'time', 'pid', 'hostname', 'kind', 'msg', 'action', 'actor'])

export function renderAudit(lines: Record<string, unknown>[]): void {
  if (lines.length === 0) {
    redraw('audit', el('p', { class: 'muted' }, 'No audit line since this replica started.'))
    return
  }
  const items = lines.map((line) => {
    const at = typeof line.time === 'number' ? when(line.time) : ''
    const rest = Object.entries(line)
      .filter(([k, v]) => !AUDIT_SHOWN.has(k) && v !== null && v !== undefined)
      .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
      .join(' ')
    return el('li', {}, at, ' ', el('strong', {}, String(line.msg ?? line.action ?? '')), line.actor ? ` by ${String(line.actor)}` : '', el('div', { class: 'muted' }, rest))
  })
  redraw('audit', el('ol', { class: 'audit' }, ...items))
}

/** A setting's value as the page shows it: a secret by its fingerprint, a list or object as JSON. */
function settingValue(s: Setting): Child {
  if (s.fingerprint !== undefined) return el('span', {}, 'secret, fingerprint ', el('code', { class: 'fingerprint' }, s.fingerprint))
  if (s.value === null || s.value === undefined) return el('span', { class: 'muted' }, 'not set')
  return el('code', {}, typeof s.value === 'string' ? s.value : JSON.stringify(s.value))
}

/** One report's entries as GET /admin/cache/entry answered them. */
export function renderLookup(report: string, entries: CachedEntry[], now: number): void {
  const blocks = entries.map((e) =>
    facts([
      ['Credential', e.credential],
      ['Key', el('code', {}, e.key)],
      ['Held in', e.tiers.map((t) => (t.tier === 'l1' ? 'this replica\'s memory (L1)' : 'Redis (L2)')).join(', ')],
      ['State', el('span', { class: `state ${e.state === 'fresh' ? 'ok' : 'none'}` }, e.state)],
      ['Filled', el('span', {}, `${ago(e.fetchedAt, now)} (`, when(e.fetchedAt), `)${e.filledBy ? ` for team ${e.filledBy.team} by replica ${e.filledBy.replica}` : ''}`)],
      // Each window with its date: a fresh copy of a day ends tomorrow, not at a time of today.
      [
        'Fresh until',
        el(
          'span',
          {},
          when(e.freshUntil),
          e.ttlSeconds > 0 ? ` (${span(e.ttlSeconds)} more)` : ' (past)',
          '; then stale until ',
          when(e.staleUntil),
          ', served on platform errors until ',
          when(e.errorUntil),
        ),
      ],
      ['Size', `${bytes(e.gzipBytes)} stored${e.bodyBytes === null ? '' : `, ${bytes(e.bodyBytes)} as sent`}`],
      ['ETag', el('code', {}, e.etag)],
    ]),
  )
  $('lookup-result').replaceChildren(el('p', {}, 'Cached as ', el('code', {}, report)), ...blocks)
}

/** The settings in force, each with where it came from. */
export function renderSettings(settings: Setting[]): void {
  const rows = settings.map((s) => el('tr', { class: `source-${s.source}` }, el('th', { scope: 'row' }, el('code', {}, s.setting)), el('td', {}, settingValue(s)), el('td', {}, s.source), el('td', {}, s.from)))
  redraw('config', table('Settings in force and where each came from', ['Setting', 'Value', 'Source', 'From'], rows))
  const changed = settings.filter((s) => s.source !== 'default').length
  $('config-summary').textContent = `The ${settings.length} settings in force (${changed} not the default); show them`
}
