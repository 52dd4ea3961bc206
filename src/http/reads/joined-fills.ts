import type { IncomingMessage } from 'node:http'
import type { RateDecision } from '../../access/rate-limit.js'
import type { FillResult } from '../../reports/report-cache.js'

/**
 * A cold fill the fast path joined for a caller (http/reads/fast-path.ts), handed to the
 * report route when it ended in no entry: the route answers it as it answers its own
 * waiters (an error, a stale copy, a passed-on answer), without filling again.
 */
export interface JoinedFill {
  flight: Promise<FillResult>
  /** The caller's rate-limit decision, counted when it joined. */
  rate: RateDecision
}

const joinedFills = new WeakMap<IncomingMessage, JoinedFill>()

export function handOverJoinedFill(req: IncomingMessage, fill: JoinedFill): void {
  joinedFills.set(req, fill)
}

/** The fill the fast path joined for this request, if it handed the request over (taken once). */
export function takeJoinedFill(req: IncomingMessage): JoinedFill | undefined {
  const joined = joinedFills.get(req)
  joinedFills.delete(req)
  return joined
}
