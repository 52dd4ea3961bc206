import { Agent, type Dispatcher } from 'undici'
import { guardedLookup, type PlatformCheck } from './webhook-target.js'

/** How long an idle kept connection stays open at most, whatever keep-alive the receiver offers. */
export const WEBHOOK_IDLE_MS = 30_000

/** What a receiver's connections are opened with beyond the guarded lookup: a test's or a benchmark's own CA. */
export interface WebhookConnectOptions {
  ca?: string | Buffer
}

/**
 * The connections webhook deliveries reuse, one pool per receiver origin (scheme, host,
 * port), so that an https receiver pays one TLS handshake per connection, not per attempt.
 * The rules of a delivery hold for every request on them (docs/jobs.md, "Pushed when done"):
 *
 * - Each connection's address is resolved when it is opened, through the guarded lookup
 *   that refuses the platform's sockets (webhook-target.ts): a request goes only over a
 *   connection whose address was checked.
 * - A pool serves the attempts of one resolution of the platform's sockets (`key`); an
 *   attempt that resolves them otherwise retires the pool and opens a new one, so no kept
 *   connection outlives the resolution it was checked against (a platform moved to the
 *   receiver's address is refused at the next attempt, not reached over an old socket).
 * - The allow-list, the scheme and the platform's host names are checked per attempt
 *   before a pool is asked; redirects are not followed and an attempt's time and answer
 *   bounds hold per request (webhook-deliveries.ts): an attempt whose answer was not
 *   read to its end (cut at its bound, timed out, failed) retires its pool (`drop`).
 * - A retired pool is given no attempt again, and is closed once the attempts under way on
 *   it have ended (`done`): one team's silent receiver never cuts another delivery sharing
 *   its origin (another team's, to the same host and port).
 * - Idle connections close after the receiver's keep-alive, at most WEBHOOK_IDLE_MS.
 */
export class WebhookConnections {
  readonly #pools = new Map<string, { agent: Agent; platform: string }>()
  /** Every pool with attempts under way or kept: its attempts under way, and whether it is retired. */
  readonly #uses = new Map<Dispatcher, { attempts: number; retired: boolean }>()
  readonly #connect: WebhookConnectOptions

  constructor(connect: WebhookConnectOptions = {}) {
    this.#connect = connect
  }

  /** The dispatcher of `url`'s origin whose connections are checked against `isPlatform`, for one attempt: `done` when it ends. */
  for(url: URL, isPlatform: PlatformCheck): Dispatcher {
    let kept = this.#pools.get(url.origin)
    if (kept && kept.platform !== isPlatform.key) {
      this.#pools.delete(url.origin)
      this.#retire(kept.agent)
      kept = undefined
    }
    if (!kept) {
      const agent = new Agent({ connect: { ...this.#connect, lookup: guardedLookup(url, isPlatform) }, keepAliveMaxTimeout: WEBHOOK_IDLE_MS })
      kept = { agent, platform: isPlatform.key }
      this.#pools.set(url.origin, kept)
      this.#uses.set(agent, { attempts: 0, retired: false })
    }
    ;(this.#uses.get(kept.agent) as { attempts: number }).attempts += 1
    return kept.agent
  }

  /** An attempt on `dispatcher` ended: a retired pool is closed once its last attempt has. */
  done(dispatcher: Dispatcher): void {
    const use = this.#uses.get(dispatcher)
    if (use === undefined) return
    use.attempts -= 1
    if (use.retired && use.attempts <= 0) this.#destroy(dispatcher)
  }

  /**
   * Retires `dispatcher`'s pool if it is still the one of `url`'s origin: after an attempt
   * that did not read its answer to the end (cut at its bound, timed out, failed), the next
   * attempt starts from new connections rather than from a pool whose request was aborted.
   */
  drop(url: URL, dispatcher: Dispatcher): void {
    const kept = this.#pools.get(url.origin)
    if (kept?.agent !== dispatcher) return
    this.#pools.delete(url.origin)
    this.#retire(kept.agent)
  }

  #retire(agent: Agent): void {
    const use = this.#uses.get(agent)
    if (use === undefined) return
    use.retired = true
    if (use.attempts <= 0) this.#destroy(agent)
  }

  #destroy(pool: Dispatcher): void {
    this.#uses.delete(pool)
    void pool.destroy()
  }

  /** Closes every kept connection. */
  async close(): Promise<void> {
    const agents = [...this.#uses.keys()]
    this.#pools.clear()
    this.#uses.clear()
    await Promise.all(agents.map((a) => a.destroy()))
  }
}
