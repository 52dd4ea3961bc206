/**
 * The platform client's shutdown, watched by every call in flight. A set of watchers, not
 * listeners on one shared AbortSignal: an EventTarget walks its whole listener list on
 * every add and remove (to refuse a duplicate), so with a burst's hundreds of calls in
 * flight each call paid for all the others twice.
 */
export class ShutdownWatch {
  #reason: Error | null = null
  readonly #watchers = new Set<(reason: Error) => void>()

  /** Why the client shut down; null while it has not. */
  get reason(): Error | null {
    return this.#reason
  }

  /** `fn` runs once at the shutdown, at once when it came already; the returned function stops the watch. */
  watch(fn: (reason: Error) => void): () => void {
    if (this.#reason !== null) {
      fn(this.#reason)
      return () => undefined
    }
    this.#watchers.add(fn)
    return () => this.#watchers.delete(fn)
  }

  /** Shuts down with `reason`: every watcher runs once; later calls change nothing. */
  shutDown(reason: Error): void {
    if (this.#reason !== null) return
    this.#reason = reason
    const watchers = [...this.#watchers]
    this.#watchers.clear()
    for (const fn of watchers) fn(reason)
  }
}
