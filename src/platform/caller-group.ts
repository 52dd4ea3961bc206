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

/** Whose turn a queued call waits for: the team of its earliest caller still waiting. */
export interface QueueTeam {
  readonly team: string | null
  /** `fn` runs when that team changes; the returned function stops it. */
  onChange(fn: () => void): () => void
}

/**
 * The callers waiting on one platform call (issue 15): a call still queued for a slot is
 * dropped, without reaching the platform, once all of them have hung up. A caller
 * without a hang-up signal (a background refresh) keeps the call whatever the others do.
 * While the call waits for a slot it waits in the queue of the team of its earliest
 * caller still there (`team`): when that caller hangs up, the call moves to the next
 * one's team, not to the back of the first team's burst.
 */
export class CallerGroup implements QueueTeam {
  readonly #controller = new AbortController()
  #present = 0
  #pinned = false
  // In join order; a caller that hung up is removed.
  readonly #waiting: { team: string }[] = []
  readonly #changed = new Set<() => void>()

  /** Aborts once every caller that joined has hung up. */
  get signal(): AbortSignal {
    return this.#controller.signal
  }

  get team(): string | null {
    return this.#waiting[0]?.team ?? null
  }

  onChange(fn: () => void): () => void {
    this.#changed.add(fn)
    return () => this.#changed.delete(fn)
  }

  join(hangUp: AbortSignal | undefined, team: string): void {
    if (!hangUp) {
      this.#pinned = true
      this.#waiting.push({ team })
      return
    }
    if (!hangUp.aborted) {
      this.#present += 1
      const caller = { team }
      this.#waiting.push(caller)
      hangUp.addEventListener('abort', () => this.#leave(caller), { once: true })
    } else if (this.#present === 0) {
      this.#leave(null)
    }
  }

  #leave(caller: { team: string } | null): void {
    const before = this.team
    if (caller) this.#waiting.splice(this.#waiting.indexOf(caller), 1)
    this.#present = Math.max(0, this.#present - 1)
    if (this.#present === 0 && !this.#pinned) {
      this.#controller.abort(new CallersGoneError())
      return
    }
    if (this.team !== before) for (const fn of [...this.#changed]) fn()
  }
}

/**
 * A slot of `acquire` for a call waited for under `queue`'s team (else `team`): when that
 * team changes while the call is queued, its place is given up and taken again in the
 * new team's queue, with the same signal and deadline.
 */
export async function slotFollowing<T>(team: string, queue: QueueTeam | undefined, signal: AbortSignal | undefined, acquire: (team: string, signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
  if (!queue) return acquire(team, signal)
  for (;;) {
    const moved = new AbortController()
    const stop = queue.onChange(() => moved.abort(MOVED))
    try {
      return await acquire(queue.team ?? team, signal ? AbortSignal.any([signal, moved.signal]) : moved.signal)
    } catch (err) {
      if (err !== MOVED) throw err
    } finally {
      stop()
    }
  }
}

// The reason a queued wait is given up to move to another team's queue; never seen outside.
const MOVED = new Error('the call moves to another team\'s queue')

/** Aborts when the caller of `res` hangs up before its answer is complete. */
export function hangUpSignal(res: { once(event: 'close', fn: () => void): unknown; writableFinished: boolean }): AbortSignal {
  const controller = new AbortController()
  res.once('close', () => {
    if (!res.writableFinished) controller.abort(new CallersGoneError())
  })
  return controller.signal
}
