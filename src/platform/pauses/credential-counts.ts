import { createHash } from 'node:crypto'
import type { Clock } from '../../clock.js'
import { COUNT_WINDOW_MS, CountShares, type PlatformCount, type Sent } from './count-shares.js'
import type { CountSync } from './count-sync.js'

/**
 * The platform's counts of one credential's calls, each shared out by weight as
 * count-shares.ts shares one: the token's count (Laravel's `throttle:api`, every route's
 * calls) and each route's own limiter (`throttle:4,10` on one route inside the api group,
 * whose answers name a smaller `x-ratelimit-limit` than the token's count: CountShares.routeOwn).
 * A route's own limiter counts every team's calls of that route in one window, as the token's
 * counts every route's: shared by nobody, one team draining it had the platform refuse that
 * route to every team. A call is sent when the token's count lets it through and, on a route
 * throttled on its own, that route's limiter does too; a call either refuses goes back unsent
 * in both. A route's limiter is made at the first answer of that route naming a smaller
 * limit than the token's count (or at a refusal taken for the route's own, below), and shared
 * out once the platform has refused past it, across replicas as the token's count is (`sync`).
 *
 * The token's count is written on every route's answers, a route's own limiter on that route's
 * alone: a limit named on one route only is not known to be the token's. The first count read
 * may be a route's own (no start probe read the token's count: `platform.probe` null, a token
 * from a login), and its refusal would hold every route of every team for that route's window
 * (up to an hour) while the platform serves them. So a refusal of a limit no answer of another
 * route has named is that route's own: it is shared out on that route, and pauses that route
 * at most. Once another route's answer names it, it is the token's count, and the route's
 * limiter read so goes (the token's count is shared out from its next refusal).
 *
 * A count the platform lowers is named smaller on every route's answers: a smaller limit than
 * the count is read as the count lowered where no answer has named the count (or a larger
 * limit) for the count's window, and since then it is the largest limit named and two routes
 * have named it. A route's own limiter names its limit on its route alone.
 */

/** Routes whose own limiters are kept; past this many, a further route's 429s pause as any route's do. */
export const MAX_ROUTE_LIMITERS = 64

/** How far apart two refusals' ends may be and still be one window's: Laravel's reset and retry-after are whole seconds. */
const SAME_SECOND_MS = 1000

/**
 * A call let through both counts: its place among the token's sends and, on a route throttled
 * on its own, among that route's (`counted`: the limiter whose place it is; a route that joined
 * another's limiter since reads its answer as a call counted from its answer, its place being
 * none of that limiter's).
 */
export interface Sends { token: Sent; route: Sent | null; counted: CountShares | null }

/** Refused: how long its team waits, and the route whose own limiter refused it (null: the token's count). */
export interface CountRefusal { waitMs: number; route: string | null }

interface RouteLimiter { counts: CountShares; sync: CountSync | null }

export interface CredentialCountsOptions {
  weightOf: (team: string) => number
  clock: Clock
  /** The count records of the token's count (`id` null) or of a route's own limiter (`id`: the route's hash) in Redis; null: without Redis. */
  sync: (counts: CountShares, id: string | null) => CountSync | null
}

export class CredentialCounts {
  readonly token: CountShares
  readonly #o: CredentialCountsOptions
  readonly #sync: CountSync | null
  readonly #routes = new Map<string, RouteLimiter>()
  /** The token's count as its answers named it: its limit, and the one route that named it (null: two or more did, it is the token's). */
  #named: { limit: number; route: string | null } | null = null
  /** When an answer last named the token's count or a larger limit, and each smaller limit named since, with the first route that named it. */
  #countNamedAt = 0
  readonly #smaller = new Map<number, string>()

  constructor(opts: CredentialCountsOptions) {
    this.#o = opts
    this.token = new CountShares({ weightOf: opts.weightOf, clock: opts.clock })
    this.#sync = opts.sync(this.token, null)
  }

  /** `route`'s own limiter as this replica shares it out (null: none known). */
  routeView(route: string): ReturnType<CountShares['view']> | null { return this.#routes.get(route)?.counts.view() ?? null }

  /** Every route's own limiter known, as this replica shares it out. */
  routeViews(): { route: string; view: ReturnType<CountShares['view']> }[] {
    return [...this.#routes].map(([route, limiter]) => ({ route, view: limiter.counts.view() }))
  }

  /** A call of `team` on `route` asking for a seat: refused now (how long it would wait, and by which count), or null. Each count it falls under counts it as its team's ask. */
  refusing(team: string, route: string): CountRefusal | null {
    const byToken = this.token.refusing(team)
    const byRoute = this.#routes.get(route)?.counts.refusing(team) ?? null
    if (byRoute !== null) return { waitMs: Math.max(byRoute, byToken ?? 0), route }
    return byToken === null ? null : { waitMs: byToken, route: null }
  }

  /** A call of `team` on `route` with its seat, about to be sent: let through both counts (counted in each), or refused. */
  admit(team: string, route: string): ({ kind: 'sent' } & Sends) | ({ kind: 'refused' } & CountRefusal) {
    const token = this.token.admit(team)
    if (token.kind === 'refused') return { kind: 'refused', waitMs: token.waitMs, route: null }
    const limiter = this.#routes.get(route)
    if (limiter === undefined) return { kind: 'sent', token, route: null, counted: null }
    const own = limiter.counts.admit(team)
    if (own.kind === 'sent') return { kind: 'sent', token, route: own, counted: limiter.counts }
    this.token.unsent(team, token.seq)
    return { kind: 'refused', waitMs: own.waitMs, route }
  }

  /** A call no count holds back (the probe call, a pause's trial) on `route`, about to be sent: counted among the sends, in no team's. */
  pass(route: string): Sends {
    const counts = this.#routes.get(route)?.counts ?? null
    return { token: this.token.pass(), route: counts?.pass() ?? null, counted: counts }
  }

  /** A call of `team` on `route` let through never reached the platform: neither count counts it. */
  unsent(team: string, route: string, sends: Sends): void {
    this.token.unsent(team, sends.token.seq)
    const counts = this.#routes.get(route)?.counts
    if (sends.route !== null && sends.counted === counts) counts.unsent(team, sends.route.seq)
  }

  /**
   * The answer to a call on `route` (sent as `sends`): the token's count hears it, and where its
   * count is a route's own limiter's, that route's limiter does too. Returns whether it is a
   * route's own (its 429 pauses that route at most).
   */
  told(sends: Sends, route: string, status: number, count: PlatformCount | null, retryAfterMs: number | null): boolean {
    if (count === null) {
      this.token.told(sends.token, status, count, retryAfterMs)
      this.#sync?.poke()
      return false
    }
    if (this.token.routeOwn(count) && this.#lowered(count.limit, route)) this.token.readAnew()
    const smaller = this.token.routeOwn(count)
    if (!smaller) {
      this.#countNamedAt = this.#o.clock.now()
      this.#smaller.clear()
    }
    const alone = !smaller && this.#namedOnlyOn(count.limit, route)
    // A refusal of a limit named on this route alone is this route's: the token's count reads the limit, not the refusal.
    this.token.told(sends.token, status, alone ? { ...count, refusal: false } : count, retryAfterMs)
    this.#sync?.poke()
    if (!smaller && !alone) return false
    // A limit named on this route alone makes no limiter of it but by its refusal: until then it is as likely the token's count.
    const limiter = smaller || (status === 429 && count.refusal) ? this.#limiter(route) : (this.#routes.get(route) ?? null)
    if (limiter === null) return true
    const refused = status === 429 && count.refusal
    // What this route's limiter read as left before its refusal: more than none, its count was spent by calls it did not count.
    const leftBefore = refused ? limiter.counts.view().left : null
    // A call sent before its route's limiter was known (or before it joined another's) is counted from its answer.
    limiter.counts.told(sends.route !== null && sends.counted === limiter.counts ? sends.route : limiter.counts.pass(), status, count, retryAfterMs)
    limiter.sync?.poke()
    if (leftBefore !== null && leftBefore > 0) this.#joinSharer(route, limiter)
    return true
  }

  /**
   * `route`, refused with count left as it read it, joins the limiter of another route that
   * names the same limit and was refused until the same second: Laravel keys a plain
   * `throttle:N,M` (or a named limiter) by the token's user, whatever the route, so two routes
   * behind one are one count of both, and each route's refusal says the one window's end. Two
   * limiters of their own refuse each route when its own calls spent it (nothing left as its
   * limiter read it), so a dashboard reading both routes at once, their windows begun in one
   * second, is not taken for one count (docs/decisions/count-shares.md).
   */
  #joinSharer(route: string, limiter: RouteLimiter): void {
    const own = limiter.counts.view()
    if (own.limit === null || own.heldUntil <= this.#o.clock.now()) return
    for (const [other, sharer] of this.#routes) {
      if (other === route || sharer === limiter) continue
      const theirs = sharer.counts.view()
      if (theirs.limit !== own.limit || Math.abs(theirs.heldUntil - own.heldUntil) > SAME_SECOND_MS) continue
      limiter.sync?.stop()
      for (const [each, held] of this.#routes) if (held === limiter) this.#routes.set(each, sharer)
      return
    }
  }

  /** Reads the other replicas' records of the token's count before any call. */
  async start(): Promise<void> {
    await this.#sync?.start()
  }

  /** Ends every exchange of records (shutdown). */
  stop(): void {
    this.#sync?.stop()
    for (const limiter of this.#routes.values()) limiter.sync?.stop()
  }

  /**
   * Whether `limit`, the token's count as read with this answer (no route's own: CountShares.routeOwn),
   * has been named on `route`'s answers alone, this one's included. Named on a second route, it
   * is the token's count: the routes' limiters read with it or a larger one were the token's
   * count read on one route, and go.
   */
  #namedOnlyOn(limit: number, route: string): boolean {
    if (this.#named === null || this.#named.limit !== limit) this.#named = { limit, route }
    else if (this.#named.route !== null && this.#named.route !== route) this.#isCount(limit)
    return this.#named.route === route
  }

  /**
   * Whether `limit`, smaller than the token's count and named now on `route`, is the count the
   * platform lowered: no answer has named the count or a larger limit for the count's window,
   * and since one did, `limit` is the largest limit named and another route named it too; if so
   * it is the count from this answer on. Laravel's plain `throttle:N,M` on two routes (one count
   * of both) reads so where the teams called those two routes alone for a whole window: its
   * refusal then holds every route until its retry-after, and the next answer naming the larger
   * count makes that the count again.
   */
  #lowered(limit: number, route: string): boolean {
    const first = this.#smaller.get(limit)
    if (first === undefined && this.#smaller.size < MAX_ROUTE_LIMITERS) this.#smaller.set(limit, route)
    if (first === undefined || first === route || [...this.#smaller.keys()].some((other) => other > limit)) return false
    if (this.#o.clock.now() - this.#countNamedAt < Math.max(COUNT_WINDOW_MS, this.token.view().windowMs)) return false
    this.#isCount(limit)
    return true
  }

  /** `limit` is the token's count, named on two routes: the routes' limiters read with it or a larger one were the count read on one route, and go. */
  #isCount(limit: number): void {
    this.#named = { limit, route: null }
    for (const [route, limiter] of this.#routes) {
      if ((limiter.counts.view().limit ?? 0) < limit) continue
      limiter.sync?.stop()
      this.#routes.delete(route)
    }
  }

  /** `route`'s own limiter, made at its first answer `told` gives it; null past MAX_ROUTE_LIMITERS. */
  #limiter(route: string): RouteLimiter | null {
    const known = this.#routes.get(route)
    if (known !== undefined) return known
    if (this.#routes.size >= MAX_ROUTE_LIMITERS) return null
    const counts = new CountShares({ weightOf: this.#o.weightOf, clock: this.#o.clock })
    const limiter = { counts, sync: this.#o.sync(counts, createHash('sha256').update(route).digest('base64url').slice(0, 16)) }
    this.#routes.set(route, limiter)
    return limiter
  }
}
