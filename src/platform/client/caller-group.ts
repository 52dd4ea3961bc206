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

interface Asker<C> {
  team: string
  priority: Priority
  /** Whether its caller may still be answered (its key still runs); none: a caller who may. */
  runs: (() => boolean) | undefined
  /** What the call is charged to when it is sent for this asker. */
  charge: C | undefined
  left: boolean
}

/**
 * The callers waiting on one platform call: a call still queued for a seat is dropped,
 * without reaching the platform, once all of them have hung up or may no longer be
 * answered (`admitted`: their keys removed). An asker without a hang-up signal (a
 * background refresh) keeps the call whatever the others do. While the call waits for a
 * seat it waits in the queue of every team with an asker still there, each at the
 * priority of that team's most pressing asker (a caller who joins a refresh makes it a
 * caller's call), and takes the first seat any of them is given: a team whose own seats
 * are busy holds back no other team's read of the same report. It is charged to an asker
 * of the team whose seat it is sent on (`chargedTo`).
 */
export class CallerGroup<C = undefined> implements QueueTeam {
  readonly #controller = new AbortController()
  #present = 0
  #pinned = false
  // Per team, its askers still there by priority (counts in PRIORITIES order): a
  // stampede's callers join in constant time each, not in time growing with those before them.
  readonly #counts = new Map<string, number[]>()
  readonly #teams = new Map<string, Priority>()
  // Per team, its askers still there in join order (a Set: a hang-up leaves in constant time).
  readonly #askers = new Map<string, Set<Asker<C>>>()
  #starter: Asker<C> | undefined
  // Whether some asker brought a check of its caller (`admitted` asks them only then).
  #checked = false
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

  /**
   * What the call is charged to: the `charge` of the earliest asker still there of
   * `seatedOn` (the team whose seat it is sent on: the team charged its seat-time pays for
   * the call too), else its first asker's while that one still waits for it, else the
   * earliest still there of any team.
   */
  chargedTo(seatedOn?: string): C | undefined {
    const ofTeam = seatedOn === undefined ? undefined : this.#askers.get(seatedOn)
    if (ofTeam) for (const asker of ofTeam) return asker.charge
    if (this.#starter?.left === false) return this.#starter.charge
    for (const askers of this.#askers.values()) for (const asker of askers) return asker.charge
    return undefined
  }

  /** `runs`: whether the caller may still be answered (its key still runs), asked by `admitted`; `charge`: what the call is charged to when it is sent for this asker. */
  join(hangUp: HangUp | undefined, team: string, priority: Priority = 'caller', runs?: () => boolean, charge?: C): void {
    // A background asker keeps the call: whether a caller runs is asked of callers alone.
    const asker: Asker<C> = { team, priority, runs: hangUp ? runs : undefined, charge, left: false }
    if (!hangUp) {
      this.#pinned = true
      this.#add(asker)
    } else if (typeof hangUp === 'function' || !hangUp.aborted) {
      this.#present += 1
      this.#add(asker)
      if (runs) this.#checked = true
      const leave = () => this.#leave(asker)
      if (typeof hangUp === 'function') hangUp(leave)
      else hangUp.addEventListener('abort', leave, { once: true })
    } else if (this.#present === 0) {
      this.#leave(null)
    }
  }

  /**
   * Throws the reason the call may not be sent (CallersGoneError) once no asker still waits
   * for it: the callers that may no longer be answered (their keys removed) leave it first,
   * as a hang-up does. Asked before each wait for a seat and once the seat is had.
   */
  admitted(): void {
    if (this.#checked) for (const askers of [...this.#askers.values()]) for (const asker of [...askers]) if (asker.runs?.() === false) this.#leave(asker)
    if (this.#controller.signal.aborted) throw this.#controller.signal.reason as Error
  }

  #add(asker: Asker<C>): void {
    this.#starter ??= asker
    const askers = this.#askers.get(asker.team) ?? this.#askers.set(asker.team, new Set()).get(asker.team)!
    askers.add(asker)
    this.#count(asker, 1)
  }

  /** Counts `asker` in (+1) or out (-1); tells the listeners when its team's most pressing priority, or the teams, change. */
  #count(asker: Asker<C>, by: 1 | -1): void {
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

  #leave(caller: Asker<C> | null): void {
    if (caller) {
      // A caller refused (`admitted`) that hangs up later has left already.
      if (caller.left) return
      caller.left = true
      const askers = this.#askers.get(caller.team)!
      askers.delete(caller)
      if (askers.size === 0) this.#askers.delete(caller.team)
    }
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
 * the same turn goes back as a call never sent (free at once, charged nothing). When the teams change
 * while the call waits, a team gone (or whose priority changed) gives up its place, a
 * team new takes one at the back of its queue, the others keep theirs. Every wait's
 * signal aborts with the first of `sources` (the call's own ends) or when it is given up;
 * the call is refused once no wait is left, with the first refusal, which holds each team's
 * own (`ownRefusal`): a refusal may name its team and that team's ceilings.
 */
export function seatFollowing<S extends Seat>(
  team: string,
  queue: QueueTeam | undefined,
  sources: readonly (AbortSignal | undefined)[],
  acquire: (team: string, signal: AbortSignal | undefined, priority: Priority) => Promise<S>,
): Promise<S> {
  if (!queue) {
    const wait = waitSignal(sources)
    return asked(() => acquire(team, wait.signal, 'caller')).finally(() => wait.done())
  }
  return new Promise<S>((resolve, reject) => {
    const waits = new Map<string, { priority: Priority; wait: WaitSignal }>()
    let seated = false
    let refusal: unknown
    const refusals = new Map<string, unknown>()
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
          if (seated) return seat.end({ kind: 'unsent' })
          seated = true
          // A place given up in the turn it was seated may have a successor under its name: given up by `end` too.
          if (waits.get(name) === held) waits.delete(name)
          end()
          resolve(seat)
        },
        (err: unknown) => {
          held.wait.done()
          if (waits.get(name) === held) waits.delete(name)
          if (err !== MOVED) {
            refusal ??= err
            if (!refusals.has(name)) refusals.set(name, err)
          }
          if (!seated && waits.size === 0) {
            stop()
            if (typeof refusal === 'object' && refusal !== null) refusalsByTeam.set(refusal, refusals)
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

// The refusals of a shared call's waits by team, kept by the refusal the call ended with.
const refusalsByTeam = new WeakMap<object, ReadonlyMap<string, unknown>>()

/**
 * The refusal `team`'s own wait got, of a shared call refused with `err` (or an error
 * whose cause it is); undefined when that team's wait was not refused, or the call was
 * not shared.
 */
export function ownRefusal(err: Error, team: string): unknown {
  const byTeam = refusalsByTeam.get(err) ?? (typeof err.cause === 'object' && err.cause !== null ? refusalsByTeam.get(err.cause) : undefined)
  return byTeam?.get(team)
}

/** `ask()`'s promise, its synchronous throw as a rejection. */
function asked<S extends Seat>(ask: () => Promise<S>): Promise<S> {
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

type Answering = { on(event: 'close', fn: () => void): unknown; writableFinished: boolean; destroyed: boolean }

/**
 * The hang-up of the caller of `res`: `leave` runs when `res` closes before its answer is
 * complete (a response closes once), at once when it closed already (its caller hung up
 * before the read joined a call: its close is heard no more). One listener on the
 * response, no AbortController: what a caller waiting for a report holds is its response
 * and this listener.
 */
export function hangUpOf(res: Answering): OnHangUp {
  return (leave) => {
    if (res.destroyed) {
      if (!res.writableFinished) leave()
      return
    }
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
