// The console's view of the webhook deliveries of ended report jobs (GET /admin/jobs):
// every replica's, newest first, each URL by its host only. No call is made here, the
// page hands the answer in.
import { lastAnswer, plural, urlHost } from './console-format.js'
import { el, redraw, table, when } from './console-dom.js'

/** A delivery as GET /admin/jobs lists it (what the view shows of it). */
export interface DeliveryRow {
  id: string
  job: string
  team: string
  state: 'pending' | 'delivered' | 'failed'
  url: string
  attempts: number
  lastStatus: number | null
  lastError: string | null
  nextAttemptAt: string | null
}

const STATE_CLASS: Record<DeliveryRow['state'], string> = { delivered: 'ok', pending: 'none', failed: 'rejected' }

/** `deliveries` null: GET /admin/jobs could not be read. */
export function renderDeliveries(deliveries: DeliveryRow[] | null): void {
  if (deliveries === null) {
    redraw('deliveries', el('p', { class: 'muted' }, 'The deliveries could not be read (GET /admin/jobs).'))
    return
  }
  if (deliveries.length === 0) {
    redraw('deliveries', el('p', { class: 'muted' }, 'No delivery kept: a team with a webhook has each of its ended report jobs pushed there.'))
    return
  }
  const rows = deliveries.map((d) =>
    el(
      'tr',
      { 'data-delivery': d.id },
      el('td', {}, el('code', {}, d.job)),
      el('td', {}, d.team),
      el('td', {}, urlHost(d.url)),
      el('td', {}, el('span', { class: `state ${STATE_CLASS[d.state]}` }, d.state)),
      el('td', {}, String(d.attempts)),
      el('td', {}, lastAnswer(d)),
      el('td', {}, d.nextAttemptAt === null ? '—' : when(d.nextAttemptAt)),
    ),
  )
  const pending = deliveries.filter((d) => d.state === 'pending').length
  redraw(
    'deliveries',
    el('p', { class: 'muted' }, `${plural(deliveries.length, 'delivery', 'deliveries')} kept, ${pending} pending.`),
    table('Webhook deliveries of ended report jobs', ['Job', 'Team', 'Host', 'State', 'Attempts', 'Last answer', 'Next attempt'], rows),
  )
}
