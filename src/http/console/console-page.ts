// The operations console's script, run by the browser. It holds no data of its
// own: everything comes from the admin calls, sent with the admin token this tab keeps in
// sessionStorage (never a cookie, never the URL). Every text is set with textContent.
import { addSample, ago, bytes, expiryAt, expiryIn, pauseLeft, plural, ratio, windowRatio, type CacheSample, type Expiry } from './console-format.js'
import { chartData, healthLine, lastSum, type Charted, type Cluster } from './console-cluster.js'
import { clearCharts, drawCharts } from './console-charts.js'

const TOKEN_KEY = 'report-gateway-admin-token'
const REFRESH_MS = 5000
const RATIO_WINDOW_MS = 5 * 60_000

interface Credential {
  name: string
  state: string
  source: string | null
  fingerprint: string | null
  expiresAt: string | null
  secondsLeft: number | null
  login: boolean
  pause: { scope: string; until: string } | null
}
interface Team {
  name: string
  credential: string
  advertisers: string
  keys: { id: string; expiresAt: string | null }[]
  rateLimit: { max: number; windowSec: number; remaining: number; resetSec: number } | null
}
interface Governor {
  credential: string
  maxConcurrent: number
  adaptive: boolean
  limit: number
  latencyFloorMs: number | null
  queueLimit: number
  inFlight: number
  queued: number
  pausedUntil: string | null
  teams: { team: string; inFlight: number; waiting: number; maxConcurrent: number | null; queue: number | null }[]
  refusals: Record<string, number>
}
interface Status {
  at: string
  phase: string
  build: { version: string; commit: string; node: string; uptimeSeconds: number }
  credentials: Credential[]
  redis: { state: string; address: string; topology: string }
  cache: { enabled: boolean; lookups: Record<string, number>; l1: { entries: number; bytes: number; maxBytes: number } }
  teams: Team[]
  governors: Governor[]
}
/** A key's life (GET /admin/keys). */
interface KeyLife {
  id: string
  createdAt: string | null
  lastUsedAt: string | null
  requestsLastHour: number
}
/** One report's entry under one credential (GET /admin/cache/entry). */
interface CachedEntry {
  credential: string
  key: string
  tiers: { tier: string; fetchedAt: string; etag: string }[]
  state: string
  fetchedAt: string
  ageSeconds: number
  ttlSeconds: number
  staleUntil: string
  errorUntil: string
  etag: string
  gzipBytes: number
  bodyBytes: number | null
  filledBy: { team: string; replica: string } | null
}
interface UsageRow {
  team: string
  requests: number
  cacheHits: number
  platformCalls: number
}

/** An admin call's refusal, with the gateway's own message. */
class CallError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

const $ = <T extends HTMLElement>(id: string): T => {
  const node = document.getElementById(id)
  if (!node) throw new Error(`the page has no #${id}`)
  return node as T
}

type Child = Node | string | null
function el(tag: string, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElement {
  const node = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value)
  for (const child of children) if (child !== null) node.append(child)
  return node
}

function mark(expiry: Expiry): HTMLElement {
  return el('span', { class: `mark ${expiry.level}` }, expiry.text)
}

let samples: CacheSample[] = []
let timer: number | undefined
/** The last cluster view, kept to redraw the charts when their scope changes. */
let lastCluster: Cluster | null = null
/** The gateway's time at its last answer (epoch ms): what "ago" is counted from. */
let serverNow = 0
/** Whose token this tab holds; a viewer's sees no action (the gateway would refuse them, 403). */
let who: { name: string; role: 'viewer' | 'operator' } | null = null
const CLUSTER_SCOPE = 'cluster'

function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY)
}

async function call<T>(method: string, path: string): Promise<T> {
  const res = await fetch(path, { method, headers: { authorization: `Bearer ${token() ?? ''}` }, cache: 'no-store', credentials: 'omit' })
  const body = (await res.json().catch(() => ({}))) as T & { message?: string; code?: string }
  if (!res.ok) throw new CallError(res.status, body.message ?? `${method} ${path} answered ${res.status}`)
  return body
}

function showError(text: string | null): void {
  const box = $('error')
  box.textContent = text ?? ''
  box.hidden = text === null
}

function say(text: string): void {
  $('action-result').textContent = text
}

/** No token (or a refused one): no data stays on the page. */
function signOut(message: string | null): void {
  sessionStorage.removeItem(TOKEN_KEY)
  window.clearInterval(timer)
  timer = undefined
  samples = []
  lastCluster = null
  who = null
  clearCharts()
  for (const id of ['credentials', 'redis', 'cache', 'governors', 'teams', 'audit', 'replicas', 'team-errors', 'cluster-note', 'lookup-result']) $(id).replaceChildren()
  $('purge-report').hidden = true
  $<HTMLSelectElement>('chart-scope').replaceChildren()
  $('health').hidden = true
  $('data').hidden = true
  $('signed-in').hidden = true
  $('sign-in').hidden = false
  showError(message)
  $<HTMLInputElement>('token').focus()
}

function refused(err: unknown): boolean {
  if (err instanceof CallError && err.status === 401) {
    signOut('The admin token was refused (401): no data is shown. Check the token and enter it again.')
    return true
  }
  if (err instanceof CallError && err.status === 503) {
    signOut(`The admin calls are off on this gateway: ${err.message}`)
    return true
  }
  return false
}

async function refresh(): Promise<void> {
  try {
    const [whoami, status, usage, audit, cluster, keys] = await Promise.all([
      call<NonNullable<typeof who>>('GET', '/admin/whoami'),
      call<Status>('GET', '/admin/status'),
      call<{ usage: UsageRow[] }>('GET', '/admin/usage').catch(unlessRefused),
      call<{ lines: Record<string, unknown>[] }>('GET', '/admin/audit'),
      call<Cluster>('GET', '/admin/cluster').catch(unlessRefused),
      call<{ keys: KeyLife[] }>('GET', '/admin/keys').catch(unlessRefused),
    ])
    who = whoami
    render(status, usage?.usage ?? null, audit.lines, keys?.keys ?? null)
    renderCluster(status, cluster)
    showError(null)
    $('data').hidden = false
    const { version, commit, node, uptimeSeconds } = status.build
    $('updated').textContent = `Signed in as ${whoami.name} (${whoami.role === 'viewer' ? 'viewer: read only' : 'operator'}). Gateway ${version} (${commit === 'unknown' ? 'commit unknown' : commit.slice(0, 12)}, Node ${node}), up ${uptime(uptimeSeconds)}. Updated ${new Date(status.at).toLocaleTimeString()} (every ${REFRESH_MS / 1000} s)`
  } catch (err) {
    if (!refused(err)) showError(`The gateway could not be read: ${(err as Error).message}. Retrying every ${REFRESH_MS / 1000} s.`)
  }
}

/** A call the page does without when it fails, unless the token was refused. */
function unlessRefused(err: unknown): null {
  if (err instanceof CallError && err.status === 401) throw err
  return null
}

/** A replica's uptime in its largest units: 45 s, 12 min, 3 h 5 min, 2 d 4 h. */
function uptime(seconds: number): string {
  if (seconds < 60) return `${seconds} s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return `${minutes} min`
  const hours = Math.floor(minutes / 60)
  if (hours < 48) return `${hours} h ${minutes % 60} min`
  return `${Math.floor(hours / 24)} d ${hours % 24} h`
}

function render(status: Status, usage: UsageRow[] | null, audit: Record<string, unknown>[], keys: KeyLife[] | null): void {
  const now = Date.parse(status.at)
  serverNow = now
  $('actions').hidden = !mayChange()
  renderCredentials(status.credentials, now)
  renderRedis(status.redis)
  renderCache(status.cache, now)
  renderGovernors(status.governors)
  renderTeams(status.teams, usage, keys, now)
  renderAudit(audit)
}

function table(caption: string, heads: string[], rows: HTMLElement[]): HTMLElement {
  return el(
    'div',
    { class: 'scroll', role: 'region', 'aria-label': caption, tabindex: '0' },
    el('table', {}, el('caption', { class: 'sr-only' }, caption), el('thead', {}, el('tr', {}, ...heads.map((h) => el('th', { scope: 'col' }, h)))), el('tbody', {}, ...rows)),
  )
}

function renderCredentials(credentials: Credential[], now: number): void {
  const rows = credentials.map((c) => {
    const action = !mayChange() ? el('span', { class: 'muted' }, 'read only') : c.login ? el('button', { type: 'button', 'data-relogin': c.name }, `Log in again (${c.name})`) : el('span', { class: 'muted' }, 'no password login')
    return el(
      'tr',
      {},
      el('th', { scope: 'row' }, c.name),
      el('td', {}, el('code', { class: 'fingerprint' }, c.fingerprint ?? '–')),
      el('td', {}, c.source ?? '–'),
      el('td', {}, c.expiresAt ? `${c.expiresAt.slice(0, 16).replace('T', ' ')} UTC ` : '', mark(c.fingerprint === null ? { text: 'no token', level: 'expired' } : expiryIn(c.secondsLeft))),
      el('td', {}, el('span', { class: `state ${c.state}` }, c.state)),
      el('td', {}, c.pause ? el('span', { class: 'mark soon' }, `${c.pause.scope} paused, ${pauseLeft(c.pause.until, now)}`) : 'none'),
      el('td', {}, action),
    )
  })
  $('credentials').replaceChildren(table('Platform credentials', ['Credential', 'Token fingerprint', 'Source', 'Expires', 'State', 'Pause', 'Action'], rows))
}

function facts(pairs: [string, Child][]): HTMLElement {
  const list = el('dl')
  for (const [term, value] of pairs) list.append(el('div', {}, el('dt', {}, term), el('dd', {}, value)))
  return list
}

function renderRedis(redis: Status['redis']): void {
  $('redis').replaceChildren(facts([['State', el('span', { class: `state ${redis.state === 'ok' ? 'ok' : redis.state === 'down' ? 'rejected' : 'none'}` }, redis.state)], ['Address', redis.address], ['Topology', redis.topology]]))
}

function renderCache(cache: Status['cache'], now: number): void {
  const n = (result: string) => cache.lookups[result] ?? 0
  const lookups = Object.values(cache.lookups).reduce((a, b) => a + b, 0)
  samples = addSample(samples, { at: now, hits: n('HIT') + n('STALE'), lookups }, RATIO_WINDOW_MS)
  const hit = windowRatio(samples, now, RATIO_WINDOW_MS)
  $('cache').replaceChildren(
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

function renderGovernors(governors: Governor[]): void {
  const rows = governors.map((g) => {
    const refusals = Object.entries(g.refusals)
    return el(
      'tr',
      {},
      el('th', { scope: 'row' }, g.credential),
      el('td', {}, `${g.inFlight} of ${g.limit}`),
      el('td', {}, g.adaptive ? `${g.limit}, learned (ceiling ${g.maxConcurrent})` : `${g.limit}, fixed`),
      el('td', {}, g.latencyFloorMs === null ? '–' : `${g.latencyFloorMs} ms`),
      el('td', {}, `${g.queued} of ${g.queueLimit}`),
      el('td', {}, el('ul', { class: 'plain' }, ...g.teams.map((t) => el('li', {}, teamLine(t))))),
      el('td', {}, refusals.length === 0 ? 'none' : refusals.map(([reason, count]) => `${reason} ${count}`).join(', ')),
      el('td', {}, g.pausedUntil ? el('span', { class: 'mark soon' }, `until ${g.pausedUntil.slice(11, 19)} UTC`) : 'no'),
    )
  })
  $('governors').replaceChildren(table('Platform calls per credential (this replica)', ['Credential', 'In flight', 'Limit in force', 'Latency floor', 'Waiting', 'Per team', 'Refusals', 'Paused'], rows))
}

/** A team's calls on a credential, with the ceilings an operator set (none by default). */
function teamLine(t: Governor['teams'][number]): string {
  const ceiling = (n: number | null) => (n === null ? '' : ` (at most ${n})`)
  return `${t.team}: ${t.inFlight} in flight${ceiling(t.maxConcurrent)}, ${t.waiting} waiting${ceiling(t.queue)}`
}

/** A key's life in words: when it was made, when it was last used, its requests in the last hour. */
function keyLife(life: KeyLife | undefined, now: number): string {
  if (!life) return ''
  const made = life.createdAt === null ? '' : `made ${life.createdAt.slice(0, 10)} · `
  return `${made}last used ${ago(life.lastUsedAt, now)} · ${plural(life.requestsLastHour, 'request')} in the last hour`
}

function renderTeams(teams: Team[], usage: UsageRow[] | null, keys: KeyLife[] | null, now: number): void {
  const lives = new Map((keys ?? []).map((k) => [k.id, k]))
  const rows = teams.map((t) => {
    const used = usage?.find((u) => u.team === t.name)
    const count = (n: number | undefined) => (usage === null ? 'unavailable' : String(n ?? 0))
    return el(
      'tr',
      {},
      el('th', { scope: 'row' }, t.name),
      el('td', {}, t.credential),
      el('td', {}, t.advertisers),
      // A team whose keys were all revoked cannot call: said, not left as an empty cell.
      el(
        'td',
        {},
        t.keys.length === 0
          ? mark({ text: 'none: the team cannot call', level: 'expired' })
          : el('ul', { class: 'plain' }, ...t.keys.map((k) => el('li', { 'data-key': k.id }, el('code', {}, k.id), ' ', mark(expiryAt(k.expiresAt, now)), el('div', { class: 'muted' }, keyLife(lives.get(k.id), now))))),
      ),
      el('td', {}, t.rateLimit ? `${t.rateLimit.remaining} of ${t.rateLimit.max} left (per ${t.rateLimit.windowSec} s)` : 'none'),
      el('td', {}, count(used?.requests)),
      el('td', {}, count(used?.cacheHits)),
      el('td', {}, count(used?.platformCalls)),
    )
  })
  $('teams').replaceChildren(table('Teams and their usage today (UTC)', ['Team', 'Credential', 'Advertisers', 'Keys', 'Rate limit', 'Requests', 'Hits', 'Platform calls'], rows))
}

// Fields every audit line has, shown in their own place; the rest follow as name=value.
const AUDIT_SHOWN = new Set(['level', 'time', 'pid', 'hostname', 'kind', 'msg', 'action', 'actor'])

function renderAudit(lines: Record<string, unknown>[]): void {
  if (lines.length === 0) {
    $('audit').replaceChildren(el('p', { class: 'muted' }, 'No audit line since this replica started.'))
    return
  }
  const items = lines.map((line) => {
    const when = typeof line.time === 'number' ? new Date(line.time).toISOString().slice(0, 19).replace('T', ' ') : ''
    const rest = Object.entries(line)
      .filter(([k, v]) => !AUDIT_SHOWN.has(k) && v !== null && v !== undefined)
      .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
      .join(' ')
    return el('li', {}, el('time', {}, when), ' ', el('strong', {}, String(line.msg ?? line.action ?? '')), line.actor ? ` by ${String(line.actor)}` : '', el('div', { class: 'muted' }, rest))
  })
  $('audit').replaceChildren(el('ol', { class: 'audit' }, ...items))
}

/** The health banner, the replicas and the last hour; `cluster` null: GET /admin/cluster could not be read. */
function renderCluster(status: Status, cluster: Cluster | null): void {
  const health = healthLine(status, cluster)
  const banner = $('health')
  banner.className = `health ${health.level}`
  banner.textContent = health.text
  banner.hidden = false
  lastCluster = cluster
  if (!cluster) {
    $('cluster-note').textContent = 'The replicas could not be read (GET /admin/cluster failed); retrying.'
    return
  }
  $('cluster-note').textContent = cluster.note ?? `${cluster.replicas.length} live ${cluster.replicas.length === 1 ? 'replica' : 'replicas'}, as they announce themselves in Redis every 5 s.`
  renderReplicas(cluster)
  renderScopes(cluster)
  renderHistory()
}

function renderReplicas(cluster: Cluster): void {
  const rows = cluster.replicas.map((r) =>
    el(
      'tr',
      r.self ? { class: 'self' } : {},
      el('th', { scope: 'row' }, el('code', {}, r.id), r.self ? el('span', { class: 'mark ok' }, 'this replica') : null),
      el('td', {}, `${r.version}${r.commit === 'unknown' ? '' : ` (${r.commit.slice(0, 12)})`}`),
      el('td', {}, uptime(r.uptimeSeconds)),
      el('td', {}, el('span', { class: `state ${r.ready ? 'ok' : 'rejected'}` }, r.ready ? 'ready' : r.phase)),
      el('td', {}, String(r.inFlight)),
      el('td', {}, String(r.waiting)),
      el('td', {}, String(lastSum(r.history.requests, 30))),
      el('td', {}, r.degraded.length === 0 ? 'none' : r.degraded.join(', ')),
    ),
  )
  $('replicas').replaceChildren(table('Replicas', ['Replica', 'Version', 'Up', 'Ready', 'Calls in flight', 'Waiting', 'Requests (5 min)', 'Degraded'], rows))
}

/** The charts' scope: the whole cluster or one replica; the choice stays while that replica is listed. */
function renderScopes(cluster: Cluster): void {
  const select = $<HTMLSelectElement>('chart-scope')
  const chosen = select.value || CLUSTER_SCOPE
  const choices = [[CLUSTER_SCOPE, cluster.replicas.length === 1 ? 'This replica (the only one listed)' : `Whole cluster (${cluster.replicas.length} replicas)`], ...cluster.replicas.map((r) => [r.id, `${r.id}${r.self ? ' (this replica)' : ''}`])]
  select.replaceChildren(...choices.map(([value, label]) => el('option', { value: value as string }, label as string)))
  select.value = choices.some(([value]) => value === chosen) ? chosen : CLUSTER_SCOPE
}

function renderHistory(): void {
  if (!lastCluster) return
  const scope = $<HTMLSelectElement>('chart-scope').value
  const replicas = scope === CLUSTER_SCOPE ? lastCluster.replicas : lastCluster.replicas.filter((r) => r.id === scope)
  if (replicas.length === 0) return
  const data = chartData(replicas)
  drawCharts(data)
  renderTeamErrors(data)
}

function renderTeamErrors(data: Charted): void {
  if (data.teams.length === 0) {
    $('team-errors').replaceChildren(el('p', { class: 'muted' }, 'No 429 and no error answered to any team in the last hour.'))
    return
  }
  const rows = data.teams.map((t) =>
    el('tr', {}, el('th', { scope: 'row' }, t.team), ...[t.tooManyRequests, t.errors].flatMap((s) => [el('td', {}, String(lastSum(s, 30))), el('td', {}, String(lastSum(s, s.length)))])),
  )
  $('team-errors').replaceChildren(table('429s and errors per team', ['Team', '429 (5 min)', '429 (hour)', 'Errors 5xx (5 min)', 'Errors 5xx (hour)'], rows))
}

/** Whether this tab's token may change anything: an operator's. */
function mayChange(): boolean {
  return who?.role === 'operator'
}

/** Asks in the page's dialog; true when the operator confirms `effect`. */
function confirmEffect(effect: string, verb: string): Promise<boolean> {
  const dialog = $<HTMLDialogElement>('confirm')
  $('confirm-text').textContent = effect
  $('confirm-yes').textContent = verb
  dialog.returnValue = ''
  dialog.showModal()
  return new Promise((resolve) => dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), { once: true }))
}

async function act(effect: string, verb: string, method: string, path: string, done: (body: Record<string, unknown>) => string): Promise<void> {
  if (!(await confirmEffect(effect, verb))) {
    say('Cancelled: nothing was changed.')
    return
  }
  try {
    say(done(await call<Record<string, unknown>>(method, path)))
  } catch (err) {
    if (!refused(err)) say(`Refused: ${(err as Error).message}`)
  }
  await refresh()
}

function reloadText(body: Record<string, unknown>): string {
  const added = (body.addedKeys as string[] | undefined) ?? []
  const removed = (body.removedKeys as string[] | undefined) ?? []
  if (body.result === 'unchanged') return 'Teams reloaded: the file has not changed.'
  return `Teams reloaded: ${(body.teams as string[]).join(', ')}; keys added: ${added.join(', ') || 'none'}; keys removed: ${removed.join(', ') || 'none'}.`
}

function start(): void {
  $('sign-in').hidden = true
  $('signed-in').hidden = false
  void refresh()
  window.clearInterval(timer)
  timer = window.setInterval(() => void refresh(), REFRESH_MS)
}

$('sign-in').addEventListener('submit', (event) => {
  event.preventDefault()
  const input = $<HTMLInputElement>('token')
  const value = input.value.trim()
  input.value = ''
  if (value === '') {
    showError('Enter the admin token (ADMIN_TOKEN, or one of ADMIN_TOKENS_FILE).')
    return
  }
  sessionStorage.setItem(TOKEN_KEY, value)
  start()
})

$('sign-out').addEventListener('click', () => signOut(null))

$('chart-scope').addEventListener('change', () => renderHistory())

$('purge-one').addEventListener('submit', (event) => {
  event.preventDefault()
  const id = $<HTMLInputElement>('advertiser').value.trim()
  if (!/^\d{1,15}$/.test(id) || Number(id) < 1) {
    say('The advertiser id must be a positive whole number.')
    return
  }
  void act(`Drop every cached report of advertiser ${id}, on every replica. The next read of each is a platform call.`, `Purge advertiser ${id}`, 'DELETE', `/admin/cache?advertiserId=${id}`, (b) => `Purged advertiser ${id}: ${plural(Number(b.dropped), 'entry', 'entries')} dropped.`)
})

$('purge-all').addEventListener('click', () => {
  void act('Drop EVERY cached report of every team, on every replica. Until the cache fills again, every read is a platform call.', 'Purge everything', 'DELETE', '/admin/cache', (b) => `Purged everything: ${plural(Number(b.dropped), 'entry', 'entries')} dropped.`)
})

$('reload').addEventListener('click', () => {
  void act('Read CONFIG_FILE (or TEAMS_FILE) again and apply its teams and keys on every replica. A file that does not validate is refused and the running teams stay.', 'Reload teams', 'POST', '/admin/reload', reloadText)
})

/** The report the last look-up found (its canonical URL), which the purge button drops. */
let lookedUp: string | null = null

function renderLookup(report: string, entries: CachedEntry[]): void {
  const now = serverNow
  const blocks = entries.map((e) =>
    facts([
      ['Credential', e.credential],
      ['Key', el('code', {}, e.key)],
      ['Held in', e.tiers.map((t) => (t.tier === 'l1' ? 'this replica\'s memory (L1)' : 'Redis (L2)')).join(', ')],
      ['State', el('span', { class: `state ${e.state === 'fresh' ? 'ok' : 'none'}` }, e.state)],
      ['Filled', `${ago(e.fetchedAt, now)} (${e.fetchedAt.slice(0, 19).replace('T', ' ')} UTC)${e.filledBy ? ` for team ${e.filledBy.team} by replica ${e.filledBy.replica}` : ''}`],
      ['Fresh for', `${e.ttlSeconds} s more; then stale until ${e.staleUntil.slice(11, 19)}, served on platform errors until ${e.errorUntil.slice(11, 19)} UTC`],
      ['Size', `${bytes(e.gzipBytes)} stored${e.bodyBytes === null ? '' : `, ${bytes(e.bodyBytes)} as sent`}`],
      ['ETag', el('code', {}, e.etag)],
    ]),
  )
  $('lookup-result').replaceChildren(el('p', {}, 'Cached as ', el('code', {}, report)), ...blocks)
}

$('lookup').addEventListener('submit', (event) => {
  event.preventDefault()
  const url = $<HTMLInputElement>('lookup-url').value.trim()
  lookedUp = null
  $('purge-report').hidden = true
  if (url === '') return
  void call<{ report: string; entries: CachedEntry[] }>('GET', `/admin/cache/entry?url=${encodeURIComponent(url)}`).then(
    (found) => {
      lookedUp = found.report
      renderLookup(found.report, found.entries)
      $('purge-report').hidden = !mayChange()
    },
    (err: unknown) => {
      if (!refused(err)) $('lookup-result').replaceChildren(el('p', {}, err instanceof CallError && err.status === 404 ? `Not cached: ${err.message}` : `Refused: ${(err as Error).message}`))
    },
  )
})

$('purge-report').addEventListener('click', () => {
  const report = lookedUp
  if (report === null) return
  void act(`Drop the cached copies of ${report}, on every replica. Its next read is a platform call.`, 'Purge this report', 'DELETE', `/admin/cache/entry?url=${encodeURIComponent(report)}`, (b) => {
    $('purge-report').hidden = true
    $('lookup-result').replaceChildren()
    return `Purged ${report}: ${plural(Number(b.dropped), 'entry', 'entries')} dropped.`
  })
})

$('credentials').addEventListener('click', (event) => {
  const name = (event.target as HTMLElement).closest('button')?.dataset.relogin
  if (!name) return
  const path = name === 'default' ? '/admin/token/refresh' : `/admin/credentials/${encodeURIComponent(name)}/token/refresh`
  void act(`Log in to the platform again for credential ${name} with its password grant, and use the new token on every replica.`, `Log in again (${name})`, 'POST', path, (b) => `Logged in again for ${name}: new token ${String(b.fingerprint)}.`)
})

if (token() === null) signOut(null)
else start()
