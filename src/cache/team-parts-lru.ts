import { LRUCache } from 'lru-cache'

/**
 * Values bounded in bytes, each team an even part once full (maxBytes / teams configured;
 * a team not configured has none, so its values go first). A value counts, whole, on every
 * team that holds it: the team it was set for, and each team that uses it since (`get` with
 * a team; a value set in place of another keeps the teams that held the one it replaces).
 * Room for a new value is made from the least recently used values of the team most past its
 * part, the new value's team counted with it: that team lets go of them, and a value leaves
 * once no team holds it. So one team's many values push out its own, never a value a team
 * within its part holds, whoever set or used it first or last. A value of a team past its
 * part that only values of teams within their part would make room for is not kept. While
 * there is room any team may use it; with one team this is one LRU. Each team holds its
 * values in an LRU of its own, so making room reads only what it lets go of.
 */
export class TeamPartsLru<V extends NonNullable<unknown>> {
  /** Each team's values (their sizes), in its own order of use. */
  readonly #byTeam = new Map<string, LRUCache<string, number>>()
  /** Each value held, its size, and the LRUs (teams) that hold it (a few: an array reads fastest). */
  readonly #held = new Map<string, Held<V>>()
  readonly #o: TeamPartsOptions<V>
  /** The bytes of the values held, each once. */
  #bytes = 0

  constructor(o: TeamPartsOptions<V>) {
    this.#o = o
  }

  /** The value of `key`, made the most recently used of the teams that hold it; used by `team` (given), of that team alone, which holds it from now on. */
  get(key: string, team?: string): V | undefined {
    const held = this.#held.get(key)
    if (held === undefined) return undefined
    if (team !== undefined) this.#hold(key, held, this.#lruOf(team))
    else for (const lru of held.holders) lru.get(key)
    return held.value
  }

  /** The value of `key`, its use unchanged. */
  peek(key: string): V | undefined {
    return this.#held.get(key)?.value
  }

  /**
   * Keeps `value` for `team` (the value `key` held leaves first, and the teams that held it
   * hold this one; the value held already is only made the most recently used of `team`),
   * making room as the class says; false when not kept.
   */
  set(key: string, value: V, team: string): boolean {
    const before = this.#held.get(key)
    if (before !== undefined && before.value === value) {
      this.#hold(key, before, this.#lruOf(team))
      return true
    }
    const teams = before === undefined ? [] : [...before.holders]
    this.delete(key)
    const size = this.#o.size(value, key)
    if (!this.#makeRoom(team, size)) return false
    const held: Held<V> = { value, size, holders: [] }
    this.#held.set(key, held)
    this.#bytes += size
    for (const lru of [...teams, this.#lruOf(team)]) this.#hold(key, held, lru)
    return true
  }

  /** Whether `key` held a value (it leaves, whichever teams held it). */
  delete(key: string): boolean {
    const held = this.#held.get(key)
    if (held === undefined) return false
    for (const lru of held.holders.slice()) lru.delete(key)
    return true
  }

  /** How many values are held. */
  get size(): number {
    return this.#held.size
  }

  clear(): void {
    for (const lru of this.#byTeam.values()) lru.clear()
    this.#byTeam.clear()
  }

  /** The values held, the most recently set first (copies shared again after an outage: the newest first). */
  *entries(): IterableIterator<[string, V]> {
    for (const [key, held] of [...this.#held].reverse()) yield [key, held.value]
  }

  *values(): IterableIterator<V> {
    for (const held of this.#held.values()) yield held.value
  }

  /** The bytes of the values held, each counted once (the teams' counts add up to more where they share values). */
  get bytes(): number {
    return this.#bytes
  }

  /** `lru`'s team holds `key`'s value, as its most recently used. */
  #hold(key: string, held: Held<V>, lru: LRUCache<string, number>): void {
    if (held.holders.includes(lru)) {
      lru.get(key)
      return
    }
    held.holders.push(lru)
    lru.set(key, held.size, { size: held.size })
  }

  #lruOf(team: string): LRUCache<string, number> {
    const lru = this.#byTeam.get(team)
    if (lru !== undefined) return lru
    const made = new LRUCache<string, number>({
      // A team holds each value once: what it holds never passes the values held.
      maxSize: this.#o.maxBytes,
      // Every way a team lets go of a value is here; the value leaves with its last team.
      dispose: (_size, key) => {
        const held = this.#held.get(key)
        const at = held?.holders.indexOf(made) ?? -1
        if (held === undefined || at < 0) return
        held.holders.splice(at, 1)
        if (held.holders.length > 0) return
        this.#held.delete(key)
        this.#bytes -= held.size
        this.#o.dispose?.(held.value)
      },
    })
    this.#byTeam.set(team, made)
    return made
  }

  /** Lets go of the least recently used values of the team most past its part until `bytes` of `team` fit; false, letting go of nothing, when only values of teams within their part would make room and `team` is past its part. */
  #makeRoom(team: string, bytes: number): boolean {
    if (bytes > this.#o.maxBytes) return false
    let short = this.#bytes + bytes - this.#o.maxBytes
    if (short <= 0) return true
    const even = this.#o.maxBytes / Math.max(1, this.#o.teams())
    const part = (t: string): number => (this.#o.configured(t) ? even : 0)
    const plans = [...this.#byTeam].map(([t, lru]) => ({ t, lru, keys: lru.rkeys(), freed: 0, left: lru.size }))
    const over = (p: (typeof plans)[number]): number => p.lru.calculatedSize - p.freed + (p.t === team ? bytes : 0) - part(p.t)
    const mine = plans.find((p) => p.t === team)
    const victims: [LRUCache<string, number>, string][] = []
    // The teams let go of each value planned so far: it leaves, and frees its bytes, with the last.
    const letGo = new Map<string, number>()
    while (short > 0) {
      let most: (typeof plans)[number] | undefined
      for (const p of plans) if (p.left > 0 && (most === undefined || over(p) > over(most))) most = p
      if (most === undefined) return false
      if (over(most) <= 0 && (mine === undefined ? bytes - part(team) : over(mine)) > 0) return false
      const key = most.keys.next().value as string
      const held = this.#held.get(key)
      const size = held?.size ?? 0
      most.left -= 1
      most.freed += size
      const teams = (letGo.get(key) ?? 0) + 1
      letGo.set(key, teams)
      if (teams >= (held?.holders.length ?? 0)) short -= size
      victims.push([most.lru, key])
    }
    for (const [lru, key] of victims) lru.delete(key)
    return true
  }
}

interface Held<V> {
  value: V
  size: number
  holders: LRUCache<string, number>[]
}

export interface TeamPartsOptions<V> {
  maxBytes: number
  /** How many teams are configured now: each has an even part once full. */
  teams: () => number
  /** Whether `team` is configured now: one that is not has no part. */
  configured: (team: string) => boolean
  /** What a value weighs against maxBytes, its key with it. */
  size: (value: V, key: string) => number
  /** Called as a value leaves (no team holds it any more: dropped, deleted, replaced, cleared). */
  dispose?: (value: V) => void
}
