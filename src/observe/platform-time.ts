import { systemClock, type Clock } from '../clock.js'

/** The window of a team's recent use: its platform-seconds over the last minute. */
export const MINUTE_MS = 60_000
const DAY_MS = 86_400_000
// The minute is kept in one-second slots: a slot's time leaves the window a second at most late.
const SLOT_MS = 1_000
const SLOTS = MINUTE_MS / SLOT_MS

/** One team's platform time on this replica: the last minute's, and the UTC day's as every replica's. */
interface TeamTime {
  /** Milliseconds spent per one-second slot, and the second each slot holds. */
  slotMs: Float64Array
  slotSecond: Float64Array
  /** The UTC day (its first ms) that `sharedMs` and `unsharedMs` count. */
  dayStart: number
  /** The day's total of every replica as Redis last said it (this replica's shared part included). */
  sharedMs: number
  /** This replica's time of the day not yet in `sharedMs`. */
  unsharedMs: number
}

/** The first ms of the UTC day of `now`. */
export function utcDayStart(now: number): number {
  return Math.floor(now / DAY_MS) * DAY_MS
}

/** Whole seconds from `now` to the next UTC midnight, when a day's platform-seconds start again (1 at least). */
export function secondsToNextDay(now: number): number {
  return Math.max(1, Math.ceil((utcDayStart(now) + DAY_MS - now) / 1000))
}

/**
 * The platform time each team's calls held (the seat-time the governor charges: from a
 * call's start at the platform to its answer's headers), per team: over the last minute,
 * and over the UTC day summed across replicas. The usage totals carry a day's time to
 * Redis with their flush and bring back every replica's total (observe/usage.ts), so a
 * read here is a few array reads, never a Redis call. Every team's day is read at start
 * (TeamUsage.readDays); after it, another replica's time counts here once its flush and
 * this replica's next flush of the team's own counts have run (two `usage.flush` after
 * the team's first call here since); the
 * minute is this replica's own calls. Without Redis every figure is this replica's.
 */
export class PlatformTime {
  readonly #clock: Clock
  readonly #teams = new Map<string, TeamTime>()

  constructor(clock: Clock = systemClock) {
    this.#clock = clock
  }

  /** How many teams' time is kept. */
  get size(): number {
    return this.#teams.size
  }

  /** A call of `team` held the platform `ms` (its seat-time), ending at `now`. */
  spend(team: string, ms: number, now: number = this.#clock.now()): void {
    if (!(ms > 0)) return
    const t = this.#of(team, now)
    const second = Math.floor(now / SLOT_MS)
    const slot = second % SLOTS
    if (t.slotSecond[slot] !== second) {
      t.slotSecond[slot] = second
      t.slotMs[slot] = 0
    }
    t.slotMs[slot] = (t.slotMs[slot] as number) + ms
    t.unsharedMs += ms
  }

  /**
   * A flush wrote `sentMs` of `team`'s time of the UTC day starting `dayStart` and read
   * back the day's total of every replica, `totalMs` (that write included). A day's total
   * only grows, so one below what was known plus what was sent is no replica's count but a
   * reset of it in Redis (a writer there, a Redis that lost it): what was known is kept.
   */
  shared(team: string, dayStart: number, sentMs: number, totalMs: number): void {
    const t = this.#of(team, this.#clock.now())
    if (t.dayStart !== dayStart) return
    t.unsharedMs = Math.max(0, t.unsharedMs - sentMs)
    t.sharedMs = Math.max(totalMs, t.sharedMs + sentMs)
  }

  /** `team`'s platform time (ms) over the last minute on this replica. */
  minuteMs(team: string, now: number = this.#clock.now()): number {
    const t = this.#teams.get(team)
    if (t === undefined) return 0
    const second = Math.floor(now / SLOT_MS)
    let ms = 0
    for (let i = 0; i < SLOTS; i++) if (second - (t.slotSecond[i] as number) < SLOTS) ms += t.slotMs[i] as number
    return ms
  }

  /** `team`'s platform time (ms) of the UTC day of `now`, every replica's as far as known. */
  dayMs(team: string, now: number = this.#clock.now()): number {
    const t = this.#teams.get(team)
    if (t === undefined || t.dayStart !== utcDayStart(now)) return 0
    return t.sharedMs + t.unsharedMs
  }

  /**
   * Seconds until `team` may make platform calls again under its bound of `limitSec`
   * platform-seconds a UTC day (null: none); 0 while it is within it.
   */
  overBound(team: string, limitSec: number | null, now: number = this.#clock.now()): number {
    if (limitSec === null || this.dayMs(team, now) < limitSec * 1000) return 0
    return secondsToNextDay(now)
  }

  #of(team: string, now: number): TeamTime {
    const dayStart = utcDayStart(now)
    let t = this.#teams.get(team)
    if (t === undefined) {
      this.#forgetPast(dayStart, Math.floor(now / SLOT_MS))
      t = { slotMs: new Float64Array(SLOTS), slotSecond: new Float64Array(SLOTS).fill(-Infinity), dayStart, sharedMs: 0, unsharedMs: 0 }
      this.#teams.set(team, t)
    } else if (t.dayStart !== dayStart) {
      t.dayStart = dayStart
      t.sharedMs = 0
      t.unsharedMs = 0
    }
    return t
  }

  // A team whose day is over and whose minute is empty has nothing left to count (its
  // entry would start the day again at its next call): it goes, as a new team comes, so
  // what is kept is the teams of the UTC day and of the last minute however many reloads
  // removed teams.
  #forgetPast(dayStart: number, second: number): void {
    for (const [team, t] of this.#teams) if (t.dayStart !== dayStart && t.slotSecond.every((s) => second - s >= SLOTS)) this.#teams.delete(team)
  }
}
