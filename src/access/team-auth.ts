import type { IncomingHttpHeaders } from 'node:http'
import type { TeamConfig, TeamKey } from '../config.js'
import { BadRequestError, ForbiddenError, KeyExpiredError, KeyFormError, KeyReplacedError, UnauthorizedError } from '../errors.js'
import type { KeyLifetime } from '../observe/metrics.js'
import { MADE_KEY_CHARS, hashApiKey, keyFormProblem, presentedKeys } from './api-keys.js'
import { keyCandidates } from '../observe/key-shape.js'
import { systemClock } from '../clock.js'
import { webhookSecretSpellings } from '../config/webhook-secret.js'
import { shownPath } from '../observe/caller-text.js'

/** Who a request's key names: the team, and which of its keys. */
export interface Identity {
  team: TeamConfig
  key: TeamKey
}

// Known keys are remembered so that a hit does not hash the key again; unknown keys are
// always hashed (and never remembered), and the map is bounded.
const KNOWN_KEYS_MAX = 10_000
// Key lengths other than a made key's, each one more hash of a key-shaped text's lead: a few.
const KNOWN_LENGTHS_MAX = 8

/**
 * The teams' keys. `replace` swaps them whole (a reload) and forgets every
 * remembered key with them, so a revoked key is refused from the next request on.
 */
export class TeamDirectory {
  #teams: TeamConfig[] = []
  #byName = new Map<string, TeamConfig>()
  #byHash = new Map<string, Identity>()
  #byKey = new Map<string, Identity>()
  /** The lengths of the keys read here other than a made key's: a key leading other key characters is found at them (holdsKey). */
  readonly #lengths = new Set<number>()
  #replaced: (() => void)[] = []
  readonly #now: () => number

  constructor(teams: TeamConfig[], now: () => number = systemClock.now) {
    this.#now = now
    this.replace(teams)
  }

  get teams(): readonly TeamConfig[] {
    return this.#teams
  }

  /** A running team by its name; undefined once a reload removed it. */
  teamOf(name: string): TeamConfig | undefined {
    return this.#byName.get(name)
  }

  /** A running team's weight in its credential's queue of platform calls. */
  weightOf(name: string): number | undefined {
    return this.#byName.get(name)?.weight
  }

  /** A running team's webhook (its ended report jobs are pushed there); null: none. */
  webhookOf(name: string): TeamConfig['webhook'] {
    return this.#byName.get(name)?.webhook ?? null
  }

  /** A running team's bound of platform-seconds a UTC day; null: none (or no such team). */
  platformSecondsPerDayOf(name: string): number | null {
    return this.#byName.get(name)?.platformSecondsPerDay ?? null
  }

  /** A running team's own bulkhead, where its config sets one. */
  limitsOf(name: string): { maxConcurrent: number | null; queue: number | null } | undefined {
    return this.#byName.get(name)
  }

  /**
   * Each running key that has an end: seconds until it, negative once it has passed. A
   * rotated key (one with a successor) is left out: it is on its way out on purpose, and
   * its successor carries on, so no alert on its end asks for a new key.
   */
  keyLifetimes(): KeyLifetime[] {
    const now = this.#now()
    return this.#teams.flatMap((team) => team.keys.flatMap((key) => (key.expiresAt === null || key.successor !== null ? [] : [{ team: team.name, key: key.id, secondsLeft: (key.expiresAt - now) / 1000 }])))
  }

  replace(teams: TeamConfig[]): void {
    const byHash = new Map<string, Identity>()
    for (const team of teams) for (const key of team.keys) byHash.set(key.hash, { team, key })
    this.#teams = teams
    this.#byName = new Map(teams.map((t) => [t.name, t]))
    this.#byHash = byHash
    this.#byKey = new Map()
    for (const fn of this.#replaced) fn()
  }

  /** Calls `fn` after each replace (a reload applied). */
  onReplace(fn: () => void): void {
    this.#replaced.push(fn)
  }

  /** Whether `text` is a running team's webhook secret, whole or in another spelling the log scrubs (webhookSecretSpellings). */
  isWebhookSecret(text: string): boolean {
    return this.#teams.some((team) => team.webhook !== null && webhookSecretSpellings(team.webhook.secret).includes(text))
  }

  /**
   * Whether `text` holds a running team's key (one made by `npm run keys`, KEY_PREFIX first),
   * anyone's: as a thing shaped like a key, or leading one (`<key>x`, `<key>-`: more key
   * characters after it, which the key's shape takes in), as long as a made key
   * (MADE_KEY_CHARS) or as a key this replica has read a call with.
   */
  holdsKey(text: string): boolean {
    for (const candidate of keyCandidates(text)) {
      if (this.#known(candidate)) return true
      if (candidate.length > MADE_KEY_CHARS && this.#known(candidate.slice(0, MADE_KEY_CHARS))) return true
      for (const length of this.#lengths) if (candidate.length > length && this.#known(candidate.slice(0, length))) return true
    }
    return false
  }

  #known(candidate: string): boolean {
    return this.#byKey.has(candidate) || this.#byHash.has(hashApiKey(candidate))
  }

  /** The team and key of `key`, remembered once known; undefined for no team's key. */
  #find(key: string): Identity | undefined {
    let found = this.#byKey.get(key)
    if (!found) {
      found = this.#byHash.get(hashApiKey(key))
      if (!found) return undefined
      if (this.#byKey.size >= KNOWN_KEYS_MAX) this.#byKey.clear()
      this.#byKey.set(key, found)
      if (key.length !== MADE_KEY_CHARS && this.#lengths.size < KNOWN_LENGTHS_MAX) this.#lengths.add(key.length)
    }
    return found
  }

  /** The team and key the request headers present; throws 401 otherwise. */
  authenticate(headers: IncomingHttpHeaders): Identity {
    const { apiKey, bearer } = presentedKeys(headers)
    const key = apiKey ?? bearer
    const found = key === null ? undefined : this.#find(key)
    if (!found) throw refusal(headers)
    // x-api-key is read first; another team key beside it is refused rather than passed
    // over: a proxy before the gateway that allows or counts by the Bearer key would have
    // read another caller than the one served. A Bearer that is no key (a sign-on proxy's own) is not one.
    if (apiKey !== null && bearer !== null && bearer !== apiKey && this.#find(bearer)) {
      throw new BadRequestError('x-api-key, authorization: two team keys given; send one (the keys are not shown)')
    }
    return this.#inForce(found)
  }

  /** The team whose key the headers present, while it runs (authenticate would pass them); null for none, an unknown or an expired one. */
  runningTeam(headers: IncomingHttpHeaders): string | null {
    try {
      return this.authenticate(headers).team.name
    } catch {
      return null
    }
  }

  /**
   * The running team and key of a call admitted earlier, as they are now: a call answered,
   * or sent to the platform, after its admission (a wait for a seat, for the platform, for
   * a body, for a job) is refused as a new call with its key would be: 401 once a reload
   * removed the key or gave it to another team, or once it expired or its grace ended.
   */
  current(admitted: Identity): Identity {
    const found = this.#byHash.get(admitted.key.hash)
    if (!found || found.team.name !== admitted.team.name) throw new UnauthorizedError()
    return this.#inForce(found)
  }

  /** `found` while its key is in force; its expiry's or its rotation's 401 otherwise. */
  #inForce(found: Identity): Identity {
    const end = keyEnd(found.key)
    if (end !== null && this.#now() >= end) {
      const { id, successor } = found.key
      const at = new Date(end).toISOString()
      throw successor === null ? new KeyExpiredError(id, at) : new KeyReplacedError(id, successor, at, successor)
    }
    return found
  }
}

/** The 401 of headers that present no running key: what is wrong with their form when a slip shows (a scheme not read, quotes, a placeholder). */
function refusal(headers: IncomingHttpHeaders): Error {
  const problem = keyFormProblem(headers)
  return problem === null ? new UnauthorizedError() : new KeyFormError(problem)
}

/** From when a key is refused: its expiry, or the end of its grace when it has a successor, whichever comes first; null: never. */
export function keyEnd(key: TeamKey): number | null {
  const ends = [key.expiresAt, key.successor === null ? null : key.graceUntil].filter((t): t is number => t !== null)
  return ends.length === 0 ? null : Math.min(...ends)
}

// Contract, "Calling it": reads are GET calls and POST calls whose path ends in /get.
export function isRead(method: string, path: string): boolean {
  if (method === 'GET' || method === 'HEAD') return true
  return method === 'POST' && /\/get\/?$/.test(path)
}

export function assertMayCall(team: TeamConfig, method: string, path: string): void {
  if (!isRead(method, path) && !team.write) {
    throw new ForbiddenError(`team ${team.name} may not send writes (${method} ${shownPath(path)}): its settings let it read only; send writes with a key of a team that may write (write: true), which the gateway's operators give`)
  }
}

export function assertMayUseAccount(team: TeamConfig, account: number): void {
  if (team.advertisers !== null && !team.advertisers.has(account)) throw advertiserRefusal(team, String(account))
}

/**
 * The 403 of an advertiser (`shown`: as the caller's text is shown) outside the team's list,
 * saying what to do. Its words are the same whether the advertiser is another team's or none
 * of the platform's: they tell nothing of other teams. A team whose list is empty (`npm run
 * keys -- new` without --advertisers writes `[]`) may use none: its caller is told so, not
 * that this one advertiser is another's.
 */
export function advertiserRefusal(team: TeamConfig, shown: string): InstanceType<typeof ForbiddenError> {
  const why = team.advertisers?.size === 0
    ? 'its settings name no advertiser (advertisers: []); an operator lists the ids it may use in its advertisers'
    : `a team's keys use only the advertisers its settings list; ask the gateway's operators to add it to team ${team.name}'s advertisers`
  return new ForbiddenError(`team ${team.name} may not use advertiser ${shown}: ${why}`)
}
