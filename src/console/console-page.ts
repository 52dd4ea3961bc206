// The operations console's script, run by the browser. It holds no data of its
// own: everything comes from the admin calls, sent with the admin token this tab keeps in
// sessionStorage (never a cookie, never the URL). Every text is set with textContent.
import { plural, span, visible } from './console-format.js'
import { chartData, fitWindow, healthLine, lastBuckets, lastSum, replacements, replicaFigures, WINDOWS, type Charted, type ChartWindow, type Cluster } from './console-cluster.js'
import { clearCharts, drawCharts } from './console-charts.js'
import { $, el, redraw, table, when, withInstants } from './console-dom.js'
import { renderDeliveries, type DeliveryRow } from './console-deliveries.js'
import { forgetSamples, renderAudit, renderCache, renderCredentials, renderGovernors, renderLookup, renderRedis, renderSettings, renderTeams, type CachedEntry, type KeyLife, type Setting, type Status, type UsageRow } from './console-sections.js'

const TOKEN_KEY = 'report-gateway-admin-token'
const REFRESH_MS = 5000

/** One problem of a refused reload (`errors` of 422 `GW_CONFIG_INVALID`): its text, and the line of the file that writes it when one does. */
interface Problem {
  message: string
  variable: string | null
  file: string | null
  line: number | null
}

/** An admin call's refusal, with the gateway's own message and, for a refused reload, its problems each apart. */
class CallError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly problems: Problem[] = [],
  ) {
    super(message)
  }
}

/** The problems of a refused reload's answer, each field taken only when of its type; none for any other answer. */
function problemsOf(answer: { code?: string; errors?: unknown }): Problem[] {
  if (answer.code !== 'GW_CONFIG_INVALID' || !Array.isArray(answer.errors)) return []
  const text = (value: unknown) => (typeof value === 'string' ? value : null)
  return (answer.errors as Record<string, unknown>[]).map((p) => ({
    message: text(p?.message) ?? '',
    variable: text(p?.variable),
    file: text(p?.file),
    line: typeof p?.line === 'number' ? p.line : null,
  }))
}

let timer: number | undefined
/** The last cluster view, kept to redraw the charts when their scope changes. */
let lastCluster: Cluster | null = null
/** The gateway's time at its last answer (epoch ms): what "ago" is counted from. */
let serverNow = 0
/** Whose token this tab holds; a viewer's sees no action (the gateway would refuse them, 403). */
let who: { name: string; role: 'viewer' | 'operator' } | null = null
const CLUSTER_SCOPE = 'cluster'
/** What each window of the charts is called in their summaries. */
const WINDOW_SPANS: Record<ChartWindow, string> = { '5m': '5 min', '15m': '15 min', '1h': 'hour' }
/** The charts' default window: fitted to the data's age (console-cluster.ts, fitWindow). */
const FIT = 'fit'

function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY)
}

async function call<T>(method: string, path: string, body?: string): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${token() ?? ''}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }
  const res = await fetch(path, { method, headers, cache: 'no-store', credentials: 'omit', ...(body === undefined ? {} : { body }) })
  const answer = (await res.json().catch(() => ({}))) as T & { message?: string; code?: string; errors?: unknown }
  if (!res.ok) throw new CallError(res.status, answer.message ?? `${method} ${path} answered ${res.status}`, problemsOf(answer))
  return answer
}

function showError(text: string | null): void {
  const box = $('error')
  box.textContent = visible(text ?? '')
  box.hidden = text === null
}

function say(text: string): void {
  $('action-result').textContent = visible(text)
}

/**
 * An action's refusal in the gateway's words; a refused reload's problems listed each
 * apart, led by the line of the file that writes it (text nodes only, as every text here).
 */
function sayRefused(err: Error): void {
  const problems = err instanceof CallError ? err.problems : []
  if (problems.length === 0) {
    say(`Refused: ${err.message}`)
    return
  }
  const item = ({ message, variable, file, line }: Problem) =>
    line === null || variable === null || file === null ? el('li', {}, message) : el('li', {}, el('span', { class: 'where' }, `line ${line} of ${variable} (`, el('code', {}, file), ')'), `: ${message}`)
  $('action-result').replaceChildren(visible(`Refused: the new configuration was refused, the running teams stay: ${plural(problems.length, 'problem')}`), el('ol', { class: 'problems' }, ...problems.map(item)))
}

/** No token (or a refused one): no data stays on the page. */
function signOut(message: string | null): void {
  sessionStorage.removeItem(TOKEN_KEY)
  window.clearInterval(timer)
  timer = undefined
  forgetSamples()
  lastCluster = null
  who = null
  clearCharts()
  for (const id of ['credentials', 'redis', 'cache', 'governors', 'teams', 'audit', 'replicas', 'team-errors', 'cluster-note', 'lookup-result', 'config', 'deliveries']) $(id).replaceChildren()
  $('log-level').hidden = true
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
    const [whoami, status, usage, audit, cluster, keys, config, jobs] = await Promise.all([
      call<NonNullable<typeof who>>('GET', '/admin/whoami'),
      call<Status>('GET', '/admin/status'),
      call<{ usage: UsageRow[] }>('GET', '/admin/usage').catch(unlessRefused),
      call<{ lines: Record<string, unknown>[] }>('GET', '/admin/audit'),
      call<Cluster>('GET', '/admin/cluster').catch(unlessRefused),
      call<{ keys: KeyLife[] }>('GET', '/admin/keys').catch(unlessRefused),
      call<{ settings: Setting[] }>('GET', '/admin/config').catch(unlessRefused),
      call<{ deliveries: DeliveryRow[] }>('GET', '/admin/jobs').catch(unlessRefused),
    ])
    who = whoami
    render(status, usage?.usage ?? null, audit.lines, keys?.keys ?? null)
    renderCluster(status, cluster)
    renderConfig(config?.settings ?? null, cluster)
    renderDeliveries(jobs?.deliveries ?? null)
    showError(null)
    $('data').hidden = false
    const { version, commit, node, uptimeSeconds } = status.build
    $('updated').replaceChildren(
      visible(`Signed in as ${whoami.name} (${whoami.role === 'viewer' ? 'viewer: read only' : 'operator'}). Gateway ${version} (${commit === 'unknown' ? 'commit unknown' : commit.slice(0, 12)}, Node ${node}), up ${span(uptimeSeconds)}. Updated `),
      when(status.at),
      ` (every ${REFRESH_MS / 1000} s)`,
    )
  } catch (err) {
    if (!refused(err)) showError(`The gateway could not be read: ${(err as Error).message}. Retrying every ${REFRESH_MS / 1000} s.`)
  }
}

/** A call the page does without when it fails, unless the token was refused. */
function unlessRefused(err: unknown): null {
  if (err instanceof CallError && err.status === 401) throw err
  return null
}

function render(status: Status, usage: UsageRow[] | null, audit: Record<string, unknown>[], keys: KeyLife[] | null): void {
  const now = Date.parse(status.at)
  serverNow = now
  $('actions').hidden = !mayChange()
  renderReload(status.teamsReload)
  renderCredentials(status.credentials, now, mayChange())
  renderRedis(status.redis)
  renderCache(status.cache, now, status.build.startedAt)
  renderGovernors(status.governors)
  renderTeams(status.teams, usage, keys, now)
  renderAudit(audit)
}

/**
 * The reload button, off with the reason when the teams come from no file (it could only
 * be refused, 409); on when a replica before `teamsReload` answered.
 */
function renderReload(reload: Status['teamsReload']): void {
  const off = reload?.available === false
  $<HTMLButtonElement>('reload').disabled = off
  $('reload-note').textContent = off ? `Reloading the teams is off: ${reload.reason ?? 'the teams come from no file'}.` : ''
}

/** The health banner, the replicas and the last hour; `cluster` null: GET /admin/cluster could not be read. */
function renderCluster(status: Status, cluster: Cluster | null): void {
  const health = healthLine(status, cluster)
  const banner = $('health')
  banner.className = `health ${health.level}`
  banner.replaceChildren(...withInstants(health.text))
  banner.hidden = false
  lastCluster = cluster
  if (!cluster) {
    $('cluster-note').textContent = 'The replicas could not be read (GET /admin/cluster failed); retrying.'
    return
  }
  const live = cluster.replicas.filter((r) => !r.gone).length
  const gone = cluster.replicas.length - live
  $('cluster-note').textContent =
    cluster.note ?? `${plural(live, 'live replica')}, as they announce themselves in Redis every 5 s${gone === 0 ? '' : `; ${gone} gone in the last hour, listed with their history`}.`
  renderReplicas(cluster)
  renderScopes(cluster)
  renderHistory()
}

function renderReplicas(cluster: Cluster): void {
  const replaced = replacements(cluster.replicas)
  const now = Date.parse(cluster.at)
  const rows = cluster.replicas.map((r) => {
    const figures = replicaFigures(r, now)
    return el(
      'tr',
      r.self ? { class: 'self' } : r.gone ? { class: 'gone', 'data-gone': r.gone.how } : {},
      el('th', { scope: 'row' }, el('code', {}, r.id), r.self ? el('span', { class: 'mark ok' }, 'this replica') : null),
      el('td', {}, `${r.version}${r.commit === 'unknown' ? '' : ` (${r.commit.slice(0, 12)})`}`),
      el('td', {}, figures.up),
      el('td', {}, readiness(r, replaced.get(r.id))),
      el('td', {}, r.logLevel ?? '–'),
      el('td', {}, figures.inFlight),
      el('td', {}, figures.waiting),
      el('td', {}, figures.requests),
      el('td', {}, figures.degraded),
    )
  })
  redraw('replicas', table('Replicas', ['Replica', 'Version', 'Up', 'Ready', 'Log level', 'Calls in flight', 'Waiting', 'Requests (5 min)', 'Degraded'], rows))
}

/**
 * A replica's readiness, or how it left and when: a clean stop, or gone without one
 * (in grey once `replacedBy` replaced it, else amber, as the banner says).
 */
function readiness(r: Cluster['replicas'][number], replacedBy: string | undefined): HTMLElement {
  if (r.gone) {
    if (r.gone.how === 'stopped') return el('span', { class: 'left none' }, 'stopped at ', when(r.gone.lastSeen))
    if (replacedBy) return el('span', { class: 'left none' }, 'gone: no clean stop, last seen ', when(r.gone.lastSeen), `; replaced by ${replacedBy}`)
    return el('span', { class: 'left soon' }, 'gone: no clean stop, last seen ', when(r.gone.lastSeen))
  }
  return el('span', { class: `state ${r.ready ? 'ok' : 'rejected'}` }, r.ready ? 'ready' : r.phase)
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
  // The default window is the data's age (5 minutes at least): a replica of 3 minutes is not drawn in a corner of the hour.
  const fit = fitWindow(data)
  const fitted = $<HTMLSelectElement>('chart-window').querySelector<HTMLOptionElement>(`option[value="${FIT}"]`)
  if (fitted) fitted.textContent = fit.label
  const chosen = $<HTMLSelectElement>('chart-window').value
  if (chosen === FIT) drawCharts(lastBuckets(data, fit.buckets), fit.span)
  else drawCharts(lastBuckets(data, WINDOWS[chosen as ChartWindow] ?? WINDOWS['1h']), WINDOW_SPANS[chosen as ChartWindow] ?? 'hour')
  renderTeamErrors(data)
}

function renderTeamErrors(data: Charted): void {
  if (data.teams.length === 0) {
    redraw('team-errors', el('p', { class: 'muted' }, 'No 429 and no error answered to any team in the last hour.'))
    return
  }
  const rows = data.teams.map((t) =>
    el('tr', {}, el('th', { scope: 'row' }, t.team), ...[t.tooManyRequests, t.errors].flatMap((s) => [el('td', {}, String(lastSum(s, 30))), el('td', {}, String(lastSum(s, s.length)))])),
  )
  redraw('team-errors', table('429s and errors per team', ['Team', '429 (5 min)', '429 (hour)', 'Errors 5xx (5 min)', 'Errors 5xx (hour)'], rows))
}

/** Whether this tab's token may change anything: an operator's. */
function mayChange(): boolean {
  return who?.role === 'operator'
}

function renderConfig(settings: Setting[] | null, cluster: Cluster | null): void {
  const form = $('log-level')
  form.hidden = !mayChange()
  const replica = $<HTMLSelectElement>('log-level-replica')
  const chosen = replica.value
  const live = (cluster?.replicas ?? []).filter((r) => r.ready)
  replica.replaceChildren(el('option', { value: '' }, 'every replica'), ...live.map((r) => el('option', { value: r.id }, `${r.id}${r.self ? ' (this replica)' : ''}`)))
  replica.value = live.some((r) => r.id === chosen) ? chosen : ''
  if (settings === null) {
    redraw('config', el('p', { class: 'muted' }, 'The configuration could not be read.'))
    return
  }
  const level = settings.find((s) => s.setting === 'logLevel')
  if (level && document.activeElement !== $('log-level-value')) $<HTMLSelectElement>('log-level-value').value = String(level.value)
  renderSettings(settings)
}

/** Asks in the page's dialog; true when the operator confirms `effect`. */
function confirmEffect(effect: string, verb: string): Promise<boolean> {
  const dialog = $<HTMLDialogElement>('confirm')
  $('confirm-text').textContent = visible(effect)
  $('confirm-yes').textContent = verb
  dialog.returnValue = ''
  dialog.showModal()
  return new Promise((resolve) => dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), { once: true }))
}

async function act(effect: string, verb: string, method: string, path: string, done: (body: Record<string, unknown>) => string, body?: string): Promise<void> {
  if (!(await confirmEffect(effect, verb))) {
    say('Cancelled: nothing was changed.')
    return
  }
  try {
    say(done(await call<Record<string, unknown>>(method, path, body)))
  } catch (err) {
    if (!refused(err)) sayRefused(err as Error)
  }
  await refresh()
}

function reloadText(body: Record<string, unknown>): string {
  const added = (body.addedKeys as string[] | undefined) ?? []
  const removed = (body.removedKeys as string[] | undefined) ?? []
  const waiting = (body.restartNeeded as string[] | undefined) ?? []
  const restart = waiting.length > 0 ? ` These settings changed and take effect at the next restart: ${waiting.join(', ')}.` : ''
  if (body.result === 'unchanged') return waiting.length > 0 ? `Teams reloaded: the teams have not changed.${restart}` : 'Teams reloaded: the file has not changed.'
  return `Teams reloaded: ${(body.teams as string[]).join(', ')}; keys added: ${added.join(', ') || 'none'}; keys removed: ${removed.join(', ') || 'none'}.${restart}`
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
  // A token copied from a curl line's header (its value, or the whole line), or two pasted
  // together: no admin token holds a space, so it is said here, before any call.
  if (/^(authorization:\s*)?bearer\s/i.test(value)) {
    showError('Enter the admin token alone, without "Bearer " before it: the console sends it as authorization: Bearer <token> itself.')
    return
  }
  if (/\s/.test(value)) {
    showError('Enter the admin token alone: what was entered holds a space inside, which no admin token has.')
    return
  }
  sessionStorage.setItem(TOKEN_KEY, value)
  start()
})

$('sign-out').addEventListener('click', () => signOut(null))

$('chart-scope').addEventListener('change', () => renderHistory())
$('chart-window').addEventListener('change', () => renderHistory())

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

$('lookup').addEventListener('submit', (event) => {
  event.preventDefault()
  const url = $<HTMLInputElement>('lookup-url').value.trim()
  lookedUp = null
  $('purge-report').hidden = true
  if (url === '') return
  void call<{ report: string; entries: CachedEntry[] }>('GET', `/admin/cache/entry?url=${encodeURIComponent(url)}`).then(
    (found) => {
      lookedUp = found.report
      renderLookup(found.report, found.entries, serverNow)
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

$('log-level').addEventListener('submit', (event) => {
  event.preventDefault()
  const level = $<HTMLSelectElement>('log-level-value').value
  const replica = $<HTMLSelectElement>('log-level-replica').value
  const where = replica === '' ? 'every replica' : `replica ${replica}`
  const body = JSON.stringify(replica === '' ? { level } : { level, replica })
  void act(`Set the log level to ${level} on ${where}, until it restarts (then LOG_LEVEL again).`, `Set ${level}`, 'PUT', '/admin/log-level', (b) => `Log level ${String(b.level)} set on ${where} (this replica had ${String(b.previous)}).`, body)
})

$('credentials').addEventListener('click', (event) => {
  const name = (event.target as HTMLElement).closest('button')?.dataset.relogin
  if (!name) return
  const path = name === 'default' ? '/admin/token/refresh' : `/admin/credentials/${encodeURIComponent(name)}/token/refresh`
  void act(`Log in to the platform again for credential ${name} with its password grant, and use the new token on every replica.`, `Log in again (${name})`, 'POST', path, (b) => `Logged in again for ${name}: new token ${String(b.fingerprint)}.`)
})

if (token() === null) signOut(null)
else start()
