import type { Logger } from 'pino'
import type { Metrics } from '../../observe/metrics.js'
import type { Verdict } from '../tokens/token-verdict.js'
import { systemClock } from '../../clock.js'

// One line per credential, path and team per minute at most: a team calling a guarded
// route in a loop must not flood the log (the counter counts every call).
const LOG_EVERY_MS = 60_000
// The lines' memory is dropped whole past this many routes, rather than grow with
// whatever paths callers make up.
const MAX_TRACKED = 1000

interface Logged {
  at: number
  /** 401s of the same kind since that line. */
  since: number
}

/** Counts platform 401s by verdict and logs those the probe did not confirm. */
export class RefusalLog {
  readonly #log: Logger
  readonly #counter: Metrics['platformUnauthorized']
  readonly #now: () => number
  readonly #logged = new Map<string, Logged>()

  constructor(opts: { log: Logger; metrics: Metrics; now?: () => number }) {
    this.#log = opts.log
    this.#counter = opts.metrics.platformUnauthorized
    this.#now = opts.now ?? systemClock.now
  }

  note(credential: string, verdict: Verdict, call: { url: string; team: string }): void {
    this.#counter.inc({ credential, verdict })
    if (verdict === 'confirmed') return
    const path = call.url.split('?', 1)[0] as string
    const key = `${credential}\0${path}\0${call.team}`
    const now = this.#now()
    const last = this.#logged.get(key)
    if (last && now - last.at < LOG_EVERY_MS) {
      last.since += 1
      return
    }
    if (!last && this.#logged.size >= MAX_TRACKED) this.#logged.clear()
    this.#logged.set(key, { at: now, since: 0 })
    this.#log.warn(
      { credential, path, team: call.team, verdict, sinceLastLine: last?.since ?? 0 },
      'platform 401 not confirmed by the probe call: that call is answered GW_PLATFORM_REFUSED; the token stays in use',
    )
  }
}
