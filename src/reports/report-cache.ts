import type { Readable } from 'node:stream'
import type { Logger } from 'pino'
import { untilOperatorsAct, upstreamError, type PlatformClient } from '../platform/client/platform-client.js'
import type { PlatformAnswers } from '../platform/client/answer-buffer.js'
import type { Config } from '../config.js'
import type { Metrics } from '../observe/metrics.js'
import type { TokenProvider } from '../platform/tokens/token-provider.js'
import { ANY_ADVERTISER, type CacheEntry, type FilledBy } from '../cache/cache-entry.js'
import { SingleFlight, type FillFailure, type FillLease, type ReplicaLock } from '../cache/single-flight.js'
import type { TieredStore, Tier as StoreTier } from '../cache/tiered-store.js'
import { reportCacheKey } from './cache-key.js'
import { fetchReport, type FetcherDeps, type FetchResult } from './report-fetcher.js'
import { CallerGroup, CallersGoneError, ownRefusal, type HangUp, type QueueTeam } from '../platform/client/caller-group.js'
import type { CanonicalReport } from './report-query.js'
import type { TeamUsage } from '../observe/usage.js'
import { PlatformAuthError, PlatformRefusedError, PlatformTimeSpentError, UpstreamError, UpstreamTimeoutError } from '../errors.js'
import { isTransient, transient } from '../platform/client/transient.js'
import { TeamPartsLru } from '../cache/team-parts-lru.js'
import { ClassLatencies } from './class-latencies.js'
import { NoIdleSeatError, type Priority } from '../platform/governor/seat.js'
import { PRIORITIES } from '../platform/governor/fair-queue.js'
import { entryBytes } from '../perf/kept-bytes.js'
import { steppedTimers } from '../perf/stepped-timers.js'
import { systemClock, type Clock, type Timers } from '../clock.js'
import { FailureLog } from '../observe/failure-log.js'
import { errorType, type Trace } from '../observe/tracing.js'
import { BUDGET_EVERY_MS, budgetAsks, demandOf, expectedAsks, leadLatency, ownAsks, priorOf, refreshAheadStart, refreshLead, rescheduledStart, type AskCount, type ClassLatency, type Demand } from './refresh-ahead.js'
import { workClass } from './work-class.js'
import { CallTurns } from './call-turns.js'
import { ownRequestId } from '../observe/request-id.js'

export type CacheStatus = 'HIT' | 'MISS' | 'STALE' | 'REFRESH' | 'BYPASS'

/**
 * Why a read went on to the platform (RFC 9211's `fwd`): it found no copy, a copy too old
 * to serve, or the caller asked for a fresh one; `collapsed`: it waited for another
 * read's call (joined a fill under way here, or another replica's).
 */
export interface Forward {
  reason: 'uri-miss' | 'stale' | 'request'
  collapsed: boolean
}

/**
 * What a report read answers: an entry, or the platform's answer passed through uncached;
 * `upstreamMs`: how long the platform call it waited for took (the access log), absent
 * when none was made for it; `forward`: why it went to the platform, absent when a copy
 * answered it without (a hit, fresh or stale).
 */
export type CacheResult = (
  | { kind: 'entry'; entry: CacheEntry; status: 'HIT' | 'MISS' | 'STALE' | 'REFRESH' }
  | { kind: 'pass'; status: number; headers: Record<string, string>; body: Buffer }
  | { kind: 'stream'; headers: Record<string, string>; stream: Readable; gzipped: boolean; length: number }
) & {
  upstreamMs?: number
  forward?: Forward
  platformMs?: number
  /** The account of the token the platform call that answered it was sent with (FetchResult's); absent: a copy, or another replica's call. */
  account?: string
}
export type Tier = StoreTier | 'platform'

/** `platformMs`: the platform time (seat-time, ms) of the call this replica made for it, absent when it made none. */
/** `work`: the work class of the call made (work-class.ts), built once for it; none when no call was made here. */
export type FillResult = FetchResult & { fromPeer?: boolean; taken?: boolean; upstreamMs?: number; platformMs?: number; work?: string }

/** A copy found by a lookup, and the tier it came from. */
export type Lookup = { entry: CacheEntry; tier: StoreTier }

/** Whom a read's platform calls count for (usage per team). */
export interface CallTally {
  team: { name: string }
  /** Platform calls made for this read; a waiter on another's call makes none. */
  platformCalls: number
  /** Their platform time (seat-time, ms, each try counted), added as each ends: what a read that failed still held the platform. */
  platformMs?: number
}

/** A tally of its own for a read of `team` that made no call yet (a background ask, a waiter, a job). */
export function teamTally(team: string): CallTally {
  return { team: { name: team }, platformCalls: 0 }
}

export interface ReadOptions {
  /** The caller asked for a fresh copy (REFRESH). */
  refresh: boolean
  tally: CallTally
  requestId: string
  /** The caller's team: its place in the credential's queue of platform calls. */
  team: string
  /** The caller's hang-up, watched only when the read waits for a platform call (its callers' group). */
  hangUp?: HangUp
  /** Throws the caller's refusal once it may no longer be answered (its key removed, its report's accounts out of its team's scope): a fill no other caller waits for is then not sent. */
  admitted?: () => void
  log: Pick<Logger, 'warn'>
  /** The fill this caller already joined (`joinCold`), which ended in no entry: read it rather than fill. */
  joined?: Promise<FillResult>
  /** The copy already looked up for this caller (`lookup`), not fresh; null: none anywhere. */
  found?: Lookup | null
  /** 'warm': a warm-up's read, whose platform call waits behind every other; 'job': a report job's, after its team's callers (default 'caller'). */
  priority?: Priority
  /** The request's span (tracing on): the lookup and the wait for a fill are spans within it. */
  trace?: Trace
  /**
   * Seconds until the caller's team may make platform calls again (its platform-seconds of
   * the day are spent, teams.<name>.platformSecondsPerDay); 0: it may. While it may not, a
   * copy is answered however old (to its stale-if-error end), and nothing else.
   */
  spentFor?: () => number
}

/** Who a platform call is made for; `hangUp`: when all who wait for it have gone; `queue`: whose queue it waits in. */
/** The ms of a call's platform time charged to the teams of its earlier tries, and the team of the last of those. */
interface Charged {
  ms: number
  tally: CallTally
}

type Origin = Pick<ReadOptions, 'requestId' | 'team' | 'tally' | 'trace'> & { hangUp?: AbortSignal; queue?: QueueTeam; background?: boolean; urgency?: () => number; admitted?: (seatedOn?: string) => void }
/**
 * Who asks for a fill: a caller's read, or a background refresh (no hang-up), at its
 * priority. A refresh ahead wants a copy newer than `newerThan`, and waits for a seat
 * by its `urgency` among the other refreshes ahead; a caller's forced refresh (`refresh`)
 * wants one younger than cache.refreshMinAge.
 */
type Asker = Pick<ReadOptions, 'requestId' | 'team' | 'tally' | 'hangUp' | 'admitted' | 'priority' | 'trace'> & Partial<Pick<ReadOptions, 'refresh'>> & { ahead?: { newerThan: number; urgency: () => number } }

/** How often the copy of one key fetched at `fetchedAt` (and the copies before it, `priorOf`) was asked for, and its refresh ahead. */
interface Watch extends AskCount {
  filled: number
  fetchedAt: number
  freshUntil: number
  /** The scheduled refresh, or null, and when it is due (epoch ms). */
  timer: unknown
  dueAt: number
  /** The class latencies' version (`#latencyVersion`) that start was last read with. */
  leadRead: number
  /** A refresh of this copy is under way, or done: later asks start none. */
  running: boolean
  report: CanonicalReport
  /** The report's work class: whose latency sets when its refresh starts. */
  work: string
  provider: TokenProvider
  /**
   * The team its refresh is sent for and charged to while it may still spend (else another
   * that asked the copy: `#payer`), and whose budget weighs it: the team
   * that asked this copy most (asks its fill answered aside), the first such at a tie; until
   * one has, the team whose ask began the watch. The refresh exists because of the copy's
   * asks: a team that reads a report over and over pays for keeping it fresh, not the team
   * that filled it or asked it first.
   */
  team: string
  /** This copy's asks by team, those its fill answered aside (at most one a configured team), in the order each reached its count. */
  askedBy: Map<string, number>
  /** The team last in `askedBy` (its latest asker), if still there: its next ask keeps its place. */
  lastAsker: string | undefined
}

// Keys watched for refresh ahead, the most recently asked first, each team an even part once
// full (a watch counts on every team that asked it: one team's many misses push out its
// own watches, never a popular report's of a team within its part, whoever asked it first or last). A watch keeps its report,
// as big as the URL it came from (a 15 KB query, and its key material): bounded by the
// bytes it keeps, as the memos of URLs are; bounded by count, 50,000 watches of
// unique 15 KB reports would hold 2 GB (46 KB each, measured). A popular report is asked
// again long before it falls out.
const WATCHED_BYTES = 16 * 1024 * 1024

// Work classes whose latency is kept for refresh ahead, each team's own (each configured team an
// even part once full) and any team's (reports/class-latencies.ts): one team's many report
// shapes push out its own classes, never another team's (its least recently used first).
export const LATENCY_CLASSES = 512

export interface ReportCacheDeps {
  config: Config
  store: TieredStore
  lock: ReplicaLock | null
  metrics: Metrics
  log: Logger
  client: PlatformClient
  answers: PlatformAnswers
  usage: TeamUsage
  /** The token providers by credential name: what a refresh ahead noted on the fast path calls with. */
  tokens: { get(credential: string): TokenProvider }
  clock?: Clock
  /** The refresh ahead's timers; default stepped timers on the clock. */
  timers?: Timers
  /** Where a stale copy served for a failed platform call is logged (a flood summed up). */
  failures?: FailureLog
  /** This replica's id: an entry it fills says so (GET /admin/cache/entry). */
  replica: string
  /** Seconds until `team` may make platform calls again (its platform-seconds of the UTC day spent, teams.<name>.platformSecondsPerDay); 0: it may. None: no team's day is bounded. */
  spentFor?: (team: string, now: number) => number
  /** How many teams are configured now, and whether a team is one: each configured team has an even part of the watches once they are full (`#watches`); default one team. */
  teams?: () => number
  configured?: (team: string) => boolean
}

/**
 * The report read path of docs/design.md: L1 → L2 → one coalesced platform call, with
 * stale-while-revalidate and stale-if-error.
 */
export class ReportCache {
  readonly #d: ReportCacheDeps
  readonly #flights = new SingleFlight<FillResult>()
  // Who waits on each flight in this process: a queued fill nobody waits for is dropped.
  readonly #callers = new Map<string, CallerGroup<CallTally>>()
  // The flights a caller's read started having found no copy anywhere (a cold miss): a
  // caller arriving meanwhile would find none either and wait for it, so the fast path
  // may join it without going through `read` (a stampede's waiters).
  readonly #cold = new WeakSet<CallerGroup<CallTally>>()
  // When each flight's fill was asked, and the accounts of its report: a purge of them made
  // since (the platform may have read its figures before it) leaves it to the callers that
  // joined it before, and a read asked after the purge asks the platform anew (#overtaken).
  readonly #fillAsked = new WeakMap<CallerGroup<CallTally>, Pick<CacheEntry, 'fetchedAt' | 'advertiserIds'>>()
  // The span of each flight a traced read started (tracing on): a trace of the gateway's own,
  // linked to the wait of each read on this replica that waits for it (#tracedFill).
  readonly #fillSpans = new WeakMap<CallerGroup<CallTally>, Trace>()
  readonly #clock: Clock
  // Report calls' starts and completions, one per event-loop iteration, the teams in turn.
  readonly #turns = new CallTurns()
  readonly #hitL1: { inc(): void }
  // Labelled metric children are looked up once per label set, not on every request.
  readonly #counters = new Map<string, { inc(): void }>()
  readonly #timers: Timers
  readonly #watches: TeamPartsLru<Watch>
  // The latency of each work class's platform calls, the wait for a seat included: when a refresh ahead starts.
  // On the gateway's clock, the one its copies' freshness and asks are on: the rule weighs the latency against
  // the freshness, so a machine's slowness the clock does not see (a test's clock standing still) is no latency.
  readonly #latencies: ClassLatencies
  // The same of each class's refreshes ahead alone: they wait for a seat behind their team's callers' calls (`leadLatency`).
  readonly #aheadLatencies: ClassLatencies
  // Counts the latencies learned: a scheduled refresh's start is read again (its lead priced at the rate then) only once one was learned since (an L1 hit skips it).
  #latencyVersion = 0
  readonly #failures: FailureLog
  /** Per team, the fewest asks in one freshness that qualify its reports for refresh ahead within its budget, and when they were worked out. */
  #budget = { at: -Infinity, asks: new Map<string, number>() }
  // Who filled an entry, one object per team shared by the entries it filled here.
  readonly #fillers = new Map<string, FilledBy>()
  // What every report call's fetch is given, made once: its settings do not change while
  // the gateway runs, and each call's copy would be kept for as long as it waits for a seat.
  readonly #fetching: FetcherDeps

  constructor(deps: ReportCacheDeps) {
    this.#d = deps
    this.#clock = deps.clock ?? systemClock
    this.#failures = deps.failures ?? new FailureLog({ log: deps.log, clock: this.#clock })
    this.#hitL1 = deps.metrics.cacheRequests.child({ result: 'HIT', tier: 'l1' })
    const { config } = deps
    this.#fetching = {
      timeoutMs: config.platform.timeoutMs,
      maxEntryBytes: config.cache.maxEntryBytes,
      reportFields: config.cache.reportFields,
      answers: deps.answers,
      log: deps.log,
      ttl: { ...config.cache.ttl, ...config.cache },
      now: () => this.#clock.now(),
      turns: this.#turns,
    }
    const timers = deps.timers ?? steppedTimers(this.#clock)
    this.#timers = timers
    this.#watches = new TeamPartsLru<Watch>({
      maxBytes: WATCHED_BYTES,
      teams: deps.teams ?? (() => 1),
      configured: deps.configured ?? (() => true),
      // The provider is one per credential, shared by every watch: not kept by one.
      size: ({ provider: _shared, ...kept }, key) => entryBytes(kept, key),
      dispose: (w) => timers.clear(w.timer),
    })
    const classes = () => new ClassLatencies({ max: LATENCY_CLASSES, teams: deps.teams ?? (() => 1), configured: deps.configured ?? (() => true) })
    this.#latencies = classes()
    this.#aheadLatencies = classes()
  }

  async start(): Promise<void> {
    await this.#d.lock?.start()
    await this.#d.store.start()
  }

  /** No refresh ahead starts after this. */
  close(): void {
    this.#watches.clear()
  }

  /**
   * Resolves once every fill under way has ended: stored and announced, or, aborted at the
   * end of the shutdown's grace, its lock let go for a waiter on another replica to take
   * over. A background refresh has no caller to keep the listener open for it.
   */
  settled(): Promise<void> {
    return this.#flights.settled()
  }

  /** The account a credential's token acts for now (TokenProvider.account): a cache key holds it. */
  accountOf(credential: string): string {
    return this.#d.tokens.get(credential).account
  }

  /**
   * Whether `key` is a key of `credential`'s report as `account` (by default the one its token acts for now): that
   * account's, or the release before's, which held no account (a report job asked before the upgrade; its record
   * outlives the upgrade by its result's life at most).
   */
  isKeyOf(key: string, credential: string, report: CanonicalReport, account = this.accountOf(credential)): boolean {
    return key === this.keyFor(credential, report, account) || key === this.keyFor(credential, report, null)
  }

  /** The cache key of a report read with a credential's token, for `account` (by default the one that token acts for now; null: the release before's key, which held none). */
  keyFor(credential: string, report: CanonicalReport, account: string | null = this.accountOf(credential)): string {
    const { config } = this.#d
    return reportCacheKey({ credential, account, report }, { prefix: config.redis.keyPrefix, version: config.cache.keyVersion })
  }

  /**
   * A report read (docs/design.md, "How a report read flows"): L1, then L2, then one coalesced
   * platform call; what to answer, not the answer itself. Throws the GW_* error to
   * answer when the platform failed and no stale copy may be served.
   */
  async read(report: CanonicalReport, key: string, provider: TokenProvider, opts: ReadOptions): Promise<CacheResult> {
    // A forced refresh is a platform call: a team that spent its day's platform time is answered from the cache as any read.
    const refresh = opts.refresh === true && !((opts.spentFor?.() ?? 0) > 0)
    let stale: { entry: CacheEntry; tier: Tier } | null = null
    let found = opts.found
    if (found === undefined) {
      const looking = opts.trace?.step('cache.lookup')
      found = await this.lookup(key, opts.team)
      if (looking) endLookup(looking, found, this.#clock.now())
    }
    if (found && this.purgedFor(found.entry, report, key)) found = null
    if (found) {
      const now = this.#clock.now()
      if (refresh) {
        // A forced refresh of a copy younger than cache.refreshMinAge is answered with that copy.
        if (this.#young(found.entry, now)) {
          this.#asked(key, found.entry, report, provider, opts.team, now)
          return this.#served(found.entry, 'HIT', found.tier)
        }
      } else {
        if (now < found.entry.freshUntil) {
          this.#asked(key, found.entry, report, provider, opts.team, now)
          return this.#served(found.entry, 'HIT', found.tier)
        }
        const paused = this.#d.client.paused(provider.name, report.path)
        const spent = (opts.spentFor?.() ?? 0) > 0
        if (now < found.entry.staleUntil) {
          if (!paused && !spent) this.#refreshInBackground(key, report, provider, opts)
          return this.#served(found.entry, 'STALE', found.tier)
        }
        // The platform has paused the credential or the report's route (a 429), or the team
        // spent its day's platform time: its copy now rather than a wait or a refusal.
        if ((paused || spent) && now < found.entry.errorUntil) return this.#served(found.entry, 'STALE', found.tier)
      }
      stale = found
    }
    // A read arriving while a fill of its key is under way waits for that fill: collapsed
    // (unless a purge overtook that fill: #fill).
    const joining = opts.joined !== undefined || (this.#flights.has(key) && !this.#overtaken(key))
    // A read that joins no fill would make a platform call: not for a team that spent its day's.
    const spentFor = joining ? 0 : (opts.spentFor?.() ?? 0)
    if (spentFor > 0) throw Object.assign(new PlatformTimeSpentError(opts.team, spentFor), { retryAfterSec: spentFor })
    // The wait for the copy: this read's own platform call, another read's here, or another replica's.
    const waiting = opts.trace?.step('cache.fill')
    // A refresh must not be answered with the copy it asked to bypass.
    const result = await (opts.joined ?? this.#fill(key, report, provider, waiting ? { ...opts, trace: waiting } : opts, refresh ? this.#clock.now() : 0, stale === null && !refresh))
    const forward: Forward = { reason: refresh ? 'request' : stale ? 'stale' : 'uri-miss', collapsed: joining || result.fromPeer === true }
    if (waiting) {
      waiting.set({ 'gateway.fill.source': result.fromPeer ? 'replica' : joining ? 'joined' : 'own', 'gateway.fill.result': result.kind })
      waiting.end(result.kind === 'failed' ? result.error.code : undefined)
    }
    const account = result.kind === 'entry' || result.kind === 'pass' ? result.account : undefined
    const upstream = { forward, ...(result.upstreamMs === undefined ? {} : { upstreamMs: result.upstreamMs }), ...(result.platformMs === undefined ? {} : { platformMs: result.platformMs }), ...(account === undefined ? {} : { account }) }
    switch (result.kind) {
      case 'entry':
        this.#asked(key, result.entry, report, provider, opts.team, this.#clock.now(), true, result.work)
        return { ...this.#served(result.entry, refresh ? 'REFRESH' : 'MISS', result.fromPeer ? 'l2' : 'platform'), ...upstream }
      case 'pass':
        this.#count('BYPASS', 'platform')
        return { kind: 'pass', status: result.status, headers: result.headers, body: result.body, ...upstream }
      case 'oversize':
        return { ...(await this.#oversize(result, report, key, provider, opts)), forward }
      case 'failed': {
        // This read joined a refresh ahead that found no idle seat: it makes its own call.
        // A job's own read that found none goes back to its queue (jobs/job-runner.ts).
        if (result.error.cause instanceof NoIdleSeatError && opts.priority !== 'job') return this.read(report, key, provider, opts)
        stale ??= refresh ? await this.#d.store.lookup(key) : null
        if (stale && this.#clock.now() < stale.entry.errorUntil) {
          // A copy still fresh (a forced refresh's, or the one another replica stored meanwhile)
          // is a hit with its own age and a positive ttl (RFC 9211) whatever became of the call.
          const fresh = this.#clock.now() < stale.entry.freshUntil
          const kind = fresh ? 'fresh' : 'stale'
          this.#failures.warn(result.error.code, { log: opts.log, msg: `platform failed; serving a ${kind} copy`, err: result.error }, `${kind} copy served`)
          return { ...this.#served(stale.entry, fresh ? 'HIT' : 'STALE', stale.tier), ...upstream }
        }
        // Nobody is left to answer (the access log says 499, no error is logged), or this
        // caller may no longer be answered: its refusal (a fill no caller waited for is not sent).
        if (droppedInQueue(result.error)) {
          opts.admitted?.()
          throw result.error.cause
        }
        if (result.response && result.response.status === 429) {
          this.#count('BYPASS', 'platform')
          return { kind: 'pass', ...result.response, ...upstream }
        }
        // A fill refused in the queues of several teams: this caller's team's own refusal.
        const own = ownRefusal(result.error, opts.team)
        throw own === undefined ? result.error : upstreamError(own)
      }
    }
  }

  /**
   * Whether a purge after `entry`'s fill reaches it by an advertiser its reader knows it
   * holds and its index lacks: a copy is indexed under the advertisers its filler knew (a
   * POST report by campaign ids, filled by an unrestricted team: ANY_ADVERTISER, which the
   * store's own check reaches), and a team limited to some advertisers knows the owners of
   * the campaigns it names. A reader that knows none (ANY_ADVERTISER) leaves it to the
   * copy's index. A purge is final.
   */
  purgedFor(entry: CacheEntry, report: CanonicalReport, key: string): boolean {
    const known = report.advertiserIds.filter((id) => id !== ANY_ADVERTISER)
    for (const id of known) if (!entry.advertiserIds.includes(id)) return this.#d.store.purged({ fetchedAt: entry.fetchedAt, advertiserIds: known }, key)
    return false
  }

  /** A fresh L1 entry, without a promise: what a read's decision answers at once; read for `team`, it counts on that team's part of L1. */
  freshInMemory(key: string, now: number, team?: string): CacheEntry | null {
    return this.#d.store.freshInMemory(key, now, team)
  }

  /** The best copy of `key` and its tier (the store's lookup): `read`'s first step, and the entrance before the router's; read for `team`, its L1 copy counts on that team. */
  lookup(key: string, team?: string): Promise<Lookup | null> {
    return this.#d.store.lookup(key, team)
  }

  purgeAll(): Promise<number> {
    return this.#d.store.purgeAll()
  }

  purgeAdvertiser(advertiserId: number): Promise<number> {
    return this.#d.store.purgeAdvertiser(advertiserId)
  }

  /** Whether a purge after `copy`'s fill reaches it: a copy kept outside the cache (a job's result) is served by the same rule as an entry. */
  purged(copy: Pick<CacheEntry, 'fetchedAt' | 'advertiserIds'>, key: string): boolean {
    return this.#d.store.purged(copy, key)
  }

  /** Drops one report's entry (its cache key) on every replica. */
  purgeKey(key: string): Promise<number> {
    return this.#d.store.purgeKey(key)
  }

  /** What purgeKey would drop now (a dry run). */
  wouldPurgeKey(key: string): Promise<number> {
    return this.#d.store.countKey(key)
  }

  /** What each tier holds of one key, read without changing anything. */
  inspect(key: string): Promise<{ l1: CacheEntry | null; l2: CacheEntry | null }> {
    return this.#d.store.inspect(key)
  }

  /** What a purge would drop now (a dry run), counted as the purge counts what it dropped. */
  wouldPurge(advertiserId?: number): Promise<number> {
    return advertiserId === undefined ? this.#d.store.countAll() : this.#d.store.countAdvertiser(advertiserId)
  }

  /** The fill of a cold miss of `key` under way in this process, if there is one. */
  coldFlight(key: string): Promise<FillResult> | null {
    const group = this.#callers.get(key)
    return (group !== undefined && this.#cold.has(group) && !group.signal.aborted && !this.#overtaken(key) && this.#flights.running(key)) || null
  }

  /** Whether the fill of `key` under way was asked before a purge that reaches its report. */
  #overtaken(key: string): boolean {
    const group = this.#callers.get(key)
    const asked = group === undefined ? undefined : this.#fillAsked.get(group)
    return asked !== undefined && this.#d.store.purged(asked, key)
  }

  /**
   * A team waits for this replica's fill of `key` on another replica (`OnJoined`): the
   * fill, while it waits for a seat, waits for one of that team's too. It stays the
   * team's ask until the fill ends: the other replica's callers are not seen hanging up here.
   * A fill sent on that team's seat once its first caller left is charged to that team.
   */
  joinedElsewhere(key: string, team: string, priority: string, fillSpan?: string): void {
    const known = PRIORITIES.find((p) => p === priority)
    const group = this.#callers.get(key)
    if (known !== undefined) group?.join(undefined, team, known, undefined, teamTally(team))
    // The other replica's fill span waits for this one's: linked to it, as that replica links its own.
    if (group !== undefined && fillSpan !== undefined) this.#fillSpans.get(group)?.linkElsewhere(fillSpan)
  }

  /**
   * Counts a caller among those waiting for `flight`, the cold fill of `key` its decision
   * found (`coldFlight`), as a read that found no copy joins it: the platform call waits for
   * it (hang-ups, whose queue, `runs`: whether the caller may still be answered), and may be
   * charged to it (`tally`; none: its team's alone) when it is sent for it. False, joining
   * nothing, when that fill is no longer one to join: every caller it had left since (it is
   * being dropped), or it ended. The read then goes on as a read that found no fill, and
   * fills anew: joined, it would be answered as one that left.
   */
  joinCold(key: string, flight: Promise<FillResult>, team: string, hangUp: HangUp, priority: Priority = 'caller', runs?: () => boolean, tally: CallTally = teamTally(team)): boolean {
    if (this.coldFlight(key) !== flight) return false
    this.#callers.get(key)!.join(hangUp, team, priority, runs, tally)
    return true
  }

  /**
   * Counts an entry answered outside `read` (a read's decision, access/read-decision.ts,
   * and the entrance before the router): a hit from `tier`, or a joined cold fill's MISS
   * (`tier` l2 when another replica filled it), at `now`; and the ask for refresh ahead.
   */
  countServed(key: string, entry: CacheEntry, status: 'HIT' | 'MISS', tier: Tier, report: CanonicalReport, credential: string, team: string, now: number): void {
    if (status === 'HIT' && tier === 'l1') this.#hitL1.inc()
    else this.#count(status, tier)
    if (this.#d.config.cache.refreshAhead) this.#asked(key, entry, report, credential, team, now, status === 'MISS')
  }

  /**
   * Refresh ahead (docs/refresh-ahead.md, reports/refresh-ahead.ts): an ask for a fresh copy
   * counts towards its report's rate; once the report is expected to be asked often enough
   * in one freshness, one background refresh is scheduled to start the latency of its class
   * before the copy expires (at once when that is now), that start read again at each later
   * ask with the class's latency then (`rescheduledStart`). A copy asked for less often is left
   * to expire (refreshed when asked, stale-while-revalidate); the new copy is watched anew,
   * its predecessors' asks carried on for the rate (`priorOf`). `filled`: the ask was answered
   * by the fill that made the copy (a MISS), not counted towards the copy's own refresh;
   * `work`: that fill's work class, when it made the call here.
   */
  #asked(key: string, entry: CacheEntry, report: CanonicalReport, provider: TokenProvider | string, team: string, now: number, filled = false, work?: string): void {
    if (!this.#d.config.cache.refreshAhead) return
    if (now >= entry.freshUntil) return
    let watch = this.#watches.get(key, team)
    if (!watch || watch.fetchedAt !== entry.fetchedAt) {
      if (watch && watch.fetchedAt > entry.fetchedAt) return
      // The copies before count over the parts of their freshness they were served in, the older less.
      const prior = priorOf(watch, entry.fetchedAt)
      watch = { fetchedAt: entry.fetchedAt, freshUntil: entry.freshUntil, asks: 0, filled: 0, ...prior, timer: null, dueAt: 0, leadRead: -1, report, work: watch?.work ?? work ?? workClass(report), running: false, provider: typeof provider === 'string' ? this.#d.tokens.get(provider) : provider, team, askedBy: new Map(), lastAsker: undefined }
      this.#watches.set(key, watch, team)
    }
    watch.asks += 1
    if (filled) watch.filled += 1
    else countAsker(watch, team)
    if (watch.running || (watch.timer !== null && watch.leadRead === this.#latencyVersion)) return
    const freshMs = entry.freshUntil - entry.fetchedAt
    const asks = expectedAsks(ownAsks(watch), now - entry.fetchedAt, freshMs)
    const minAsks = watch.timer === null ? this.#budgetAsks(watch.team, now) : 0
    // Read to a later start the asks are fewer: under the fewest now, no start (refreshAheadStart), and no lead to price.
    if (asks < minAsks) return
    watch.leadRead = this.#latencyVersion
    const lead = refreshLead(this.#leadLatency(watch.work, watch.team), freshMs, asks)
    // A scheduled refresh's start is read again with its lead now: a burst's seat waits learned since move it earlier.
    const start = watch.timer === null ? refreshAheadStart(entry, watch, lead, now, minAsks) : rescheduledStart(entry, watch.dueAt, lead)
    if (start === null) return
    this.#timers.clear(watch.timer)
    watch.timer = null
    const w = watch
    if (now >= start) this.#refreshAhead(key, w)
    else {
      w.dueAt = start
      w.timer = this.#timers.set(() => this.#refreshAhead(key, w), start - now)
    }
  }

  /**
   * The budget's fewest asks (reports/refresh-ahead.ts `budgetAsks`) for `team`, over the
   * reports it watches for that team: each team's refreshes are weighed against its own
   * calls, so another team's misses do not widen them. Worked out every BUDGET_EVERY_MS.
   */
  #budgetAsks(team: string, now: number): number {
    if (now - this.#budget.at >= BUDGET_EVERY_MS) {
      const byTeam = new Map<string, Demand[]>()
      for (const w of this.#watches.values()) {
        const demands = byTeam.get(w.team) ?? byTeam.set(w.team, []).get(w.team)!
        demands.push(demandOf(w, w, this.#leadLatency(w.work, w.team), now))
      }
      this.#budget = { at: now, asks: new Map([...byTeam].map(([name, demands]) => [name, budgetAsks(demands)])) }
    }
    return this.#budget.asks.get(team) ?? Infinity
  }

  #refreshAhead(key: string, watch: Watch): void {
    watch.timer = null
    // A fill of this key is under way here (a caller's REFRESH, a stale read's): it is the refresh.
    if (this.#flights.has(key) || this.#watches.get(key) !== watch) return
    const outcomes = this.#d.metrics.refreshAhead
    const team = this.#payer(watch)
    // No team that asked the copy may spend (each is past its platform-seconds of the day): it
    // is answered from the cache only, without a refresh. Not running: a later ask starts it.
    if (team === undefined) {
      outcomes.inc({ outcome: 'skipped' })
      return
    }
    watch.running = true
    outcomes.inc({ outcome: 'started' })
    const tally = teamTally(team)
    const ahead = { newerThan: watch.fetchedAt, urgency: () => this.#urgency(watch) }
    this.#fill(key, watch.report, watch.provider, { requestId: ownRequestId('refresh-ahead', String(watch.fetchedAt)), team, tally, priority: 'ahead', ahead }, 0).then(
      (result) => {
        if (result.kind === 'entry') outcomes.inc({ outcome: result.fromPeer ? 'skipped' : 'completed' })
        else if (result.kind === 'failed' && result.error.cause instanceof NoIdleSeatError) {
          outcomes.inc({ outcome: 'skipped' })
          // Displaced or out of time in the queue: the next ask of the copy tries again.
          watch.running = false
        } else {
          outcomes.inc({ outcome: 'failed' })
          if (result.kind === 'failed') this.#d.log.warn({ err: result.error }, 'refresh ahead of a report failed')
          if (result.kind === 'oversize' && !result.taken) {
            result.taken = true
            result.answer.release()
          }
        }
      },
      (err: unknown) => {
        outcomes.inc({ outcome: 'failed' })
        this.#d.log.warn({ err }, 'refresh ahead of a report failed')
      },
    )
  }

  /**
   * The team `watch`'s refresh ahead is sent for and charged to: its own team while that may
   * still spend (it asked the copy most, `countAsker`), else the team that asked the copy most
   * among those that may, the first to reach that count at a tie (as `countAsker` keeps the
   * watch's team at a tie); none when no team that asked it may
   * (each past its platform-seconds of the day). A team past its day is answered from the
   * cache only and makes no platform call, but the copy is shared: its asks do not keep the
   * other readers' refresh from being made.
   */
  #payer(watch: Watch): string | undefined {
    const now = this.#clock.now()
    const spends = (team: string) => !((this.#d.spentFor?.(team, now) ?? 0) > 0)
    return spends(watch.team) ? watch.team : mostAsked(watch, spends)
  }

  /**
   * How much a refresh ahead of `watch`'s copy matters now: how often the copy is asked
   * (asks a second since it was fetched), more the sooner it expires; past its freshness,
   * its ask rate alone. The most asked copies nearest their end are refreshed first.
   */
  #urgency(watch: Watch): number {
    const now = this.#clock.now()
    const rate = watch.asks / Math.max(1, (now - watch.fetchedAt) / 1000)
    return rate / (1 + Math.max(0, (watch.freshUntil - now) / 1000))
  }

  #refreshInBackground(key: string, report: CanonicalReport, provider: TokenProvider, origin: Asker): void {
    if (this.#flights.has(key)) return
    this.#fill(key, report, provider, { requestId: origin.requestId, team: origin.team, tally: origin.tally, priority: 'swr' }, 0).then(
      (result) => {
        // Nobody reads this answer: its bytes go back to the answers' budget.
        if (result.kind === 'oversize' && !result.taken) {
          result.taken = true
          result.answer.release()
        }
      },
      (err: unknown) => this.#d.log.warn({ err }, 'background refresh of a report failed'),
    )
  }

  /**
   * One platform call per key in this process, and with Redis one across replicas.
   * A waiter on another replica's fill accepts only an entry fetched at `notBefore` or later.
   */
  #fill(key: string, report: CanonicalReport, provider: TokenProvider, from: Asker, notBefore: number, cold = false): Promise<FillResult> {
    let callers = this.#callers.get(key)
    // Every caller of the fill under way left, and it is being dropped: an asker arriving now
    // waits for its end and fills anew (joined, it would be answered as one that left). A
    // fill a purge overtook is waited for too, and filled anew: its figures may be older
    // than the purge this asker came after.
    const overtaken = callers !== undefined && this.#overtaken(key)
    const ending = callers?.signal.aborted === true || overtaken ? this.#flights.running(key) : undefined
    if (ending) return ending.then((result) => (overtaken || (result.kind === 'failed' && droppedInQueue(result.error)) ? this.#fill(key, report, provider, from, notBefore, cold) : result))
    if (!callers) {
      callers = new CallerGroup<CallTally>()
      this.#callers.set(key, callers)
      this.#fillAsked.set(callers, { fetchedAt: this.#clock.now(), advertiserIds: report.advertiserIds })
      if (cold) this.#cold.add(callers)
    }
    // A background refresh (no hang-up) keeps the call; a caller's read may drop it.
    callers.join(from.hangUp, from.team, from.priority ?? 'caller', from.admitted && runs(from.admitted), from.tally)
    if (from.trace) this.linkFill(key, from.trace)
    const group = callers
    const origin: Origin = {
      requestId: from.requestId, team: from.team, tally: from.tally, hangUp: callers.signal, queue: callers, ...(from.ahead ? { background: true, urgency: from.ahead.urgency } : {}),
      // Before each wait for a seat and once it is had: not sent when no caller still waits for it; charged to the caller it is sent for.
      admitted: (seatedOn) => {
        group.admitted()
        origin.tally = group.chargedTo(seatedOn) ?? origin.tally
        origin.team = origin.tally.team.name
      },
    }
    const lock = this.#d.lock
    return this.#flights.run(key, () => this.#tracedFill(group, provider, from, origin, () => (lock ? this.#shared(lock, key, report, provider, from, origin, notBefore) : this.#solo(key, report, provider, origin))), this.#forget(key, callers))
  }

  /**
   * `fill()` in a span of its own when a traced read starts it: a trace of the gateway's own
   * (Trace.shared), linked to that read's wait, in which the platform call is made and named
   * to the platform (`traceparent`). The copy is every team's: no caller's trace reaches the
   * platform on it, as no caller's request id does (docs/decisions/report-fill-headers.md).
   */
  #tracedFill(group: CallerGroup<CallTally>, provider: TokenProvider, from: Asker, origin: Origin, fill: () => Promise<FillResult>): Promise<FillResult> {
    if (from.trace === undefined) return fill()
    const span = from.trace.shared('report.fill', { 'gateway.credential': provider.name, 'gateway.request_id': from.requestId })
    this.#fillSpans.set(group, span)
    origin.trace = span
    return fill().then(
      (result) => {
        span.set({ 'gateway.fill.result': result.kind })
        span.end(result.kind === 'failed' ? result.error.code : undefined)
        return result
      },
      (err: unknown) => {
        span.end(errorType(err))
        throw err
      },
    )
  }

  /** Links the wait of a read (`span`) and the span of the fill of `key` it joined on this replica, when that fill has one. */
  linkFill(key: string, span: Trace): void {
    const group = this.#callers.get(key)
    if (group !== undefined) this.#fillSpans.get(group)?.link(span)
  }

  /**
   * What forgets `group`, the callers of `key`'s fill, once the fill has ended (unless
   * another group took its place; a read joining the fill has the same group): made apart
   * from `#fill`, so that what waits for the fill keeps the key and the group, not
   * everything the fill was started with.
   */
  #forget(key: string, group: CallerGroup<CallTally>): () => void {
    return () => {
      if (this.#callers.get(key) === group) this.#callers.delete(key)
    }
  }

  /**
   * The key a filled copy is kept under: that of the account its call was sent for
   * (`result.account`), which is `key`'s unless the credential's token was replaced by one
   * of another account between the fill's ask and its send (a wait for a seat, a 401 sent
   * again with the token in use). Kept under `key`, such a copy would serve the other
   * account's figures to the first account once its token is back.
   */
  #keptUnder(key: string, report: CanonicalReport, provider: TokenProvider, result: Extract<FillResult, { kind: 'entry' }>): string {
    return result.account === undefined || this.isKeyOf(key, provider.name, report, result.account) ? key : this.keyFor(provider.name, report, result.account)
  }

  /** A fill without Redis: the copy stays in this process. No async frame waits here for the call. */
  #solo(key: string, report: CanonicalReport, provider: TokenProvider, origin: Origin): Promise<FillResult> {
    return this.#callPlatform(report, provider, origin).then((result) => (result.kind === 'entry' ? this.#d.store.keepLocally(this.#keptUnder(key, report, provider, result), result.entry).then(() => result) : result))
  }

  /** A fill with Redis: this replica leads it (the lock), or waits for the replica that does. */
  async #shared(lock: ReplicaLock, key: string, report: CanonicalReport, provider: TokenProvider, from: Asker, origin: Origin, notBefore: number): Promise<FillResult> {
    // A traced fill notes its span in the lock: a fill of another replica waiting for it links to it.
    const outcome = await lock.acquire(key, origin.trace?.linkId ?? undefined)
    // Redis is out: the copy stays in this process.
    if (outcome.role === 'solo') return this.#solo(key, report, provider, origin)
    if (outcome.role === 'leader') {
      // Another replica's refresh may have landed already: one refresh across replicas.
      const newer = from.ahead || from.refresh ? await this.#d.store.getShared(key) : null
      if (newer && this.#landed(newer, from, this.#clock.now())) {
        await outcome.lease.release()
        await this.#d.store.keepLocally(key, newer)
        return { kind: 'entry', entry: newer, fromPeer: true }
      }
      return this.#lead(key, outcome.lease, report, provider, origin)
    }
    // The leader's fill span and this one's are linked both ways: the leader's replica links
    // its own on hearing `fillSpan`. Fill spans are traces of the gateway's own: no caller's
    // trace crosses to another replica.
    if (outcome.leaderSpan !== null) origin.trace?.linkElsewhere(outcome.leaderSpan)
    // A waiter's budget is its caller's: the leader's call ends within platform.timeout
    // of its start, which was before ours, and its word comes within one lock TTL.
    const deadline = this.#clock.now() + this.#d.config.platform.timeoutMs + this.#d.config.cache.lockTtlMs
    // Background refreshes wait too: a caller may have joined this flight, and the
    // other replica's fill is what this one's L1 needs anyway.
    const waited = await outcome.wait(async () => {
      const e = await this.#d.store.getShared(key)
      return e && this.#clock.now() < e.freshUntil && e.fetchedAt >= notBefore ? e : null
    }, deadline, { team: from.team, priority: from.priority ?? 'caller', ...(origin.trace?.linkId ? { fillSpan: origin.trace.linkId } : {}) })
    switch (waited.kind) {
      case 'found':
        await this.#d.store.keepLocally(key, waited.value)
        return { kind: 'entry', entry: waited.value, fromPeer: true }
      case 'lead':
        // The leader died: this replica fills for everyone, with a full platform.timeout.
        return this.#lead(key, waited.lease, report, provider, origin)
      case 'failed':
        return fillFailure(waited.failure)
      // The leader's call outlasted platform.timeout: no answer in time, which a later try may not meet.
      case 'timeout':
        return { kind: 'failed', error: transient(new UpstreamTimeoutError()) }
      case 'none': {
        // The leader's answer was not for sharing (a 4xx, no-store, oversize): make our
        // own call within what is left of the budget, and leave storing to the leader.
        const left = deadline - this.#clock.now()
        if (left <= 0) return { kind: 'failed', error: transient(new UpstreamTimeoutError()) }
        return this.#callPlatform(report, provider, origin, left)
      }
    }
  }

  /**
   * Whether a forced refresh at `now` is answered with `entry` rather than a platform call:
   * a fresh copy younger than cache.refreshMinAge. So a report is refreshed at most once
   * per that age, whoever asks and on whichever replica.
   */
  #young(entry: CacheEntry, now: number): boolean {
    return now < entry.freshUntil && now - entry.fetchedAt < this.#d.config.cache.refreshMinAgeMs
  }

  /** Whether `entry`, found in Redis by the leader of a refresh, is the copy that refresh wants: another replica's refresh landed. */
  #landed(entry: CacheEntry, from: Asker, now: number): boolean {
    if (from.ahead) return entry.fetchedAt > from.ahead.newerThan && now < entry.freshUntil
    return from.refresh === true && this.#young(entry, now)
  }

  async #lead(key: string, lease: FillLease, report: CanonicalReport, provider: TokenProvider, origin: Origin): Promise<FillResult> {
    let result: FillResult | null = null
    // Whether the copy went under another key than the one locked: its waiters find none under theirs.
    let moved = false
    try {
      result = await this.#callPlatform(report, provider, origin)
      if (result.kind === 'entry') {
        const kept = this.#keptUnder(key, report, provider, result)
        moved = kept !== key
        await this.#d.store.set(kept, result.entry)
      }
    } finally {
      // Callers are answered while the lock is released and waiters are woken, and every
      // replica holding an older copy takes the new one. A call aborted by this replica's
      // shutdown, or dropped in the queue because its callers all hung up, is no failure of
      // the platform: another replica takes the fill over.
      const shutDown = result?.kind === 'failed' && (result.error.code === 'GW_SHUTTING_DOWN' || droppedInQueue(result.error) || result.error.cause instanceof NoIdleSeatError)
      const released = shutDown ? lease.abandon() : result?.kind === 'entry' && !moved ? lease.stored(result.entry.fetchedAt) : lease.release(result?.kind === 'failed' ? failureOf(result) : undefined)
      void released.catch((err: unknown) => this.#d.log.warn({ err }, 'releasing a cache fill lock failed'))
    }
    return result
  }

  // The call counts for the team whose read started it (a coalesced fill's leader), or the caller it was sent for once that read left (`Origin.admitted`). No
  // async frame waits here for the call (each kept one is copied by every scavenge while
  // its call waits for a seat): what follows the answer is a reaction to it.
  #callPlatform(report: CanonicalReport, provider: TokenProvider, origin: Origin, timeoutMs?: number): Promise<FillResult> {
    const end = this.#d.metrics.upstreamDuration.startTimer()
    const calledAt = this.#clock.now()
    const spent = { ms: 0 }
    // The ms of `spent` charged already: a try is its seat's team's, and a retry sent for
    // another team (the first one's callers left) leaves the tries before with theirs.
    // `tally`: the team of the last try charged so.
    const charged: Charged = { ms: 0, tally: origin.tally }
    const admitted = origin.admitted
    const tried: Origin = admitted === undefined ? origin : {
      ...origin,
      admitted: (seatedOn) => {
        const before = origin.tally
        admitted(seatedOn)
        if (origin.tally === before) return
        if (spent.ms > charged.ms) {
          this.#spent(before, spent.ms - charged.ms)
          charged.tally = before
        }
        charged.ms = spent.ms
      },
    }
    const deps = timeoutMs === undefined ? this.#fetching : { ...this.#fetching, timeoutMs }
    // Built once: the seat's estimate, the latency learned and the copy's watch read this one.
    const work = workClass(report)
    return fetchReport(this.#d.client, provider, report, { ...tried, spent, workClass: work }, deps).then((result: FillResult) => this.#called(result, report, work, origin, spent.ms, charged, end, calledAt))
  }

  /** `ms` of platform time (seat-time) for `tally`'s team: its day's, and its read's (`platform-usage`). */
  #spent(tally: CallTally, ms: number): void {
    // Whole ms, each call rounded up, as the team's day counts it (usage.platformSpent) and an entry keeps its fill.
    tally.platformMs = (tally.platformMs ?? 0) + Math.ceil(ms)
    this.#d.usage.platformSpent(tally.team.name, ms)
  }

  /** The latency `work`'s refreshes ahead of `team`'s watch are led by (reports/refresh-ahead.ts `leadLatency`): its own calls', else any team's. */
  #leadLatency(work: string, team: string): ClassLatency | undefined {
    const [ahead, calls] = [this.#aheadLatencies, this.#latencies]
    return leadLatency(ahead.own(work, team), calls.own(work, team)) ?? leadLatency(ahead.any(work), calls.any(work))
  }

  /**
   * Counts a report call's answer (`spentMs` of platform time, `charged` of it charged to the teams of earlier tries) for the team of its last try: usage, metrics, the entry's filler
   * and its work class's latency, from `calledAt` on the gateway's clock (the access log's and the histogram's, `end`, on the machine's).
   */
  #called(result: FillResult, report: CanonicalReport, work: string, origin: Origin, spentMs: number, charged: Charged, end: (labels: { status: string }) => number, calledAt: number): FillResult {
    const { config, metrics } = this.#d
    // A background refresh that got no seat made no call, nor did a fill its callers all left (hung up, or may no longer be answered), before any try was sent.
    if (result.kind === 'failed' && spentMs === 0 && (result.error.cause instanceof NoIdleSeatError || droppedInQueue(result.error))) return result
    // The last try is origin's, or, when a retry found no seat after the tries were charged (their team's callers left), the last charged.
    const tally = spentMs > charged.ms ? origin.tally : charged.tally
    tally.platformCalls += 1
    this.#spent(origin.tally, spentMs - charged.ms)
    this.#d.usage.platformCall(tally.team.name)
    result.platformMs = spentMs
    if (result.kind === 'entry') {
      result.entry.filledBy = this.#filler(origin.team)
      result.entry.fillMs = Math.ceil(spentMs)
      result.work = work
    }
    const outcome = result.kind === 'failed' ? result.error.code : result.kind
    result.upstreamMs = end({ status: outcome }) * 1000
    if (result.kind === 'entry' && config.cache.refreshAhead) {
      // A wall clock stepped back while the call ran reads as none.
      const ms = Math.max(0, this.#clock.now() - calledAt)
      this.#latencies.learn(work, origin.team, ms)
      if (origin.background) this.#aheadLatencies.learn(work, origin.team, ms)
      this.#latencyVersion += 1
    }
    metrics.platformCalls.inc({ call: 'report', outcome })
    if (result.kind === 'failed' && result.unusable) {
      metrics.platformUnusable.inc({ kind: result.unusable.bodyKind })
      this.#d.log.warn({ path: report.path, requestId: origin.requestId, ...result.unusable }, 'the platform answered 200 with what is not a JSON report: not stored')
    }
    return result
  }

  /** How many teams' "filled by" records are kept. */
  get fillers(): number {
    return this.#fillers.size
  }

  /**
   * Keeps by team name only the teams configured now (`configured`, after a reload). The
   * "filled by" records of the others go: the entries they filled keep theirs, and a team
   * configured again gets a new one. So do their asks of the watched copies: a watch whose
   * team is gone becomes the team's still configured that asked its copy most, the first to
   * reach that count at a tie (as `#payer` chooses); one no configured team asked is
   * dropped, its refresh with it, and the next ask watches the copy anew. A refresh under
   * way goes on, charged to the team it was sent for.
   */
  keepTeams(configured: (team: string) => boolean): void {
    for (const team of this.#fillers.keys()) if (!configured(team)) this.#fillers.delete(team)
    const unasked: string[] = []
    for (const [key, watch] of this.#watches.entries()) {
      for (const team of watch.askedBy.keys()) if (!configured(team)) watch.askedBy.delete(team)
      if (watch.lastAsker !== undefined && !configured(watch.lastAsker)) watch.lastAsker = undefined
      if (configured(watch.team)) continue
      const next = mostAsked(watch, () => true)
      if (next === undefined) unasked.push(key)
      else watch.team = next
    }
    for (const key of unasked) this.#watches.delete(key)
  }

  #filler(team: string): FilledBy {
    let by = this.#fillers.get(team)
    if (by === undefined) {
      by = { team, replica: this.#d.replica }
      this.#fillers.set(team, by)
    }
    return by
  }

  #served(entry: CacheEntry, status: 'HIT' | 'MISS' | 'STALE' | 'REFRESH', tier: Tier): CacheResult {
    this.#count(status, tier)
    return { kind: 'entry', entry, status }
  }

  async #oversize(
    result: Extract<FillResult, { kind: 'oversize' }>,
    report: CanonicalReport,
    key: string,
    provider: TokenProvider,
    opts: ReadOptions,
  ): Promise<CacheResult> {
    let own: FillResult = result
    if (result.taken) {
      // Another caller coalesced onto this call holds its stream: make a call of our own.
      own = await this.#callPlatform(report, provider, { requestId: opts.requestId, team: opts.team, tally: opts.tally })
      if (own.kind !== 'oversize') return this.read(report, key, provider, opts)
    }
    result.taken = true
    const { headers, answer } = own as Extract<FillResult, { kind: 'oversize' }>
    this.#count('BYPASS', 'platform')
    // Held whole in the answers' budget and sent from there at the caller's pace: a caller that stops reading is cut off.
    const stream = answer.stream()
    return { kind: 'stream', headers, stream, gzipped: headers['content-encoding'] === 'gzip', length: answer.length, ...(own.upstreamMs === undefined ? {} : { upstreamMs: own.upstreamMs }), ...(own.platformMs === undefined ? {} : { platformMs: own.platformMs }) }
  }

  #count(result: CacheStatus, tier: Tier): void {
    const name = `${result} ${tier}`
    let counter = this.#counters.get(name)
    if (!counter) {
      counter = this.#d.metrics.cacheRequests.child({ result, tier })
      this.#counters.set(name, counter)
    }
    counter.inc()
  }

  /** A turn of the event loop for `team`'s work among the report calls' (CallTurns): a large request body's check takes them too, a piece a turn (access/admission.ts). */
  turn(team: string, gone?: AbortSignal): Promise<boolean> {
    return this.#turns.turn(team, gone)
  }
}

// A leader's failure travels to other replicas as its code (and a passed-on answer such
// as a 429, small enough for a message); the waiters answer it as their own.
const MAX_SHARED_FAILURE_BODY = 4096

function failureOf(result: Extract<FetchResult, { kind: 'failed' }>): FillFailure {
  const r = result.response
  const failure = isTransient(result.error) ? { code: result.error.code, transient: true } : { code: result.error.code }
  if (!r || r.status !== 429 || r.body.length > MAX_SHARED_FAILURE_BODY) return failure
  return { ...failure, response: { status: r.status, headers: r.headers, body: r.body.toString('base64') } }
}

function fillFailure(failure: FillFailure): Extract<FetchResult, { kind: 'failed' }> {
  const error =
    failure.code === 'GW_UPSTREAM_TIMEOUT' ? new UpstreamTimeoutError()
    : failure.code === 'GW_PLATFORM_AUTH' ? new PlatformAuthError("on the replica that made the report's call")
    : failure.code === 'GW_PLATFORM_REFUSED' ? new PlatformRefusedError('the replica that made the call was told so by its probe call')
    : new UpstreamError(failure.response ? `status ${failure.response.status}` : 'the fill on another replica failed')
  if (failure.transient === true) transient(error)
  untilOperatorsAct(error)
  const r = failure.response
  return r ? { kind: 'failed', error, response: { status: r.status, headers: r.headers, body: Buffer.from(r.body, 'base64') } } : { kind: 'failed', error }
}

/** Ends the span of a cache lookup, saying where the copy was found and whether it was fresh. */
function endLookup(span: Trace, found: { entry: CacheEntry; tier: StoreTier } | null, now: number): void {
  const result = found === null ? 'miss' : now < found.entry.freshUntil ? 'hit' : now < found.entry.staleUntil ? 'stale' : 'expired'
  span.set({ 'gateway.cache.tier': found?.tier ?? 'none', 'gateway.cache.result': result })
  span.end()
}

/** `admitted` as a caller group asks it: whether the caller may still be answered. */
function runs(admitted: () => void): () => boolean {
  return () => {
    try {
      admitted()
      return true
    } catch {
      return false
    }
  }
}

function droppedInQueue(error: Error): boolean {
  return error.cause instanceof CallersGoneError
}

/** The team that asked `watch`'s copy most among those `may` lets, the first to reach that count at a tie; none when none of them asked it. */
function mostAsked(watch: Watch, may: (team: string) => boolean): string | undefined {
  let team: string | undefined
  let most = 0
  for (const [asker, asks] of watch.askedBy) {
    if (asks > most && may(asker)) {
      team = asker
      most = asks
    }
  }
  return team
}

/** Counts an ask of the watched copy by `team`: the watch becomes its team's once it has asked the copy more than the watch's team has. */
function countAsker(watch: Watch, team: string): void {
  const asks = (watch.askedBy.get(team) ?? 0) + 1
  // Last in the map: it runs in the order each team reached its count, the first to reach one first (`#payer`'s tie).
  // The latest asker is last already, and its count is changed in place: a hit of the team
  // that asked before it deletes and sets nothing (a map emptied by a delete is shrunk, its
  // table made anew at the next set, on every hit of a copy one team reads).
  if (team !== watch.lastAsker) {
    watch.askedBy.delete(team)
    watch.lastAsker = team
  }
  watch.askedBy.set(team, asks)
  if (asks > (watch.askedBy.get(watch.team) ?? 0)) watch.team = team
}
