import { LRUCache } from 'lru-cache'

/**
 * Values bounded in bytes, each team an even part once full (maxBytes / teams configured;
 * a team not configured has none, so its values go first): room for a new value is made
 * from the least recently used values of the team most past its part, the new value's team
 * counted with it, so one team's many values push out its own, never those of a team within
 * its part. A value of a team past its part that only values of teams within their part would
 * make room for is not kept. While there is room any team may use it; with one team this is
 * one LRU. A value counts on the team it was set for, and on a team that uses it since (`get`
 * with a team). Each team's values are an LRU of their own, so making room reads only what it
 * drops.
 */
export class TeamPartsLru<V extends NonNullable<unknown>> {
  /** Each team's values, in its own order of use. */
  readonly #byTeam = new Map<string, LRUCache<string, V>>()
  /** The LRU (its team's) that holds each key. */
  readonly #where = new Map<string, LRUCache<string, V>>()
  /** The team of each LRU. */
  readonly #teamOf = new Map<LRUCache<string, V>, string>()
  readonly #o: TeamPartsOptions<V>
  /** Set while a value moves to another team's values: its leaving the first is no dispose. */
  #moving = false

  constructor(o: TeamPartsOptions<V>) {
    this.#o = o
  }

  /**
   * The value of `key`, made the most recently used; used by `team` (given), it counts on that
   * team from now on: a value counts on the team that used it last, so that another team that
   * set or used it before, then fills its own part, does not push it out.
   */
  get(key: string, team?: string): V | undefined {
    const lru = this.#where.get(key)
    if (lru === undefined) return undefined
    const value = lru.get(key)
    if (team !== undefined && value !== undefined && this.#teamOf.get(lru) !== team) this.#move(key, value, lru, team)
    return value
  }

  /** The value of `key`, its use unchanged. */
  peek(key: string): V | undefined {
    return this.#where.get(key)?.peek(key)
  }

  /**
   * Keeps `value` for `team` (the value `key` held leaves first, whichever team's; the value
   * held already is only made the most recently used), making room as the class says; false
   * when not kept.
   */
  set(key: string, value: V, team: string): boolean {
    const heldBy = this.#where.get(key)
    if (heldBy !== undefined && heldBy === this.#byTeam.get(team) && heldBy.peek(key) === value) {
      heldBy.get(key)
      return true
    }
    this.delete(key)
    const bytes = this.#o.size(value, key)
    if (!this.#makeRoom(team, bytes)) return false
    this.#lruOf(team).set(key, value, { size: bytes })
    this.#where.set(key, this.#lruOf(team))
    return true
  }

  /** The team `key`'s value counts on, while it is held. */
  teamOf(key: string): string | undefined {
    const lru = this.#where.get(key)
    return lru === undefined ? undefined : this.#teamOf.get(lru)
  }

  /** Whether `key` held a value (it leaves). */
  delete(key: string): boolean {
    return this.#where.get(key)?.delete(key) === true
  }

  /** How many values are held. */
  get size(): number {
    return this.#where.size
  }

  clear(): void {
    for (const lru of this.#byTeam.values()) lru.clear()
    this.#byTeam.clear()
    this.#teamOf.clear()
  }

  *entries(): IterableIterator<[string, V]> {
    for (const lru of this.#byTeam.values()) yield* lru.entries()
  }

  *values(): IterableIterator<V> {
    for (const lru of this.#byTeam.values()) yield* lru.values()
  }

  get bytes(): number {
    let bytes = 0
    for (const lru of this.#byTeam.values()) bytes += lru.calculatedSize
    return bytes
  }

  /** `key`'s value from `from` into `team`'s values, as their most recently used: not disposed, its size as counted. */
  #move(key: string, value: V, from: LRUCache<string, V>, team: string): void {
    const size = from.info(key)?.size ?? this.#o.size(value, key)
    this.#moving = true
    try {
      from.delete(key)
    } finally {
      this.#moving = false
    }
    const to = this.#lruOf(team)
    to.set(key, value, { size })
    this.#where.set(key, to)
  }

  #lruOf(team: string): LRUCache<string, V> {
    let lru = this.#byTeam.get(team)
    if (lru !== undefined) return lru
    lru = new LRUCache<string, V>({
      maxSize: this.#o.maxBytes,
      // `set` deletes a key's value before it sets another: every way out is here.
      dispose: (value, key) => {
        if (this.#moving) return
        this.#where.delete(key)
        this.#o.dispose?.(value)
      },
    })
    this.#byTeam.set(team, lru)
    this.#teamOf.set(lru, team)
    return lru
  }

  /** Drops the least recently used values of the team most past its part until `bytes` of `team` fit; false, dropping nothing, when only values of teams within their part would make room and `team` is past its part. */
  #makeRoom(team: string, bytes: number): boolean {
    if (bytes > this.#o.maxBytes) return false
    let short = this.bytes + bytes - this.#o.maxBytes
    if (short <= 0) return true
    const even = this.#o.maxBytes / Math.max(1, this.#o.teams())
    const part = (t: string): number => (this.#o.configured(t) ? even : 0)
    const plans = [...this.#byTeam].map(([t, lru]) => ({ t, lru, keys: lru.rkeys(), freed: 0, left: lru.size }))
    const over = (p: (typeof plans)[number]): number => p.lru.calculatedSize - p.freed + (p.t === team ? bytes : 0) - part(p.t)
    const mine = plans.find((p) => p.t === team)
    const victims: [LRUCache<string, V>, string][] = []
    while (short > 0) {
      let most: (typeof plans)[number] | undefined
      for (const p of plans) if (p.left > 0 && (most === undefined || over(p) > over(most))) most = p
      if (most === undefined) return false
      if (over(most) <= 0 && (mine === undefined ? bytes - part(team) : over(mine)) > 0) return false
      const key = most.keys.next().value as string
      const size = most.lru.info(key)?.size ?? 0
      most.left -= 1
      most.freed += size
      short -= size
      victims.push([most.lru, key])
    }
    for (const [lru, key] of victims) lru.delete(key)
    return true
  }
}

export interface TeamPartsOptions<V> {
  maxBytes: number
  /** How many teams are configured now: each has an even part once full. */
  teams: () => number
  /** Whether `team` is configured now: one that is not has no part. */
  configured: (team: string) => boolean
  /** What a value weighs against maxBytes, its key with it. */
  size: (value: V, key: string) => number
  /** Called as a value leaves (dropped, deleted, replaced, cleared). */
  dispose?: (value: V) => void
}
