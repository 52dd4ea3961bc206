import type { CacheEntry } from '../../cache/cache-entry.js'
import type { TeamConfig } from '../../config.js'
import { MINUTE_MS, secondsToNextDay, type PlatformTime } from '../../observe/platform-time.js'
import { finalityFields } from '../../reports/finality.js'
import type { TtlPolicy } from '../../reports/ttl-policy.js'

// What every report answer says of what it cost and of which of its figures may still
// change (contract, "Additions"; docs/decisions/call-cost-headers.md). One module for
// every writer of a report answer (the route, the fast path of hits, a job's result):
// the values come from here, the lines are written by answer-fields.ts.

/** The platform time of the answer's fill and the team's use of the platform (an RFC 9651 dictionary). */
export const USAGE_HEADER = 'platform-usage'
/** The last day (platform's zone) whose figures in the answer no longer change. */
export const SETTLED_HEADER = 'report-settled-through'
/** The answer's days whose figures may still change, `<first>/<last>`, or `none`. */
export const PROVISIONAL_HEADER = 'report-provisional-days'

/** A report's days, as its canonical form has them. */
export interface ReportDays {
  dateFrom: string
  dateTo: string
}

/** The header values of one report answer. */
export interface ReportFacts {
  usage: string
  finality: readonly [settled: string, provisional: string]
}

export interface ReportFactsParts {
  platformTime: PlatformTime
  policy: Pick<TtlPolicy, 'settledAfterDays' | 'timeZone'>
  /** The seats of `team`'s share of its credential's limit (its weight among the credential's teams); null: not known. */
  shareSeats(team: TeamConfig): number | null
}

/** A team's usage line of one second: what every answer of that second without a fill of its own says. */
interface SecondLine {
  second: number
  team: TeamConfig
  /** After `fill=`, from the minute on. */
  rest: string
  hit: string
  /** The copy of the fill the line was made anew for (null: none), its `fillMs`, and what that fill's answers say. */
  fill: CacheEntry | null
  fillMs: number
  filled: string
}

/**
 * The values of the report headers. On a hit they cost two map lookups: the team's usage
 * line is made once a second (its figures move by the second at most: the minute's slots
 * are seconds, the day's total arrives with the usage flush), and an entry's finality once
 * for the entry's life (it is judged at the fill). The answers of one fill (a stampede's
 * waiters) cost the same: the line is made anew by the fill's first answer, which counts
 * it, and its other answers in that second say what the first said.
 */
export class ReportAnswerFacts {
  readonly #p: ReportFactsParts
  readonly #lines = new Map<string, SecondLine>()
  readonly #finality = new WeakMap<CacheEntry, readonly [string, string]>()

  constructor(parts: ReportFactsParts) {
    this.#p = parts
  }

  /**
   * The facts of an answer to `team` of the report of `days`: from `entry` (null: an
   * answer the platform gave and the cache did not keep, fetched at `fetchedAt`: now for a
   * read, the job's fetch for a job's kept answer), whose fill held the platform `fillMs`
   * (0: the answer came from the cache without a call).
   */
  of(team: TeamConfig, days: ReportDays, entry: CacheEntry | null, fillMs: number, now: number, fetchedAt = now): ReportFacts {
    return { usage: this.usage(team, fillMs, now, entry), finality: entry === null ? this.#finalityAt(days, fetchedAt) : this.finality(entry, days) }
  }

  /**
   * The `platform-usage` value of an answer to `team` whose fill held the platform
   * `fillMs`. An answer with a fill says the team's figures with that fill counted (made
   * anew), and the answers after it in the same second say the same; `fill`, the copy the
   * fill made (null: none kept), makes the line once a fill: another answer of the same
   * copy and `fillMs` in that second says what its first answer said.
   */
  usage(team: TeamConfig, fillMs: number, now: number, fill: CacheEntry | null = null): string {
    const second = Math.floor(now / 1000)
    const last = this.#lines.get(team.name)
    const current = last !== undefined && last.second === second && last.team === team ? last : undefined
    if (fillMs > 0 && fill !== null && current?.fill === fill && current.fillMs === fillMs) return current.filled
    let line = current
    if (line === undefined || fillMs > 0) {
      const rest = this.#rest(team, now)
      line = { second, team, rest, hit: `fill=0, ${rest}`, fill: null, fillMs: 0, filled: '' }
      this.#lines.set(team.name, line)
    }
    if (!(fillMs > 0)) return line.hit
    line.fill = fill
    line.fillMs = fillMs
    line.filled = `fill=${seconds(fillMs)}, ${line.rest}`
    return line.filled
  }

  /**
   * The `platform-usage` of a report read's failure, as every report answer says it: its
   * 5xx and its refusal for the team's spent day (`GW_PLATFORM_TIME_SPENT`: the `day`,
   * `day-limit` and `reset` it was refused for), and a job's report too large to keep
   * (`GW_JOB_RESULT_TOO_LARGE`, after its call), `fill` being what its own failed calls
   * held (`platformMs`); null for any other failure, refused before any platform work.
   */
  failureUsage(team: TeamConfig, error: { statusCode?: number; code?: string }, platformMs: number, now: number): string | null {
    if ((error.statusCode ?? 500) < 500 && error.code !== 'GW_PLATFORM_TIME_SPENT' && error.code !== 'GW_JOB_RESULT_TOO_LARGE') return null
    return this.usage(team, platformMs, now)
  }

  /** Seconds until `team` may make platform calls again (its platform-seconds of the UTC day spent); 0: it may. */
  spentFor(team: TeamConfig, now: number): number {
    return this.#p.platformTime.overBound(team.name, team.platformSecondsPerDay, now)
  }

  /** The finality values of `entry`, the report of `days` as fetched. */
  finality(entry: CacheEntry, days: ReportDays): readonly [string, string] {
    let values = this.#finality.get(entry)
    if (values === undefined) {
      values = this.#finalityAt(days, entry.fetchedAt)
      this.#finality.set(entry, values)
    }
    return values
  }

  #finalityAt(days: ReportDays, fetchedAt: number): readonly [string, string] {
    const f = finalityFields(days.dateFrom, days.dateTo, fetchedAt, this.#p.policy)
    return [f.settledThrough, f.provisionalDays]
  }

  #rest(team: TeamConfig, now: number): string {
    const { platformTime } = this.#p
    const minuteMs = platformTime.minuteMs(team.name, now)
    const share = this.#p.shareSeats(team)
    const parts = [`minute=${seconds(minuteMs)}`]
    if (share !== null && share > 0) parts.push(`share=${Math.round((100 * minuteMs) / (share * MINUTE_MS))}`)
    parts.push(`day=${seconds(platformTime.dayMs(team.name, now))}`)
    if (team.platformSecondsPerDay !== null) parts.push(`day-limit=${seconds(team.platformSecondsPerDay * 1000)}`)
    parts.push(`reset=${secondsToNextDay(now)}`)
    return parts.join(', ')
  }
}

/** Milliseconds as seconds to the ms: an RFC 9651 decimal (at most three fractional digits). */
function seconds(ms: number): string {
  return (Math.round(ms) / 1000).toFixed(3)
}

/**
 * The facts of the gateway's report answers: the usage totals' platform time, the TTL
 * policy's settled days and zone, and each team's share of its credential's limit in
 * force (its weight among the weights of the credential's teams: the seats it is owed
 * when every team of the credential asks).
 */
export function reportAnswerFacts(
  config: { cache: Pick<TtlPolicy, 'settledAfterDays' | 'timeZone'> },
  usage: { platformTime: PlatformTime },
  governors: { limitOf(credential: string): number | null },
  teams: { readonly teams: readonly TeamConfig[] },
): ReportAnswerFacts {
  return new ReportAnswerFacts({
    platformTime: usage.platformTime,
    policy: { settledAfterDays: config.cache.settledAfterDays, timeZone: config.cache.timeZone },
    shareSeats: (team) => {
      const limit = governors.limitOf(team.credential)
      if (limit === null) return null
      let weights = 0
      for (const t of teams.teams) if (t.credential === team.credential) weights += t.weight
      return weights > 0 ? (limit * team.weight) / weights : null
    },
  })
}
