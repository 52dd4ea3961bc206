/**
 * A signal for one wait (a call's wait for a seat) that aborts with the first of its
 * sources to abort, with that source's reason, or when `abort` is called; `done` ends the
 * wait and takes its listeners off the sources. AbortSignal.any does the same for a signal
 * of unknown lifetime, holding sources and dependants by weak references (about 10 µs a
 * signal, and garbage for every collection to trace): a wait knows when it ends.
 */
export interface WaitSignal {
  readonly signal: AbortSignal
  abort(reason: unknown): void
  /** The wait is over: the sources' later aborts no longer reach `signal`. */
  done(): void
}

export function waitSignal(sources: readonly (AbortSignal | undefined)[]): WaitSignal {
  const controller = new AbortController()
  const listening: AbortSignal[] = []
  const onAbort = (event: Event) => {
    controller.abort((event.target as AbortSignal).reason)
    done()
  }
  const done = () => {
    for (const source of listening) source.removeEventListener('abort', onAbort)
    listening.length = 0
  }
  for (const source of sources) {
    if (source === undefined) continue
    if (source.aborted) {
      done()
      controller.abort(source.reason)
      break
    }
    source.addEventListener('abort', onAbort)
    listening.push(source)
  }
  return {
    signal: controller.signal,
    abort: (reason) => {
      controller.abort(reason)
      done()
    },
    done,
  }
}
