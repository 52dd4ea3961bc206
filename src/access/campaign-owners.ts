import { LRUCache } from 'lru-cache'
import type { Config } from '../config.js'
import { UpstreamError } from '../errors.js'
import type { PlatformClient } from '../platform/client/platform-client.js'
import type { TokenProvider } from '../platform/tokens/token-provider.js'
import type { RedisBreaker } from '../redis/breaker.js'
import type { RedisClient } from '../redis/client.js'
import type { RedisSeal } from '../redis/seal.js'
import { SingleFlight } from '../cache/single-flight.js'
import { ownRequestId } from '../observe/request-id.js'
import { systemClock } from '../clock.js'
import { redisKey } from '../redis/keys.js'
import { GATEWAY_TEAM } from '../platform/gateway-team.js'

// Advertisers whose lists one replica keeps in memory.
const LISTS_IN_MEMORY = 10_000

interface CampaignList {
  ids: ReadonlySet<number>
  fetchedAt: number
}

/** A list of an account's objects other than its campaigns, read as the campaign list is. */
export interface OwnedList {
  /** What it is (`creative set list`): in errors, and (dashed) in its Redis keys. */
  name: string
  path: string
}

export interface CampaignOwnersDeps {
  config: Config
  client: PlatformClient
  redis: RedisClient | null
  breaker: RedisBreaker | null
  /** Seals the lists kept in Redis; null: none kept there (redis-parts.ts). */
  seal: RedisSeal | null
  /** A list in Redis without this gateway's seal for its key, read as none (`key`: its Redis key). */
  onUnverified?: (key: string) => void
  now?: () => number
  /** Absent: the campaign list (`ownership.listPath`). */
  list?: OwnedList
}

/**
 * Which advertiser owns a campaign: a campaign id does not say whose it is,
 * and a parent token reads every child's campaigns by id. Learned from the platform's
 * campaign list, one advertiser at a time, kept in memory and in Redis for `ttl`.
 * Given another list (`list`: an account's creative sets), the owners of its objects,
 * learned the same way with the same settings (`ownership`).
 *
 * A list decides what a scoped team may name, and Redis is shared, not trusted: a list
 * is kept there sealed for its key (RedisSeal), and one without that seal (written by
 * another hand, or copied from another advertiser's key) is read as none, so the
 * platform's list is asked. Without a seal no list is kept in Redis.
 */
export class CampaignOwners {
  readonly #d: CampaignOwnersDeps
  readonly #lists: LRUCache<string, CampaignList>
  readonly #loads = new SingleFlight<CampaignList>()
  readonly #now: () => number
  // Lists a successful write may have changed: their next unknown id reloads at once.
  readonly #written = new Set<string>()

  readonly #name: string
  readonly #path: string
  readonly #keyPart: string

  constructor(deps: CampaignOwnersDeps) {
    this.#d = deps
    this.#now = deps.now ?? systemClock.now
    this.#lists = new LRUCache({ max: LISTS_IN_MEMORY })
    this.#name = deps.list?.name ?? 'campaign list'
    this.#path = deps.list?.path ?? deps.config.ownership.listPath
    // The campaign lists keep the keys they always had; another list's carry its name.
    this.#keyPart = deps.list ? `${deps.list.name.replaceAll(' ', '-')}:` : ''
  }

  /**
   * The owner, among `advertisers`, of each campaign id; ids none of them owns are
   * missing from the map. An id not found reloads the lists once (a campaign created
   * since), no more often than `refreshMinInterval` per advertiser but at once after a
   * write of theirs: that reload serves the team that named the id, `team`, and is its
   * call (its usage, its share of the platform), not the gateway's own, so that a writer
   * alternating a write and an id no list holds spends its own share on every page of its
   * accounts' lists, not the seats `(gateway)` shares with every team.
   */
  async ownersAmong(provider: TokenProvider, advertisers: Iterable<number>, ids: readonly number[], team: string): Promise<Map<number, number>> {
    const candidates = [...advertisers]
    const owners = new Map<number, number>()
    if (ids.length === 0 || candidates.length === 0) return owners
    const lists = await Promise.all(candidates.map((a) => this.#list(provider, a, null)))
    this.#match(candidates, lists, ids, owners)
    if (owners.size === ids.length) return owners
    const reloaded = await Promise.all(candidates.map((a) => this.#list(provider, a, team)))
    this.#match(candidates, reloaded, ids, owners)
    return owners
  }

  /**
   * A scoped team's write for this advertiser succeeded (a campaign created, say): the
   * next id its list lacks reloads it without waiting for `refreshMinInterval`, so a
   * team can act on a campaign it has just made.
   */
  written(provider: TokenProvider, advertiser: number): void {
    this.#written.add(this.#keyOf(provider, advertiser))
  }

  /**
   * The key of `advertiser`'s list read with `provider`'s token: the credential and the
   * account its token acts for now (TokenProvider.accountDigest). A list another account's
   * token loaded (that credential's token before a PUT /admin/token or a rollout) answers
   * for that account only: the one now loads its own, rather than a scoped team getting a
   * 403 for an id its list lacked until it reloads.
   */
  #keyOf(provider: TokenProvider, advertiser: number): string {
    return `${this.#keyPart}${provider.name}:${provider.accountDigest}:${advertiser}`
  }

  #match(candidates: number[], lists: CampaignList[], ids: readonly number[], owners: Map<number, number>): void {
    for (const id of ids) {
      const at = lists.findIndex((list) => list.ids.has(id))
      if (at !== -1) owners.set(id, candidates[at] as number)
    }
  }

  // A list loaded for one team serves them all: its first load (once per `ttl`) is the
  // gateway's own call (GATEWAY_TEAM in usage and in the governor), not the team's that
  // asked first. A reload (`reloadFor`: the team whose call named an id the list lacks) is
  // that team's call.
  async #list(provider: TokenProvider, advertiser: number, reloadFor: string | null): Promise<CampaignList> {
    const { ttlMs, refreshMinIntervalMs } = this.#d.config.ownership
    const reload = reloadFor !== null
    const key = this.#keyOf(provider, advertiser)
    const now = this.#now()
    const known = this.#lists.get(key)
    const floor = reload ? (this.#written.has(key) ? 0 : refreshMinIntervalMs) : ttlMs
    if (known && now - known.fetchedAt < floor) return known
    if (reload) this.#written.delete(key)
    return this.#loads.run(`${key}:${reload ? 'reload' : 'read'}`, async () => {
      const shared = reload ? null : await this.#readShared(key)
      if (shared && this.#now() - shared.fetchedAt < ttlMs) {
        this.#lists.set(key, shared)
        return shared
      }
      const list = { ids: await this.#fetch(provider, advertiser, reloadFor ?? GATEWAY_TEAM), fetchedAt: this.#now() }
      this.#lists.set(key, list)
      await this.#writeShared(key, list)
      return list
    })
  }

  async #fetch(provider: TokenProvider, advertiser: number, team: string): Promise<Set<number>> {
    const { perPage, maxPages, fields } = this.#d.config.ownership
    const what = `${this.#name} of advertiser ${advertiser}`
    const ids = new Set<number>()
    for (let page = 1, last = 1; page <= last; page++) {
      const reply = await this.#d.client.json(provider, {
        method: 'POST',
        url: `${this.#path}?per_page=${perPage}&page=${page}`,
        body: JSON.stringify({ userId: advertiser }),
        requestId: ownRequestId('ownership'),
      }, team)
      // An account outside the credential's tree owns nothing the gateway could let through.
      if (reply.status === 403 || reply.status === 404) return ids
      if (reply.status !== 200) throw new UpstreamError(`${what}: status ${reply.status}`)
      const rows = at(reply.json, fields.data)
      if (!Array.isArray(rows)) throw new UpstreamError(`${what}: no ${fields.data} array in the reply`)
      for (const row of rows) {
        const id = at(row, fields.id)
        const owner = at(row, fields.userId)
        // A row another account owns (should the platform list children too) is not this advertiser's.
        if (owner !== undefined && Number(owner) !== advertiser) continue
        if (typeof id === 'number' && Number.isSafeInteger(id)) ids.add(id)
        else if (typeof id === 'string' && /^\d{1,15}$/.test(id)) ids.add(Number(id))
      }
      const lastPage = Number(at(reply.json, fields.lastPage) ?? 1)
      last = Number.isSafeInteger(lastPage) && lastPage >= 1 ? lastPage : 1
      if (last > maxPages) throw new UpstreamError(`${what} has more than ${maxPages} pages`)
    }
    return ids
  }

  async #readShared(key: string): Promise<CampaignList | null> {
    const { redis, breaker, seal } = this.#d
    if (!redis || !breaker || !seal) return null
    const where = this.#redisKey(key)
    const sealed = await breaker.run(() => redis.get(where), null)
    if (!sealed) return null
    const text = seal.openText(where, sealed)
    const list = text === null ? null : parseList(text)
    if (list === null) this.#d.onUnverified?.(where)
    return list
  }

  async #writeShared(key: string, list: CampaignList): Promise<void> {
    const { redis, breaker, seal, config } = this.#d
    if (!redis || !breaker || !seal) return
    const where = this.#redisKey(key)
    const text = seal.sealText(where, JSON.stringify({ ids: [...list.ids], fetchedAt: list.fetchedAt }))
    await breaker.run(() => redis.set(where, text, 'PX', config.ownership.ttlMs), null)
  }

  #redisKey(key: string): string {
    return redisKey.owner(this.#d.config.redis.keyPrefix, key)
  }
}

/** The owners of creative sets, from `ownership.creativeSets.listPath`; null unless its check is `lookup`. */
export function creativeSetOwners(deps: Omit<CampaignOwnersDeps, 'list'>): CampaignOwners | null {
  const { listPath } = deps.config.ownership.creativeSets
  return listPath === null ? null : new CampaignOwners({ ...deps, list: { name: 'creative set list', path: listPath } })
}

/** A list as #writeShared writes it; null when it is not one. */
function parseList(text: string): CampaignList | null {
  try {
    const stored = JSON.parse(text) as { ids?: unknown; fetchedAt?: unknown }
    if (!Array.isArray(stored.ids) || !stored.ids.every((id) => Number.isSafeInteger(id)) || typeof stored.fetchedAt !== 'number') return null
    return { ids: new Set(stored.ids as number[]), fetchedAt: stored.fetchedAt }
  } catch {
    return null
  }
}

/** The value at a dot path (`meta.last_page`) of a JSON value. */
function at(value: unknown, path: string): unknown {
  let current = value
  for (const part of path.split('.')) {
    if (typeof current !== 'object' || current === null) return undefined
    current = (current as Record<string, unknown>)[part]
  }
  return current
}
