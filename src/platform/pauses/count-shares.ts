import type { Clock } from '../../clock.js'

/**
 * The platform's count of the credential's calls, shared out by weight (docs/governor.md,
 * "The platform's count, shared out"). Laravel's `throttle:api` counts every call of a
 * token in a fixed window and writes the count on every answer (`x-ratelimit-limit`,
 * `x-ratelimit-remaining`); past it, every caller of the token is answered 429, whichever
 * team spent it. Once the platform has shown that it refuses past its count (a 429 whose
 * `x-ratelimit-remaining` is 0, with the `x-ratelimit-reset` Laravel writes on its refusal
 * alone: a 429 of another limiter says nothing of the count; nor does one naming a smaller limit than the count's, a route's
 * own limiter: `#limiterOf`), a call with its seat is sent when its team has sent fewer
 * calls in the platform's window than its share of the count, or when the count left still
 * covers what the other teams asking are owed of theirs (their shares, or PACE_HEADROOM
 * times what they asked in the platform's last window where that is less; or none is owed:
 * the platform decides, and its 429 pauses as ever); otherwise it is refused before the platform, its
 * seat going back unsent. A count the platform only writes (no such 429 yet) is not acted
 * on: a gateway that believed it would hold itself to a limit nobody enforces.
 *
 * The platform's window is read from its word: the count left rising by more than half the
 * limit between two answers is a window begun anew, with the first call it counted; a call
 * sent longer ago than the counting window is out of it whatever was read. Pure state on a
 * clock; the other replicas' teams and calls are what their records last said (`heard`,
 * count-sync.ts brings them while the count is shared out).
 */

/** The counting window: Laravel's `throttle:api` counts per minute; a 429 that says longer (its retry-after) lengthens it. */
export const COUNT_WINDOW_MS = 60_000
/** The longest counting window a 429's retry-after sets. */
const LONGEST_COUNT_WINDOW_MS = 60 * 60_000
/**
 * What a team is kept of the count past what it asked in the platform's last whole window:
 * half again (a dashboard's asks vary from window to window); a team not seen in a whole
 * window yet is kept its whole share.
 */
export const PACE_HEADROOM = 1.5
/** How often a replica that does not share the count out, where the platform writes one, looks at the other replicas' records (count-sync.ts). */
export const PEEK_MS = 10_000
/** The shortest wait a refusal tells: a retry sooner finds the same count. */
const LEAST_WAIT_MS = 1000

/** The platform's count on one answer: its calls a window, what is left of the window's, and whether the answer is the count's own refusal (`x-ratelimit-reset`, which Laravel writes only on it). */
export interface PlatformCount { limit: number; remaining: number; refusal: boolean }

/** A call let through (`seq`: its place among this replica's sends), or refused with how long its team waits to be within its share again. */
export type CountAdmission = ({ kind: 'sent' } & Sent) | { kind: 'refused'; waitMs: number }

/** A call let through: its place among this replica's sends, and when. */
export interface Sent { seq: number; at: number }
/**
 * What a replica tells the others of its count while it shares it out, times on its clock (ms):
 * when its platform window began, until when the platform refused, and each team asking
 * within the counting window (`limit`: the count it read), with its calls sent in that window, asked in it, and in its
 * last whole window (null: not seen from that window's start); `lendAsks`, its calls that
 * asked past their team's part, in this window and the last (its part of what is lent);
 * `gone`: not written again for a while (a replica that stopped): its calls and its teams' asking count, not its part.
 */
export interface CountRecord { limit: number; windowAt: number; refusedUntil: number; lendAsks: number; teams: TeamTally[]; gone?: boolean }
export interface TeamTally { team: string; sent: number; asks: number; last: number | null; askedAt: number }

/** `since`: this replica's sends when it first asked; `asks`: its calls that asked for a seat in the platform's window (refused ones too); `last`: its calls asked or sent in the platform's last window, where it asked from that window's start (null: none such yet). */
interface TeamCount { asked: number; since: number; asks: number; sent: Sent[]; last: number | null }

/** Reads the platform's count from an answer's headers: null where it writes none, or none that reads as whole numbers. */
export function platformCount(headers: Record<string, string | string[] | undefined>): PlatformCount | null {
  const [limit, remaining] = [headers['x-ratelimit-limit'], headers['x-ratelimit-remaining']]
  if (typeof limit !== 'string' || typeof remaining !== 'string' || !/^\d{1,9}$/.test(limit.trim()) || !/^\d{1,9}$/.test(remaining.trim())) return null
  const count = { limit: Number(limit), remaining: Number(remaining), refusal: headers['x-ratelimit-reset'] !== undefined }
  return count.limit > 0 && count.remaining <= count.limit ? count : null
}

export class CountShares {
  readonly #weightOf: (team: string) => number
  readonly #clock: Clock
  #limit: number | null = null
  #enforced = false
  #windowMs = COUNT_WINDOW_MS
  #seq = 0
  /** The first of this replica's calls in the platform's window, as its answers tell it, and when that call was sent. */
  #windowFrom = 0
  #windowAt = 0
  /** The other replicas' teams, their calls summed over the records heard in this platform window, and the latest refusal's end any of them read. */
  #elsewhere = new Map<string, TeamTally & { replicas: number }>()
  #elsewhereRefusedUntil = 0
  /** The other replicas heard last, and their calls that asked past their parts. */
  #replicasHeard = 0
  #elsewhereLendAsks = 0
  /** This replica's calls past their team's part: asked in this window and the last, and sent in this one. */
  #lendAsks = 0
  #lastLendAsks = 0
  #lent = 0
  /** The answer to the last-sent call answered: its place, when it was sent, and what it said was left (null: it carried no count). */
  #told: { seq: number; at: number; remaining: number | null } | null = null
  readonly #teams = new Map<string, TeamCount>()
  /** Answers with nothing left that the platform served (2xx) in its window: two say it serves past its count. */
  #servedAtZero = 0
  /** This replica's own answers said the count binds nothing (served past it): the others' records do not say otherwise, its next refusal does. */
  #servedPast = false
  /** When this replica last looked at the others' records while not sharing the count out (peekDue). */
  #peekedAt = -Infinity
  /** When the window the platform last refused in ends, as its refusal's retry-after says (epoch ms): no call of the token is served before. */
  #refusedUntil = 0

  constructor(opts: { weightOf: (team: string) => number; clock: Clock }) {
    this.#weightOf = opts.weightOf
    this.#clock = opts.clock
  }

  /** Whether the count is shared out: the platform wrote one and has refused past it. */
  get enforced(): boolean { return this.#enforced && this.#limit !== null }

  /** Whether it is time to look at the other replicas' records: the platform writes a count, this replica does not share it out, and it last looked PEEK_MS ago. */
  peekDue(): boolean {
    const now = this.#clock.now()
    if (this.enforced || this.#limit === null || now - this.#peekedAt < PEEK_MS) return false
    this.#peekedAt = now
    return true
  }

  /** This replica's record for the others (null: it does not share the count out). */
  record(): CountRecord | null {
    if (!this.enforced) return null
    const now = this.#clock.now()
    this.#forget(now)
    const teams = [...this.#teams].map(([team, t]) => ({ team, sent: t.sent.length, asks: t.asks, last: t.last, askedAt: t.asked }))
    return { limit: this.#limit as number, windowAt: this.#windowAt, refusedUntil: this.#refusedUntil, lendAsks: this.#lendAsks + this.#lastLendAsks, teams }
  }

  /**
   * The other replicas' records as last read (their times on this clock): their teams ask
   * here too, and their calls in this platform window count against their teams' shares. A
   * record whose window began half a window or more before this replica's is of the window
   * before: its teams ask, its calls are out; one whose window began half a window or more
   * after is of a window this replica has not read yet, begun anew here with its next call.
   * A replica that reads a record shares the count out as its writer does, until its own
   * answers end it (and, once they have, until its own next refusal).
   */
  heard(records: readonly CountRecord[]): void {
    const now = this.#clock.now()
    const live = records.filter((r) => r.gone !== true)
    // A replica that has read no count yet (it started) takes the others' and their window: it shares the count out from its first call.
    if (this.#limit === null && live.length > 0) {
      this.#limit = Math.max(...live.map((r) => r.limit))
      this.#windowAt = Math.max(...live.map((r) => r.windowAt))
      this.#windowFrom = this.#seq + 1
      // What this replica lent before it started again is not known: it lends nothing until the next window.
      this.#lent = Infinity
    }
    // Another replica read a window begun after this one's: this replica's next call is in it.
    const latest = Math.max(0, ...records.map((r) => r.windowAt))
    if (this.#windowAt > 0 && latest > this.#windowAt + this.#windowMs / 2) this.#windowBegan(this.#seq + 1, latest)
    this.#elsewhere = new Map()
    for (const r of records) {
      this.#elsewhereRefusedUntil = Math.max(this.#elsewhereRefusedUntil, r.refusedUntil)
      const current = r.windowAt > this.#windowAt - this.#windowMs / 2
      for (const t of r.teams) {
        if (t.askedAt <= now - this.#windowMs || (r.gone && !current)) continue
        const sum = this.#elsewhere.get(t.team) ?? { team: t.team, sent: 0, asks: 0, last: 0, askedAt: 0, replicas: 0 }
        if (current) sum.sent += t.sent
        sum.last = sum.last === null || t.last === null ? null : sum.last + t.last
        // A team asks from when it last asked anywhere, a replica that stopped too (its callers go on elsewhere): it is kept its share.
        sum.askedAt = Math.max(sum.askedAt, t.askedAt)
        // A replica that stopped sends nothing more: its asks weigh in no part, and it is no replica to split with.
        if (!r.gone) {
          if (current) sum.asks += t.asks
          sum.replicas += 1
        }
        this.#elsewhere.set(t.team, sum)
      }
    }
    this.#replicasHeard = live.length
    this.#elsewhereLendAsks = live.reduce((sum, r) => sum + r.lendAsks, 0)
    if (live.length > 0 && this.#limit !== null && !this.#servedPast) this.#enforced = true
  }

  /** A call the count does not hold back (the probe call, a pause's trial), about to be sent: counted among this replica's sends, in no team's. */
  pass(): Sent {
    this.#seq += 1
    return { seq: this.#seq, at: this.#clock.now() }
  }

  /** A call of `team` asking for a seat: how long it would wait to be let through now (ms), or null: it would be. It counts as the team's ask. */
  refusing(team: string): number | null {
    const now = this.#clock.now()
    this.#forget(now)
    const mine = this.#asking(team, now)
    mine.asks += 1
    const verdict = this.#verdict(team, mine, now)
    if (verdict === 'lent' || verdict === 'refused') this.#lendAsks += 1
    return verdict === 'held' || verdict === 'refused' ? this.#waitMs(mine, now) : null
  }

  /** A call of `team` with its seat, about to be sent: let through (counted) or refused. */
  admit(team: string): CountAdmission {
    const now = this.#clock.now()
    this.#forget(now)
    const mine = this.#asking(team, now)
    const verdict = this.#verdict(team, mine, now)
    if (verdict === 'held' || verdict === 'refused') return { kind: 'refused', waitMs: this.#waitMs(mine, now) }
    if (verdict === 'lent') this.#lent += 1
    const sent = this.pass()
    // Counted while shared out, a count's worth at most: a count the platform only writes costs no memory per call, and
    // past the count a team's calls change nothing it is judged by (its share, what it is kept).
    if (this.enforced) {
      mine.sent.push(sent)
      if (mine.sent.length > (this.#limit as number) + 1) mine.sent.shift()
    }
    return { kind: 'sent', ...sent }
  }

  /** `team`'s count, asking now: a team asking is among the teams the count is shared by. */
  #asking(team: string, now: number): TeamCount {
    const mine = this.#teams.get(team) ?? { asked: now, since: this.#seq, asks: 0, sent: [], last: null }
    this.#teams.set(team, mine)
    mine.asked = now
    return mine
  }

  /**
   * How a call of `team` now stands with the count: not shared out (free), held (the window
   * the platform refused in is not over), within its team's part of its share, lent (past it,
   * and what is left covers what the other teams are kept), or refused.
   */
  #verdict(team: string, mine: TeamCount, now: number): 'free' | 'held' | 'within' | 'lent' | 'refused' {
    if (!this.enforced) return 'free'
    if (now < this.#heldUntil()) return 'held'
    const total = this.#totalWeight()
    const share = this.#shareOf(team, total)
    if (this.#withinPart(team, mine, share) && this.#sentOf(team) < share) return 'within'
    return this.#lendable(team, total, now) ? 'lent' : 'refused'
  }

  /** A call let through never reached the platform: it is not counted. */
  unsent(team: string, seq: number): void {
    const sent = this.#teams.get(team)?.sent
    const i = sent?.findIndex((s) => s.seq === seq) ?? -1
    if (sent && i >= 0) sent.splice(i, 1)
  }

  /** The count read anew from the next answer, as a first one: the platform lowered it (credential-counts.ts), and what was read before binds nothing. */
  readAnew(): void {
    ;[this.#limit, this.#enforced, this.#servedPast, this.#refusedUntil, this.#windowMs] = [null, false, false, 0, COUNT_WINDOW_MS]
  }

  /** Whether `count` is a route's own limiter's (`#limiterOf`): its 429 refuses that route alone. */
  routeOwn(count: PlatformCount | null): boolean {
    return count !== null && this.#limiterOf(count.limit) === 'other'
  }

  /** The answer to the call `sent` (admit's or pass's): its status, the count it carried (null: none), a 429's retry-after (ms; null: none). */
  told({ seq, at }: Sent, status: number, count: PlatformCount | null, retryAfterMs: number | null): void {
    const told = this.#told
    if (told !== null && seq <= told.seq) return
    // An answer without a count says nothing of it but where the platform served the call: a route's 404 is routed before Laravel's throttle.
    if (count === null && (status < 200 || status > 299)) return
    const limiter = count === null ? 'none' : this.#limiterOf(count.limit)
    // A route's own limiter counts that route's calls alone, and its refusal is that route's (the pauses').
    if (limiter === 'other') return
    this.#told = { seq, at, remaining: count?.remaining ?? null }
    if (count === null) return
    if (limiter === 'anew' && this.#limit !== null) {
      // What was read before was another limiter's (a route's own, read first): its refusal binds
      // nothing, and the count is read from here as the first one is.
      ;[this.#enforced, this.#servedPast, this.#refusedUntil, this.#windowMs] = [false, false, 0, COUNT_WINDOW_MS]
    }
    this.#limit = count.limit
    const before = limiter === 'anew' ? null : told
    // Laravel counts from a window's first call: the call answered is the count's (limit − remaining)-th in its window.
    const first = Math.max(this.#windowFrom, seq - (count.limit - count.remaining) + 1, 1)
    if (before?.remaining == null) {
      // The first count read: a window of the platform's, whose calls the teams ask from here.
      this.#windowFrom = first
      this.#windowAt = at
      this.#servedAtZero = 0
      for (const t of this.#teams.values()) t.asks = 0
    } else if ((count.remaining > before.remaining + count.limit / 2 && before.at >= this.#windowAt) || at - this.#windowAt >= this.#windowMs) this.#windowBegan(Math.max(first, before.seq + 1), at)
    // Laravel serves one call with nothing left in a window, its last, and refuses the rest of the window: a second served
    // with nothing left, and no count left read between them (a window begun anew), says the count binds nothing.
    if (count.remaining > 0) this.#servedAtZero = 0
    else if (status >= 200 && status <= 299 && ++this.#servedAtZero >= 2) [this.#enforced, this.#servedPast] = [false, true]
    if (status !== 429 || count.remaining > 0 || !count.refusal) return
    ;[this.#enforced, this.#servedPast] = [true, false]
    this.#servedAtZero = 0
    if (retryAfterMs === null) return
    this.#refusedUntil = Math.max(this.#refusedUntil, this.#clock.now() + retryAfterMs)
    if (retryAfterMs > this.#windowMs) this.#windowMs = Math.min(LONGEST_COUNT_WINDOW_MS, retryAfterMs)
  }

  /**
   * Which limiter an answer's count of `limit` is: the token's count where it names the limit
   * read before (`same`), or where none was read or a larger one is (`anew`: Laravel's
   * `throttle:api` counts every route's calls, and a route throttled on its own besides writes
   * its own count on that route's answers only where it is the stricter); a smaller limit than
   * the count's is a route's own limiter (`other`), whose refusal (`throttle:5,1` on one route,
   * the same headers as the count's) says nothing of the token's other routes. A smaller limit
   * is not the count while the replica runs: no one answer tells a count the platform lowered
   * from a limiter of some routes, and one taken for the other held every route of the token;
   * credential-counts.ts reads a lowered count from the answers of several routes (`readAnew`).
   */
  #limiterOf(limit: number): 'same' | 'anew' | 'other' {
    if (this.#limit === limit) return 'same'
    return this.#limit !== null && limit < this.#limit ? 'other' : 'anew'
  }

  /** Each team's calls counted here and (as last heard) elsewhere, and its share, for the teams asking on any replica (tests, the status view); what is left, none below 0; until when no call is sent (the window the platform last refused in). */
  view(): { limit: number | null; enforced: boolean; windowMs: number; left: number | null; heldUntil: number; teams: { team: string; sent: number; sentElsewhere: number; share: number }[] } {
    const now = this.#clock.now()
    this.#forget(now)
    const total = this.#totalWeight()
    const left = this.#left(now)
    return {
      limit: this.#limit, enforced: this.enforced, windowMs: this.#windowMs, left: left === null ? null : Math.max(0, left), heldUntil: this.#heldUntil(),
      teams: [...this.#askingTeams()].map((team) => ({ team, sent: this.#teams.get(team)?.sent.length ?? 0, sentElsewhere: this.#elsewhere.get(team)?.sent ?? 0, share: this.#shareOf(team, total) })),
    }
  }

  /**
   * What is left of the platform's count as this replica knows it: the last-sent answered
   * call's word, less this replica's calls sent since (some of them counted in it: never more
   * than is left), and where other replicas tell, no more than the count less every replica's
   * calls in the window as last heard; null: unknown (that answer carried no count, or its
   * window is over).
   */
  #left(now: number): number | null {
    const told = this.#told
    if (told === null || told.remaining === null || told.at <= now - this.#windowMs) return null
    const fromWord = told.remaining - (this.#seq - told.seq)
    if (this.#replicasHeard === 0) return fromWord
    // The other replicas' calls since the word are not in it: what every replica sent in the window, as last heard, is.
    let sent = 0
    for (const t of this.#teams.values()) sent += t.sent.length
    for (const t of this.#elsewhere.values()) sent += t.sent
    return Math.min(fromWord, (this.#limit ?? 0) - sent)
  }

  /** The platform's window began anew with this replica's `from`-th call, by `at`: each team's calls before it are its last window's. */
  #windowBegan(from: number, at: number): void {
    for (const t of this.#teams.values()) {
      t.last = this.#windowFrom > 0 && t.since < this.#windowFrom ? Math.max(t.asks, t.sent.filter((s) => s.seq >= this.#windowFrom && s.seq < from).length) : null
      t.asks = 0
    }
    this.#windowFrom = from
    this.#windowAt = at
    this.#servedAtZero = 0
    for (const t of this.#elsewhere.values()) [t.sent, t.asks] = [0, 0]
    ;[this.#lastLendAsks, this.#lendAsks, this.#lent] = [this.#lendAsks, 0, 0]
  }

  /** Whether another call of `team`, past its share, leaves what every other team asking is still owed: its share, or half again what it asked in the last window if less, less what it sent in this one. */
  #lendable(team: string, total: number, now: number): boolean {
    let [owed, keptAll] = [0, 0]
    for (const other of this.#askingTeams()) {
      const last = this.#lastOf(other)
      const kept = Math.min(this.#shareOf(other, total), last === null ? Infinity : Math.max(1, PACE_HEADROOM * last))
      keptAll += kept
      if (other !== team) owed += Math.max(0, kept - this.#sentOf(other))
    }
    if (owed === 0) return true
    const left = this.#left(now)
    if (left !== null && left - 1 < owed) return false
    if (this.#replicasHeard === 0) return true
    // Across replicas, what no team is kept is lent in parts, each replica's by its calls that asked past their parts:
    // replicas lending at once from one word of what is left would each lend it.
    const lendable = (this.#limit ?? 0) - keptAll
    const [here, elsewhere] = [this.#lendAsks + this.#lastLendAsks, this.#elsewhereLendAsks]
    const part = here + elsewhere === 0 ? lendable / (1 + this.#replicasHeard) : (lendable * here) / (here + elsewhere)
    return this.#lent + 1 <= part + 1e-9
  }

  /** How long a refused call of a team waits: until its oldest call counted leaves the window, or what was read of the count is a window old. */
  #waitMs(team: TeamCount, now: number): number {
    if (now < this.#heldUntil()) return Math.max(LEAST_WAIT_MS, this.#heldUntil() - now)
    const ends = [team.sent[0]?.at, this.#told?.at].filter((at): at is number => at !== undefined).map((at) => at + this.#windowMs - now)
    return Math.max(LEAST_WAIT_MS, Math.min(...ends))
  }

  /** The weights of the teams that asked within the window, here or on another replica. */
  #totalWeight(): number {
    let total = 0
    for (const team of this.#askingTeams()) total += this.#weight(team)
    return total
  }

  /** The teams that asked within the window, here or on another replica (as last heard). */
  #askingTeams(): Set<string> {
    const now = this.#clock.now()
    const teams = new Set(this.#teams.keys())
    for (const [team, t] of this.#elsewhere) if (t.askedAt > now - this.#windowMs) teams.add(team)
    return teams
  }

  /**
   * Whether a call of a team is within the part of its share its calls here may send without a look at the others: the
   * share split between the replicas by what the team asked on each, in this window and the
   * last, or evenly before it asked in either (its whole share where no other replica tells
   * of it). Each replica sends within its part without waiting for the others' word, and the
   * parts add up to the share; alone, a team sends while it has sent less than its share.
   */
  #withinPart(team: string, mine: TeamCount, share: number): boolean {
    const there = this.#elsewhere.get(team)
    if (there === undefined) return mine.sent.length < share
    const lastKnown = mine.last !== null && there.last !== null
    const [here, elsewhere] = [mine.asks + (mine.last ?? 0), there.asks + (there.last ?? 0)]
    // Before the others' asks of the last window are known (a window's first COUNT_SYNC_MS, a replica new to the team), an even part:
    // this window's asks alone swing from one look to the next, and parts read at two moments need not add up to the share.
    const part = !lastKnown || elsewhere === 0 ? share / (1 + there.replicas) : (share * here) / (here + elsewhere)
    // Whole calls within the part: each replica rounding its part up would pass the share by a call a replica.
    return mine.sent.length + 1 <= part + 1e-9
  }

  /** A team's calls in the platform's window, here and on the other replicas (as last heard). */
  #sentOf(team: string): number { return (this.#teams.get(team)?.sent.length ?? 0) + (this.#elsewhere.get(team)?.sent ?? 0) }

  /** A team's calls in the last whole window, every replica's: null where one has not seen it from that window's start. */
  #lastOf(team: string): number | null {
    const [here, there] = [this.#teams.get(team), this.#elsewhere.get(team)]
    if (here?.last === null || there?.last === null) return null
    return (here?.last ?? 0) + (there?.last ?? 0)
  }

  /** Until when no call of the token is sent: the end of the window the platform last refused in, as this replica or another read it. */
  #heldUntil(): number { return Math.max(this.#refusedUntil, this.#elsewhereRefusedUntil) }

  /** A team's share of the count: the count times its weight over the weights of the teams that asked within the window (`total`). */
  #shareOf(team: string, total: number): number {
    return total > 0 ? ((this.#limit ?? 0) * this.#weight(team)) / total : 0
  }

  #weight(team: string): number { return Math.max(0, this.#weightOf(team)) }

  /** Calls out of the platform's window or past the counting window leave the count, and teams that asked nothing within it leave the shares. */
  #forget(now: number): void {
    for (const [team, t] of this.#teams) {
      while (t.sent.length > 0 && ((t.sent[0] as Sent).at <= now - this.#windowMs || (t.sent[0] as Sent).seq < this.#windowFrom)) t.sent.shift()
      if (t.asked <= now - this.#windowMs) this.#teams.delete(team)
    }
  }
}
