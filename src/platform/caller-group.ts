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

/**
 * The callers waiting on one platform call (issue 15): a call still queued for a slot is
 * dropped, without reaching the platform, once all of them have hung up. A caller
 * without a hang-up signal (a background refresh) keeps the call whatever the others do.
 */
export class CallerGroup {
  readonly #controller = new AbortController()
  #present = 0
  #pinned = false

  /** Aborts once every caller that joined has hung up. */
  get signal(): AbortSignal {
    return this.#controller.signal
  }

  join(hangUp: AbortSignal | undefined): void {
    if (!hangUp) {
      this.#pinned = true
      return
    }
    if (!hangUp.aborted) {
      this.#present += 1
      hangUp.addEventListener('abort', () => this.#leave(), { once: true })
    } else if (this.#present === 0) {
      this.#leave()
    }
  }

  #leave(): void {
    this.#present = Math.max(0, this.#present - 1)
    if (this.#present === 0 && !this.#pinned) this.#controller.abort(new CallersGoneError())
  }
}

/** Aborts when the caller of `res` hangs up before its answer is complete. */
export function hangUpSignal(res: { once(event: 'close', fn: () => void): unknown; writableFinished: boolean }): AbortSignal {
  const controller = new AbortController()
  res.once('close', () => {
    if (!res.writableFinished) controller.abort(new CallersGoneError())
  })
  return controller.signal
}
