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

interface Asker {
  team: string
  priority: Priority
}

/**
 * The callers waiting on one platform call: a call still queued for a seat is dropped,
 * without reaching the platform, once all of them have hung up. An asker without a
 * hang-up signal (a background refresh) keeps the call whatever the others do. While the
 * call waits for a seat it waits at the priority of its most pressing asker (a caller who
 * joins a refresh makes it a caller's call) and in the queue of the team of the earliest
 * of those (`team`): when that caller hangs up, the call moves to the next one's team,
 * not to the back of the first team's burst.
 */
export class CallerGroup implements QueueTeam {
  readonly #controller = new AbortController()
  #present = 0
  #pinned = false
  // In join order; a caller that hung up is removed.
  readonly #waiting: Asker[] = []
  // The earliest asker of the highest priority in #waiting: a joiner takes its place only
  // with a higher priority, and it is looked for again only when it leaves. So a stampede's
  // callers join in constant time each, not in time growing with those before them.
  #first: Asker | undefined
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

  join(hangUp: HangUp | undefined, team: string, priority: Priority = 'caller'): void {
    const before = this.#first
    if (!hangUp) {
      this.#pinned = true
      this.#add({ team, priority })
    } else if (typeof hangUp === 'function' || !hangUp.aborted) {
      this.#present += 1
      const caller = { team, priority }
      this.#add(caller)
      const leave = () => this.#leave(caller)
      if (typeof hangUp === 'function') hangUp(leave)
      else hangUp.addEventListener('abort', leave, { once: true })
    } else if (this.#present === 0) {
      this.#leave(null)
      return
    }
    if (before !== undefined && this.#first !== before) this.#changed.forEach((fn) => fn())
  }

  #add(asker: Asker): void {
    this.#waiting.push(asker)
    if (this.#first === undefined || rank(asker) < rank(this.#first)) this.#first = asker
  }

  #leave(caller: Asker | null): void {
    const before = this.#first
    if (caller) {
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
