import { randomUUID } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import type { GatewayContext } from '../context.js'

const REQUEST_ID = /^[\w.:-]{1,128}$/

/** The caller's `x-request-id` when it is a plain token, else a new one. */
export function requestIdOf(headers: IncomingHttpHeaders): string {
  const given = headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
}

export interface RequestFacts {
  reqId: string
  team: string | null
  /** The id of the key the caller presented. */
  keyId: string | null
  /** Answered by the cache: a platform call saved (teams/team-usage.ts). */
  hit: boolean
  /** Bytes written to the caller's connection for this answer. */
  bytes: number
  method: string
  url: string
  route: string
  status: number
  durationMs: number
  cache: string | null
}

export type ObserveRequest = (facts: RequestFacts) => void

/**
 * One log line and the request metrics per request (issue 2, "Logs"), for both
 * entrances of the proxy listener. Labelled metric children are looked up once per
 * label set, not on every request.
 */
export function requestObserver(ctx: GatewayContext): ObserveRequest {
  const counters = new Map<string, { inc(): void }>()
  const timers = new Map<string, { observe(v: number): void }>()
  const logRequests = ctx.log.isLevelEnabled('info')
  return (facts) => {
    const countKey = `${facts.route} ${facts.status}`
    let counter = counters.get(countKey)
    if (!counter) {
      counter = ctx.metrics.requests.labels({ route: facts.route, status: String(facts.status) })
      counters.set(countKey, counter)
    }
    counter.inc()
    let timer = timers.get(facts.route)
    if (!timer) {
      timer = ctx.metrics.requestDuration.labels({ route: facts.route })
      timers.set(facts.route, timer)
    }
    timer.observe(facts.durationMs / 1000)
    if (facts.team !== null) ctx.usage.request(facts.team, facts.status, facts.hit, facts.bytes)
    if (!logRequests) return
    const q = facts.url.indexOf('?')
    ctx.log.info(
      {
        reqId: facts.reqId,
        team: facts.team,
        keyId: facts.keyId,
        method: facts.method,
        path: q === -1 ? facts.url : facts.url.slice(0, q),
        route: facts.route,
        status: facts.status,
        durationMs: Math.round(facts.durationMs * 10) / 10,
        cache: facts.cache,
      },
      'request',
    )
  }
}

/** The metrics' route label of a matched route. */
export function routeKind(route: string): string {
  return route.startsWith('/api/v1/report') ? 'report' : route.startsWith('/api/v1') ? 'proxy' : route
}
