import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import type { Logger } from 'pino'

// How many connections a listener holds at once, and what says the ones its bound closed.
// Each connection a listener holds costs the replica memory whatever it carries (an idle
// kept-alive one about 12 KiB: config/memory-fit.ts CONNECTION_BYTES) and a file
// descriptor. The setting (server.maxConnections, admin.maxConnections) bounds the memory;
// past the process's open-file limit the process can open nothing (every new caller's
// connection is reset, the balancer's health check's and the admin listener's too, and so
// is every connection and file the gateway opens itself: the platform, Redis, a teams
// file), so where that limit leaves fewer the bound is what it leaves: half of the limit
// past a part kept for the gateway's own use, so that both listeners at their bounds still
// leave it that part. What is closed at the bound is hooks/silent-connections.ts's choice:
// the longest silent connections with no answer under way (`idle`); with none, the longest
// silent of the team holding the most answers under way past its part of the bound
// (`busy`: http/connection-teams.ts); or the new one when no team is past its part (`new`).

/** The least time between two warn lines of one listener's connections closed at its bound. */
export const WARN_EVERY_MS = 60_000

/**
 * Which connection the bound closed: `idle`, one with no answer under way closed to make
 * room; `busy`, one with an answer under way of the team holding the most of them past its
 * part of the bound, closed to make room; `new`, the one that came past the bound, every
 * other having an answer under way and no team past its part.
 */
export type ClosedAtBound = 'idle' | 'busy' | 'new'

/** Every value of ClosedAtBound: the metric's series, shown from the start. */
export const CLOSED_AT_BOUND: readonly ClosedAtBound[] = ['idle', 'busy', 'new']

/** The descriptors kept for the gateway's own connections and files: a quarter of the limit, at most 512. */
export function reservedFiles(fileLimit: number): number {
  return Math.min(512, Math.floor(fileLimit / 4))
}

/** The soft open-file limit in the text of `/proc/<pid>/limits`; null when it states none (or `unlimited`). */
export function openFileLimit(limits: string): number | null {
  const match = /^Max open files\s+(\d+)\s/m.exec(limits)
  return match === null ? null : Number(match[1])
}

/** A listener's connection bound: `setting`, or half of what `fileLimit` leaves past reservedFiles when that is lower (null: no limit known). */
export function connectionBound(setting: number, fileLimit: number | null): number {
  if (fileLimit === null) return setting
  return Math.min(setting, Math.max(1, Math.floor((fileLimit - reservedFiles(fileLimit)) / 2)))
}

/** This process's open-file limit (Node raises the soft limit to the hard one as it starts); null where the system does not say (not Linux). */
export function processFileLimit(): number | null {
  try {
    return openFileLimit(readFileSync('/proc/self/limits', 'utf8'))
  } catch {
    return null
  }
}

/** The connections closed at a bound since a warn line said them. */
export type ClosedCounts = Record<ClosedAtBound, number>

/**
 * The connections closed at a bound a warn line says: the first at once, then those since
 * the last line once WARN_EVERY_MS has passed since it (null until then).
 */
export class ClosedNotice {
  private unsaid: ClosedCounts = { idle: 0, busy: 0, new: 0 }
  private saidAt = -Infinity

  /** Notes `count` connections closed as `which` at `now` (ms): the counts to say now, or null. */
  note(which: ClosedAtBound, count: number, now: number): ClosedCounts | null {
    this.unsaid[which] += count
    if (now - this.saidAt < WARN_EVERY_MS) return null
    const said = this.unsaid
    this.unsaid = { idle: 0, busy: 0, new: 0 }
    this.saidAt = now
    return said
  }
}

/** A listener's bound as configured. */
export interface ListenerBound {
  /** The listener's name in the metric's label and the warn line: proxy, admin. */
  listener: string
  /** The setting that bounds it: server.maxConnections, admin.maxConnections. */
  setting: string
  /** The setting's value. */
  max: number
  /** Counts `count` connections closed as `which`. */
  closed: (which: ClosedAtBound, count: number) => void
  /** Told the bound in force: `max`, or fewer where the open-file limit leaves fewer. */
  inForce?: (max: number) => void
}

/** A bound as hooks/silent-connections.ts enforces it. */
export interface EnforcedBound {
  /** The most connections the listener holds. */
  max: number
  /** Called with the connections closed at the bound, `count` of them as `which`. */
  closed: (which: ClosedAtBound, count: number) => void
}

/** `bound` under `fileLimit` (connectionBound), each closing counted and (a line a minute at most) logged. */
export function enforcedBound(bound: ListenerBound, fileLimit: number | null, log: Pick<Logger, 'warn'>, now: () => number = () => performance.now()): EnforcedBound {
  const max = connectionBound(bound.max, fileLimit)
  bound.inForce?.(max)
  const notice = new ClosedNotice()
  return {
    max,
    closed: (which, count) => {
      bound.closed(which, count)
      const said = notice.note(which, count, now())
      if (said === null) return
      log.warn(
        { listener: bound.listener, maxConnections: max, closedIdle: said.idle, closedBusy: said.busy, closedNew: said.new },
        `connections closed at the bound: the ${bound.listener} listener held ${max} open connections (${bound.setting}, or what the open-file limit leaves when fewer); ` +
          'closedIdle: the longest silent with no answer under way, closed to make room; closedBusy: with none idle, the longest silent of the team holding the most answers under way past its part of the bound (callers with no key counted as one team), cut to make room; ' +
          'closedNew: closed unanswered as they came, every other connection having an answer under way and no team past its part (all since the last such line)',
      )
    },
  }
}
