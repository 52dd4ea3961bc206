import type { IncomingMessage } from 'node:http'
import type { RateDecision } from '../../access/rate-limit.js'
import type { CallTally, FillResult, Lookup } from '../../reports/report-cache.js'

/**
 * What the fast path (http/reads/fast-path.ts) found for a caller it hands to the report
 * route, so that the route does not do it again: the caller's rate-limit decision, counted
 * already; the cold fill it joined, which ended in no entry (the route answers it as it
 * answers its own waiters: an error, a stale copy, a passed-on answer, without filling
 * again) and the calls of that fill charged to the caller (the fill's tries sent for it:
 * its own, as the route's own joined fills charge them); or the copy it looked up, which
 * was not fresh (null: none anywhere); or the refusal it decided, which is the read's answer:
 * the route decides the read again only to name its caller, and a decision made again may
 * differ (a secret the read held has suspended its team since: the read itself is its 400).
 */
export interface HandedOver {
  rate?: RateDecision
  refused?: unknown
  flight?: Promise<FillResult>
  charged?: CallTally
  found?: Lookup | null
}

const handedOver = new WeakMap<IncomingMessage, HandedOver>()

export function handOver(req: IncomingMessage, what: HandedOver): void {
  handedOver.set(req, what)
}

/** What the fast path handed over with this request, if it did (taken once). */
export function takeHandedOver(req: IncomingMessage): HandedOver | undefined {
  const what = handedOver.get(req)
  handedOver.delete(req)
  return what
}
