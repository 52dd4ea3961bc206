// What the console shows, worked out from the admin calls' JSON: plain functions, no DOM,
// so that they are tested like any other module and loaded by the page as they are.

/** Days before an expiry from which a token or a key is marked as soon expiring. */
export const SOON_DAYS = 14

export type ExpiryLevel = 'none' | 'ok' | 'soon' | 'expired'

export interface Expiry {
  text: string
  level: ExpiryLevel
}

const DAY_S = 86_400

/** An expiry `secondsLeft` away (null: it never expires), in whole days when it is a day or more away. */
export function expiryIn(secondsLeft: number | null): Expiry {
  if (secondsLeft === null) return { text: 'never expires', level: 'none' }
  if (secondsLeft <= 0) return { text: 'expired', level: 'expired' }
  const level = secondsLeft < SOON_DAYS * DAY_S ? 'soon' : 'ok'
  if (secondsLeft >= DAY_S) {
    const days = Math.floor(secondsLeft / DAY_S)
    return { text: `${days} ${days === 1 ? 'day' : 'days'} left`, level }
  }
  if (secondsLeft >= 3600) return { text: `${Math.floor(secondsLeft / 3600)} h left`, level }
  return { text: `${Math.max(1, Math.floor(secondsLeft / 60))} min left`, level }
}

/** The expiry of an ISO time (null: never) as seen at `now` (epoch ms). */
export function expiryAt(iso: string | null, now: number): Expiry {
  return expiryIn(iso === null ? null : Math.floor((Date.parse(iso) - now) / 1000))
}

/** `part` of `whole` as a percentage with one decimal; a dash when there is nothing to divide. */
export function ratio(part: number, whole: number): string {
  if (!(whole > 0)) return '–'
  return `${(Math.round((part / whole) * 1000) / 10).toFixed(1)} %`
}

/** One reading of the cache counters (cumulative since the replica started). */
export interface CacheSample {
  at: number
  hits: number
  lookups: number
  /** The replica that answered, by its start instant: its counters are its own since then. */
  from?: string
}

export interface WindowRatio {
  text: string
  /** The span the ratio covers, in whole minutes; null: since the replica started. */
  minutes: number | null
}

/**
 * The hit ratio over the last `windowMs`: the difference between the newest reading and
 * the oldest one still in the window. A single reading gives the ratio since the start.
 * A counter that went down (the replica restarted), or a reading of another replica (an
 * admin address that answers from several), starts the window again.
 */
export function windowRatio(samples: readonly CacheSample[], now: number, windowMs: number): WindowRatio {
  const recent = samples.filter((s) => now - s.at <= windowMs)
  const newest = recent.at(-1)
  if (!newest) return { text: '–', minutes: null }
  let oldest = newest
  for (let i = recent.length - 2; i >= 0; i -= 1) {
    const s = recent[i] as CacheSample
    if (s.from !== newest.from || s.lookups > oldest.lookups || s.hits > oldest.hits) break
    oldest = s
  }
  if (oldest === newest) return { text: ratio(newest.hits, newest.lookups), minutes: null }
  return { text: ratio(newest.hits - oldest.hits, newest.lookups - oldest.lookups), minutes: Math.max(1, Math.round((newest.at - oldest.at) / 60_000)) }
}

/** Keeps the readings of the last `windowMs` and adds `sample`. */
export function addSample(samples: readonly CacheSample[], sample: CacheSample, windowMs: number): CacheSample[] {
  return [...samples.filter((s) => sample.at - s.at <= windowMs), sample]
}

/** Bytes in B, KiB, MiB or GiB. */
export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB']
  let value = n
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit += 1
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`
}

/** A pause until `untilIso` as seen at `now`: how long it still lasts. */
export function pauseLeft(untilIso: string, now: number): string {
  const s = Math.max(0, Math.ceil((Date.parse(untilIso) - now) / 1000))
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s left` : `${s} s left`
}

/** `n` and its noun, singular for one: `1 platform call`, `2 platform calls`. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`
}

/** How long before `now` an ISO time was, in its largest unit: `just now`, `5 min ago`, `3 h ago`, `12 days ago`; null: `never`. */
export function ago(iso: string | null, now: number): string {
  if (iso === null) return 'never'
  const s = Math.max(0, Math.floor((now - Date.parse(iso)) / 1000))
  if (s < 60) return 'just now'
  if (s < 3600) return `${Math.floor(s / 60)} min ago`
  if (s < DAY_S) return `${Math.floor(s / 3600)} h ago`
  return `${plural(Math.floor(s / DAY_S), 'day')} ago`
}

/** A span of time in its two largest units: `45 s`, `12 min`, `3 h 5 min`, `2 d 4 h` (hours up to 48). */
export function span(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds))
  if (s < 60) return `${s} s`
  const minutes = Math.floor(s / 60)
  if (minutes < 60) return `${minutes} min`
  const hours = Math.floor(minutes / 60)
  if (hours < 48) return `${hours} h ${minutes % 60} min`
  return `${Math.floor(hours / 24)} d ${hours % 24} h`
}

// One time zone on the page: every instant in UTC with its date, 24-hour
// (`2026-11-24 00:12:05 UTC`); the browser's own time of it on hover.

/** An instant (ISO text or epoch ms) in UTC with its date: `2026-11-24 00:12:05 UTC` (`minutes`: `2026-11-24 00:12 UTC`). */
export function utcInstant(at: string | number, precision: 'seconds' | 'minutes' = 'seconds'): string {
  const iso = new Date(typeof at === 'number' ? at : Date.parse(at)).toISOString()
  return `${iso.slice(0, 10)} ${iso.slice(11, precision === 'seconds' ? 19 : 16)} UTC`
}

/** The instant in the time zone `zone` (the browser's when not given), 24-hour with its date: `2026-11-23 19:12:05`. */
export function localInstant(at: string | number, zone?: string): string {
  const format = new Intl.DateTimeFormat('en-GB', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' })
  const parts = Object.fromEntries(format.formatToParts(new Date(typeof at === 'number' ? at : Date.parse(at))).map((p) => [p.type, p.value]))
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`
}

/** The browser's time zone (`America/New_York`). */
export function browserZone(): string {
  return new Intl.DateTimeFormat().resolvedOptions().timeZone
}

/** What hovering an instant says: the same instant in the browser's time zone (`zone`), named. */
export function onHover(at: string | number, zone: string = browserZone()): string {
  return `${localInstant(at, zone)} in this browser's time zone (${zone})`
}

/** An instant as this page writes it (utcInstant's), anywhere in a text. */
const UTC_INSTANT = /(\d{4}-\d\d-\d\d) (\d\d:\d\d(?::\d\d)?) UTC/g

/** A text cut into its plain parts and the instants it holds (`at`: the instant's ISO time, null for a plain part). */
export function instantsIn(text: string): { text: string; at: string | null }[] {
  const parts: { text: string; at: string | null }[] = []
  let from = 0
  for (const m of text.matchAll(UTC_INSTANT)) {
    if (m.index > from) parts.push({ text: text.slice(from, m.index), at: null })
    const time = (m[2] as string).length === 5 ? `${m[2] as string}:00` : (m[2] as string)
    parts.push({ text: m[0], at: new Date(`${m[1] as string}T${time}.000Z`).toISOString() })
    from = m.index + m[0].length
  }
  if (from < text.length || parts.length === 0) parts.push({ text: text.slice(from), at: null })
  return parts
}

/**
 * The time axis's labels of `splits` (epoch seconds): the UTC time of day, 24-hour, with
 * the date under the first label and under the first of each new day.
 */
export function timeTicks(splits: readonly number[]): string[] {
  let day = ''
  return splits.map((s) => {
    const iso = new Date(s * 1000).toISOString()
    const time = iso.slice(11, 16)
    if (iso.slice(0, 10) === day) return time
    day = iso.slice(0, 10)
    return `${time}\n${day}`
  })
}

/** What the limit rule does now (docs/governor.md, "The limit rule"), by its phase in GET /admin/status; `floors`, `probe` and `test` are a replica's of the last release. */
const PHASES: Record<string, string> = {
  start: 'starting: doubling while calls wait and no queue shows',
  floors: 'measuring how long each kind of call takes',
  probe: 'probing past the knee',
  cruise: 'at the knee',
  test: 'testing whether the delay was a queue',
  fault: 'halved while the platform fails',
}

/** What a pause after a platform 429 holds back (GET /admin/status, a governor's `pauses`), in words. */
export function pauseScope(p: { scope: string; team: string | null; route: string | null }): string {
  if (p.scope === 'credential') return 'every call of the credential'
  if (p.scope === 'team') return `team ${p.team ?? '?'}`
  if (p.scope === 'route') return `route ${p.route ?? '?'}`
  if (p.scope === 'team-route') return `team ${p.team ?? '?'} on route ${p.route ?? '?'}`
  return p.scope
}

/** A count of seats that may be fractional (a share, a knee), to a tenth: `4`, `2.5`. */
export function seats(n: number): string {
  return String(Math.round(n * 10) / 10)
}

/**
 * A credential's limit in force in words: fixed, or learned within its ceiling, with the
 * knee learned and what the limit rule does; a replica that takes the limit another one
 * learns says so instead.
 */
export function limitInForce(g: { limit: number; maxConcurrent: number; adaptive: boolean; knee: number | null; phase: string | null; learner: boolean }): string {
  if (!g.adaptive) return `${g.limit}, fixed`
  const knee = g.knee === null ? '' : `; knee ${seats(g.knee)}`
  const doing = !g.learner ? ', taken from the replica that learns it' : g.phase === null ? '' : `, ${PHASES[g.phase] ?? g.phase}`
  return `${g.limit}, learned (ceiling ${g.maxConcurrent})${knee}${doing}`
}

/** A webhook URL as the console shows it: its host (and port) only, never its path or query. */
export function urlHost(url: string): string {
  try {
    return new URL(url).host
  } catch {
    return '(not a URL)'
  }
}

/** A delivery's last answer: the receiver's status, else why there was none; `—` before any attempt. */
export function lastAnswer(d: { lastStatus: number | null; lastError: string | null }): string {
  if (d.lastStatus !== null) return String(d.lastStatus)
  return d.lastError ?? '—'
}

/**
 * Characters that turn the text after them around (bidirectional controls) or hide in it
 * (zero-width ones): a name or a path holding one would read other than it is.
 */
const HIDDEN_CHARACTERS = /[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g

/** `text` as the page shows it: each character of HIDDEN_CHARACTERS written as its code point, `[U+202E]`. */
export function visible(text: string): string {
  return text.replace(HIDDEN_CHARACTERS, (c) => `[U+${(c.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')}]`)
}
