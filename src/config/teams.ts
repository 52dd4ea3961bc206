import { TEAM_NAME_PATTERN, TEAM_NAME_RULE } from './names.js'
import type { RawTeam } from './schema.js'
import { parseDuration } from './units.js'
import { webhookKey } from './webhook-secret.js'

// Teams as the gateway runs on them: the part of the config that reloads without a
// restart, so it is worked out on its own, also by `npm run keys -- list`.

export interface TeamKey {
  hash: string
  /** Named in request log lines, audit lines and usage; default: the hash's first 12 hex digits. */
  id: string
  /** Epoch ms from which the key is refused; null: never. */
  expiresAt: number | null
  /** Epoch ms the key was made (`npm run keys -- new` writes it); null: not said. */
  createdAt: number | null
  /** The id of the first key of the line this key continues (its own id unless a rotation made it). */
  lineage: string
  /** The id of the key this one replaces (a rotation); null: none. */
  replaces: string | null
  /** The id of the key that replaces this one (a rotation); null: none. */
  successor: string | null
  /** With a successor: epoch ms from which the key is refused, naming its successor; null: not before its expiry. */
  graceUntil: number | null
}

export interface TeamConfig {
  name: string
  keys: TeamKey[]
  /** null: every account ("*"). */
  advertisers: ReadonlySet<number> | null
  write: boolean
  /** May force a fresh copy of a report from the platform (reports/forced-refresh.ts). */
  refresh: boolean
  credential: string
  rateLimit: { max: number; windowMs: number } | null
  /** Calls per round-robin turn when the credential's calls queue. */
  weight: number
  /** The team's bulkhead in its credential's governor; null: half of the credential's. */
  maxConcurrent: number | null
  queue: number | null
  /** The bound on the platform-seconds of the team's calls a UTC day; null: none. */
  platformSecondsPerDay: number | null
  /** Where the team's ended report jobs are pushed, and the secret that signs them; null: not pushed. */
  webhook: { url: string; secret: string } | null
}

const TEAM_NAME = new RegExp(TEAM_NAME_PATTERN)

/** Whether `name` may name a team (TEAM_NAME_PATTERN): what the config, reloads and admin calls accept. */
export function isTeamName(name: string): boolean {
  return TEAM_NAME.test(name)
}

/** The id a key without one is known by: short, and no help to guess the key. */
export function defaultKeyId(hash: string): string {
  return hash.slice('sha256:'.length, 'sha256:'.length + 12)
}

/**
 * Teams from their validated raw form; `credentials`: the names a team may use (null:
 * not checked). Problems (a key listed twice, an unknown credential, a bad date) are
 * added to `problems`, one per line.
 */
export function normalizeTeams(raw: Record<string, RawTeam>, credentials: ReadonlySet<string> | null, problems: string[]): TeamConfig[] {
  const teams: TeamConfig[] = []
  const keyOwners = new Map<string, string>()
  const ids = new Map<string, string>()
  // Each team's deliveries are signed with a key of its own: a receiver holds its team's
  // key, and with another team's it would sign pushes that team's receiver takes.
  const webhookKeyOwners = new Map<string, string>()
  for (const [name, t] of Object.entries(raw)) {
    // The schema only checks the teams whose names match its pattern: any other is
    // refused here, before its unchecked settings are read.
    if (!isTeamName(name)) {
      problems.push(`teams: ${JSON.stringify(name)} is not a valid team name (${TEAM_NAME_RULE})`)
      continue
    }
    if (credentials && !credentials.has(t.credential)) problems.push(`teams.${name}.credential: no credential named ${t.credential}`)
    // "*" is every advertiser: beside ids it says two things, and read as every advertiser it would widen what the ids were written to bound.
    const advertiserIds = t.advertisers.filter((a) => a !== '*')
    if (advertiserIds.length > 0 && advertiserIds.length < t.advertisers.length) {
      problems.push(`teams.${name}.advertisers: "*" (every advertiser) is listed beside advertiser ids (${advertiserIds.join(', ')}); give ["*"] alone, or the ids alone`)
    }
    const keys: TeamKey[] = []
    for (const [i, entry] of t.keys.entries()) {
      const { hash, id, createdAt, expiresAt, successor, graceUntil, lineage, replaces } = typeof entry === 'string' ? { hash: entry } : entry
      const owner = keyOwners.get(hash)
      if (owner) problems.push(`teams.${name}.keys: a key is also listed for team ${owner}`)
      keyOwners.set(hash, name)
      const keyId = id ?? defaultKeyId(hash)
      const key: TeamKey = { hash, id: keyId, lineage: lineage ?? keyId, replaces: replaces ?? null, successor: successor ?? null, graceUntil: null, expiresAt: null, createdAt: null }
      // Usage and logs name a key by its id alone, so an id means one key.
      const idOwner = ids.get(key.id)
      if (idOwner) problems.push(`teams.${name}.keys.${i}.id: ${key.id} is also the id of a key of team ${idOwner}`)
      ids.set(key.id, name)
      if (expiresAt !== undefined) {
        key.expiresAt = parseExpiry(expiresAt)
        if (Number.isNaN(key.expiresAt)) problems.push(`teams.${name}.keys.${i}.expiresAt: not a valid date (got ${JSON.stringify(expiresAt)})`)
      }
      if (createdAt !== undefined) {
        key.createdAt = parseExpiry(createdAt)
        if (Number.isNaN(key.createdAt)) problems.push(`teams.${name}.keys.${i}.createdAt: not a valid date (got ${JSON.stringify(createdAt)})`)
      }
      if (key.successor === key.id) problems.push(`teams.${name}.keys.${i}.successor: ${key.id} is this key itself; name the key that replaces it`)
      if (graceUntil !== undefined) {
        if (key.successor === null) problems.push(`teams.${name}.keys.${i}.graceUntil: only a key with a successor has a grace (set successor, or use expiresAt for the key's end)`)
        key.graceUntil = parseExpiry(graceUntil)
        if (Number.isNaN(key.graceUntil)) problems.push(`teams.${name}.keys.${i}.graceUntil: not a valid date (got ${JSON.stringify(graceUntil)})`)
      }
      keys.push(key)
    }
    // The rate-limit headers and retry-after count the window in whole seconds: under one,
    // every answer said t=NaN and every 429 retry-after: NaN.
    if (t.rateLimit && (parseDuration(t.rateLimit.window) < 1000 || parseDuration(t.rateLimit.window) % 1000 !== 0)) {
      // A bare number is milliseconds (`window: 60`): say so, as the start's warning of one does.
      const bare = typeof t.rateLimit.window === 'number' ? `; a duration given as a number is milliseconds: write ${t.rateLimit.window}s if seconds were meant` : ''
      problems.push(`teams.${name}.rateLimit.window: must be whole seconds, 1s at least: the rate-limit headers and retry-after count it in whole seconds (got ${String(t.rateLimit.window)}${bare})`)
    }
    if (t.webhook) {
      const key = webhookKey(t.webhook.secret).toString('hex')
      const owner = webhookKeyOwners.get(key)
      if (owner) problems.push(`teams.${name}.webhook.secret: the key of team ${owner}'s webhook secret; give each team a secret of its own, or a receiver of one team could sign pushes the other's takes`)
      webhookKeyOwners.set(key, name)
    }
    teams.push({
      name,
      keys,
      advertisers: t.advertisers.includes('*') ? null : new Set(t.advertisers as number[]),
      write: t.write,
      refresh: t.refresh,
      credential: t.credential,
      rateLimit: t.rateLimit ? { max: t.rateLimit.max, windowMs: parseDuration(t.rateLimit.window) } : null,
      weight: t.weight,
      maxConcurrent: t.maxConcurrent ?? null,
      queue: t.queue ?? null,
      platformSecondsPerDay: t.platformSecondsPerDay ?? null,
      webhook: t.webhook ? { url: t.webhook.url, secret: t.webhook.secret } : null,
    })
  }
  return teams
}

// A bare date is midnight UTC; a date-time without a zone is UTC too, so that every
// replica reads the same instant whatever its TZ. Date.parse would roll 2027-02-30 over
// to March: such a date is refused instead.
export function parseExpiry(text: string): number {
  const [y, m, d] = text.slice(0, 10).split('-').map(Number) as [number, number, number]
  if (new Date(Date.UTC(y, m - 1, d)).toISOString().slice(0, 10) !== text.slice(0, 10)) return Number.NaN
  const iso = text.length === 10 ? `${text}T00:00:00` : text.replace(' ', 'T')
  return Date.parse(/(Z|[+-]\d{2}:?\d{2})$/.test(iso) ? iso : `${iso}Z`)
}
