import type { Server } from 'node:net'
import { performance } from 'node:perf_hooks'
import type { Logger } from 'pino'

// A listener's bound on its open connections. Each connection a listener holds costs the
// replica memory whatever it carries: an idle kept-alive one about 12 KiB after a request
// Node's parser read (config/memory-fit.ts CONNECTION_BYTES), so callers that open sockets and
// keep them idle (renewing each within server.keepAliveTimeout) could fill the replica's
// memory limit without a request a rate limit counts. Past the bound, Node closes the
// next connection as it is accepted, before a byte of it is read (net.Server
// maxConnections, its 'drop' event): the caller sees it closed unanswered and goes
// elsewhere, as it would for a replica that is gone. Each is counted; they are said in one
// warn line a minute at most, so that a flood of them is not a flood of log lines.

/** The least time between two warn lines of one listener's refused connections. */
export const WARN_EVERY_MS = 60_000

/** What a listener does past its bound. */
export interface ConnectionBound {
  /** The listener's name in the metric's label and the warn line: proxy, admin. */
  listener: string
  /** The setting that bounds it: server.maxConnections, admin.maxConnections. */
  setting: string
  /** The most connections it holds open at once. */
  max: number
  /** Counts one connection refused. */
  refused: () => void
}

/**
 * The refused connections a warn line says: the first at once, then the count since the
 * last line once WARN_EVERY_MS has passed since it (null until then).
 */
export class RefusalNotice {
  private unsaid = 0
  private saidAt = -Infinity

  /** Notes one refusal at `now` (ms): the count to say now, or null. */
  note(now: number): number | null {
    this.unsaid++
    if (now - this.saidAt < WARN_EVERY_MS) return null
    const count = this.unsaid
    this.unsaid = 0
    this.saidAt = now
    return count
  }
}

/** Bounds `server`'s open connections at `bound.max`: each one past it is closed, counted and (a line a minute at most) logged. */
export function boundConnections(server: Server, bound: ConnectionBound, log: Pick<Logger, 'warn'>, now: () => number = () => performance.now()): void {
  server.maxConnections = bound.max
  const notice = new RefusalNotice()
  server.on('drop', () => {
    bound.refused()
    const refused = notice.note(now())
    if (refused === null) return
    log.warn(
      { listener: bound.listener, maxConnections: bound.max, refused },
      `connections refused: the ${bound.listener} listener holds ${bound.setting} (${bound.max}) open connections; each next one is closed unanswered until one of them closes (refused: those since the last such line)`,
    )
  })
}
