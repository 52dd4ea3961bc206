import type { IncomingHttpHeaders } from 'node:http'
import type { TeamConfig } from '../config.js'
import { ForbiddenError, UnauthorizedError } from '../errors.js'
import { hashApiKey, presentedKey } from './api-keys.js'

// Known keys are remembered so that a hit does not hash the key again; unknown keys are
// always hashed (and never remembered), and the map is bounded.
const KNOWN_KEYS_MAX = 10_000

export class TeamDirectory {
  #byHash = new Map<string, TeamConfig>()
  #byKey = new Map<string, TeamConfig>()

  constructor(teams: TeamConfig[]) {
    for (const team of teams) for (const hash of team.keyHashes) this.#byHash.set(hash, team)
  }

  /** The team whose key the request headers present; throws 401 otherwise. */
  authenticate(headers: IncomingHttpHeaders): TeamConfig {
    const key = presentedKey(headers)
    if (key === null) throw new UnauthorizedError()
    const known = this.#byKey.get(key)
    if (known) return known
    const team = this.#byHash.get(hashApiKey(key))
    if (!team) throw new UnauthorizedError()
    if (this.#byKey.size >= KNOWN_KEYS_MAX) this.#byKey.clear()
    this.#byKey.set(key, team)
    return team
  }
}

// Contract, "Calling it": reads are GET calls and POST calls whose path ends in /get.
export function isRead(method: string, path: string): boolean {
  if (method === 'GET' || method === 'HEAD') return true
  return method === 'POST' && /\/get\/?$/.test(path)
}

export function assertMayCall(team: TeamConfig, method: string, path: string): void {
  if (!isRead(method, path) && !team.write) {
    throw new ForbiddenError(`team ${team.name} may not send writes (${method} ${path})`)
  }
}

export function assertMayUseAccount(team: TeamConfig, account: number): void {
  if (team.advertisers !== null && !team.advertisers.has(account)) {
    throw new ForbiddenError(`team ${team.name} may not use advertiser ${account}`)
  }
}
