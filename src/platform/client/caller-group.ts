import { PRIORITIES, rank, type Priority } from '../governor/fair-queue.js'
import type { Seat } from '../governor/seat.js'
import { waitSignal, type WaitSignal } from './wait-signal.js'

/**
 * Nobody waits for the call any more: every caller that joined it has hung up. Status
 * 499 as nginx logs it ("client closed request"): there is no one to send it to.
 */
export class CallersGoneError extends Error {
  readonly code = 'CALLERS_GONE'
  readonly statusCode = 499
  constructor() {
    super('every caller of this platform call has hung up')
  }
}

/** Where a queued call waits: in the queue of each team with an asker still there, at that team's most pressing priority. */
export interface QueueTeam {
  /** Each team with an asker still there, and the priority of its most pressing asker. */
  readonly teams: ReadonlyMap<string, Priority>
  /** `fn` runs when those teams or their priorities change; the returned function stops it. */
  onChange(fn: () => void): () => void
}

interface Asker {
  team: string
  priority: Priority
}

/**
 * The callers waiting on one platform call: a call still queued for a seat is dropped,
 * without reaching the platform, once all of them have hung up. An asker without a
 * hang-up signal (a background refresh) keeps the call whatever the others do. While the
 * call waits for a seat it waits in the queue of every team with an asker still there,
 * each at the priority of that team's most pressing asker (a caller who joins a refresh
 * makes it a caller's call), and takes the first seat any of them is given: a team whose
 * own seats are busy holds back no other team's read of the same report.
 */
export class CallerGroup implements QueueTeam {
  readonly #controller = new AbortController()
  #present = 0
  #pinned = false
  // Per team, its askers still there by priority (counts in PRIORITIES order): a
  // stampede's callers join in constant time each, not in time growing with those before them.
  readonly #counts = new Map<string, number[]>()
  readonly #teams = new Map<string, Priority>()
  readonly #changed = new Set<() => void>()

  /** Aborts once every caller that joined has hung up. */
  get signal(): AbortSignal {
    return this.#controller.signal
  }

  get teams(): ReadonlyMap<string, Priority> {
    return this.#teams
  }

  onChange(fn: () => void): () => void {
    this.#changed.add(fn)
    return () => this.#changed.delete(fn)
  }

  join(hangUp: HangUp | undefined, team: string, priority: Priority = 'caller'): void {
    if (!hangUp) {
      this.#pinned = true
      this.#count({ team, priority }, 1)
    } else if (typeof hangUp === 'function' || !hangUp.aborted) {
      this.#present += 1
      const caller = { team, priority }
      this.#count(caller, 1)
      const leave = () => this.#leave(caller)
      if (typeof hangUp === 'function') hangUp(leave)
      else hangUp.addEventListener('abort', leave, { once: true })
    } else if (this.#present === 0) {
      this.#leave(null)
    }
  }

  /** Counts `asker` in (+1) or out (-1); tells the listeners when its team's most pressing priority, or the teams, change. */
  #count(asker: Asker, by: 1 | -1): void {
    const counts = this.#counts.get(asker.team) ?? this.#counts.set(asker.team, PRIORITIES.map(() => 0)).get(asker.team)!
    counts[rank(asker)]! += by
    const top = counts.findIndex((n) => n > 0)
    const before = this.#teams.get(asker.team)
    if (top === -1) {
      this.#counts.delete(asker.team)
      this.#teams.delete(asker.team)
    } else this.#teams.set(asker.team, PRIORITIES[top]!)
    if (this.#teams.get(asker.team) !== before && this.#controller.signal.aborted === false) for (const fn of [...this.#changed]) fn()
  }

  #leave(caller: Asker | null): void {
    this.#present = Math.max(0, this.#present - 1)
    if (this.#present === 0 && !this.#pinned) {
      this.#controller.abort(new CallersGoneError())
      return
    }
    if (caller) this.#count(caller, -1)
  }
}

/**
 * A seat of `acquire` for a call waited for in the queue of each of `queue`'s teams, at
 * that team's priority (without `queue`, under `team`, as a caller's call). The first seat
 * given is the call's: the other waits are given up, and a seat given to one of them in
 * the same turn goes back as a call dropped before it was sent. When the teams change
 * while the call waits, a team gone (or whose priority changed) gives up its place, a
 * team new takes one at the back of its queue, the others keep theirs. Every wait's
 * signal aborts with the first of `sources` (the call's own ends) or when it is given up;
 * the call is refused once no wait is left, with the first refusal.
 */
export function seatFollowing(
  team: string,
  queue: QueueTeam | undefined,
  sources: readonly (AbortSignal | undefined)[],
  acquire: (team: string, signal: AbortSignal | undefined, priority: Priority) => Promise<Seat>,
): Promise<Seat> {
  if (!queue) {
    const wait = waitSignal(sources)
    return asked(() => acquire(team, wait.signal, 'caller')).finally(() => wait.done())
  }
  return new Promise<Seat>((resolve, reject) => {
    const waits = new Map<string, { priority: Priority; wait: WaitSignal }>()
    let seated = false
    let refusal: unknown
    const giveUp = (name: string) => {
      const held = waits.get(name)
      waits.delete(name)
      held?.wait.abort(MOVED)
    }
    const end = () => {
      stop()
      for (const name of [...waits.keys()]) giveUp(name)
    }
    const wait = (name: string, priority: Priority) => {
      const held = { priority, wait: waitSignal(sources) }
      waits.set(name, held)
      // A reaction, not an async frame, waits for each seat.
      asked(() => acquire(name, held.wait.signal, priority)).then(
        (seat) => {
          held.wait.done()
          if (seated) return seat.end({ kind: 'dropped' })
          seated = true
          waits.delete(name)
          end()
          resolve(seat)
        },
        (err: unknown) => {
          held.wait.done()
          if (waits.get(name) === held) waits.delete(name)
          if (err !== MOVED) refusal ??= err
          if (!seated && waits.size === 0) {
            stop()
            reject(refusal as Error)
          }
        },
      )
    }
    const follow = () => {
      const wanted = queue.teams.size > 0 ? queue.teams : new Map<string, Priority>([[team, 'caller']])
      for (const [name, held] of [...waits]) if (wanted.get(name) !== held.priority) giveUp(name)
      for (const [name, priority] of wanted) if (!waits.has(name)) wait(name, priority)
    }
    const stop = queue.onChange(() => {
      if (!seated) follow()
    })
    follow()
  })
}

/** `ask()`'s promise, its synchronous throw as a rejection. */
function asked(ask: () => Promise<Seat>): Promise<Seat> {
  try {
    return ask()
  } catch (err) {
    return Promise.reject(err as Error)
  }
}

// The reason a queued wait is given up (another team's wait was seated, or its team left); never seen outside.
const MOVED = new Error('the call waits in another team\'s queue')
/**
 * A caller's hang-up as a call's waiters watch it: an AbortSignal, or a function that
 * runs `leave` once when the caller hangs up (`hangUpOf`), which needs no signal of its own.
 */
export type HangUp = AbortSignal | OnHangUp
/** Runs `leave` once when a caller hangs up. */
type OnHangUp = (leave: () => void) => void

type Answering = { on(event: 'close', fn: () => void): unknown; writableFinished: boolean }

/**
 * The hang-up of the caller of `res`: `leave` runs when `res` closes before its answer is
 * complete (a response closes once). One listener on the response, no AbortController:
 * what a caller waiting for a report holds is its response and this listener.
 */
export function hangUpOf(res: Answering): OnHangUp {
  return (leave) => {
    res.on('close', () => {
      if (!res.writableFinished) leave()
    })
  }
}

/** Aborts when the caller of `res` hangs up before its answer is complete. */
export function hangUpSignal(res: Answering): AbortSignal {
  const controller = new AbortController()
  hangUpOf(res)(() => controller.abort(new CallersGoneError()))
  return controller.signal
}
