import { Agent } from 'undici'

export interface PoolOptions {
  connections: number
  keepAliveTimeoutMs: number
  timeoutMs: number
}

// One keep-alive pool (per origin) for every call to the platform: the proxy, the
// report client and the token requests share its connections. Headers are awaited up to
// twice a call's budget: a call past its caller's deadline is watched for another
// `platform.timeout` (docs/governor.md, dispatch rule 4), so that its answer frees its
// seat and teaches its kind's time; the client's own timers end every call sooner.
export function createPlatformPool(opts: PoolOptions): Agent {
  return new Agent({
    connections: opts.connections,
    keepAliveTimeout: opts.keepAliveTimeoutMs,
    keepAliveMaxTimeout: Math.max(opts.keepAliveTimeoutMs, 1000),
    headersTimeout: 2 * opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    pipelining: 1,
  })
}
