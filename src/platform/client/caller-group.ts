import { rank, type Priority } from '../governor/fair-queue.js'
import { waitSignal } from './wait-signal.js'

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

/** Where a queued call waits: the priority of its most pressing asker, and the team of the earliest of those. */
export interface QueueTeam {
  readonly team: string | null
  readonly priority: Priority
  /** `fn` runs when that team or priority changes; the returned function stops it. */
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
 * seat it waits at the priority of its most pressing asker (a caller who joins a refresh
 * makes it a caller's call) and in the queue of the team of the earliest of those
 * (`team`): when that caller hangs up, the call moves to the next one's team, not to the
 * back of the first team's burst. It is charged to its first asker while that one waits
 * for it, else to the asker it is sent for (`chargedTo`).
 */
export class CallerGroup<C = undefined> implements QueueTeam {
  readonly #controller = new AbortController()
  #present = 0
  #pinned = false
  // In join order; a caller that hung up is removed.
  readonly #waiting: Asker<C>[] = []
  // The earliest asker of the highest priority in #waiting: a joiner takes its place only
  // with a higher priority, and it is looked for again only when it leaves. So a stampede's
  // callers join in constant time each, not in time growing with those before them.
  #first: Asker<C> | undefined
  #starter: Asker<C> | undefined
  // Whether some asker brought a check of its caller (`admitted` asks them only then).
  #checked = false
  readonly #changed = new Set<() => void>()

  /** Aborts once every caller that joined has hung up. */
  get signal(): AbortSignal {
    return this.#controller.signal
  }

  get team(): string | null {
    return this.#first?.team ?? null
  }

  get priority(): Priority {
    return this.#first?.priority ?? 'caller'
  }

  onChange(fn: () => void): () => void {
    this.#changed.add(fn)
    return () => this.#changed.delete(fn)
  }

  /** What the call is charged to: its first asker's `charge` while it still waits for the call, else that of the asker whose queue the call waits in (`team`'s). */
  get chargedTo(): C | undefined {
    return (this.#starter?.left === false ? this.#starter : this.#first)?.charge
  }

  /** `runs`: whether the caller may still be answered (its key still runs), asked by `admitted`; `charge`: what the call is charged to when it is sent for this asker. */
  join(hangUp: HangUp | undefined, team: string, priority: Priority = 'caller', runs?: () => boolean, charge?: C): void {
    const before = this.#first
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
      return
    }
    if (before !== undefined && this.#first !== before) this.#changed.forEach((fn) => fn())
  }

  /**
   * Throws the reason the call may not be sent (CallersGoneError) once no asker still waits
   * for it: the callers that may no longer be answered (their keys removed) leave it first,
   * as a hang-up does. Asked before each wait for a seat and once the seat is had.
   */
  admitted(): void {
    if (this.#checked) for (const asker of [...this.#waiting]) if (asker.runs?.() === false) this.#leave(asker)
    if (this.#controller.signal.aborted) throw this.#controller.signal.reason as Error
  }

  #add(asker: Asker<C>): void {
    this.#waiting.push(asker)
    this.#starter ??= asker
    if (this.#first === undefined || rank(asker) < rank(this.#first)) this.#first = asker
  }

  #leave(caller: Asker<C> | null): void {
    const before = this.#first
    if (caller) {
      // A caller refused (`admitted`) that hangs up later has left already.
      if (caller.left) return
      caller.left = true
      this.#waiting.splice(this.#waiting.indexOf(caller), 1)
      if (caller === before) this.#first = firstAsker(this.#waiting)
    }
    this.#present = Math.max(0, this.#present - 1)
    if (this.#present === 0 && !this.#pinned) {
      this.#controller.abort(new CallersGoneError())
      return
    }
    if (this.#first !== before) for (const fn of [...this.#changed]) fn()
  }
}

/** The earliest of `askers` (in join order) of the highest priority among them. */
export function firstAsker<A extends { priority: Priority }>(askers: readonly A[]): A | undefined {
  let best: A | undefined
  for (const a of askers) if (best === undefined || rank(a) < rank(best)) best = a
  return best
}

/**
 * A seat of `acquire` for a call waited for under `queue`'s team and priority (else
 * `team`'s, as a caller's call): when they change while the call is queued, its place is
 * given up and taken again in the new team's queue or at the new priority, with the same
 * deadline. Each wait's signal aborts with the first of `sources` (the call's own ends) or
 * with the move: one signal a wait, listening on the sources themselves.
 */
export function seatFollowing<T>(
  team: string,
  queue: QueueTeam | undefined,
  sources: readonly (AbortSignal | undefined)[],
  acquire: (team: string, signal: AbortSignal | undefined, priority: Priority) => Promise<T>,
): Promise<T> {
  const wait = waitSignal(sources)
  const stop = queue?.onChange(() => wait.abort(MOVED))
  const ended = () => {
    stop?.()
    wait.done()
  }
  let asked: Promise<T>
  try {
    asked = queue ? acquire(queue.team ?? team, wait.signal, queue.priority) : acquire(team, wait.signal, 'caller')
  } catch (err) {
    ended()
    return Promise.reject(err as Error)
  }
  // A reaction, not an async frame, waits for the seat: the one kept per queued call is #once's.
  return asked.then(
    (seat) => {
      ended()
      return seat
    },
    (err: unknown) => {
      ended()
      if (err !== MOVED) throw err
      return seatFollowing(team, queue, sources, acquire)
    },
  )
}

// The reason a queued wait is given up to move to another team's queue; never seen outside.
const MOVED = new Error('the call moves to another team\'s queue')

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
