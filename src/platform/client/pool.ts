import { Agent } from 'undici'

export interface PoolOptions {
  connections: number
  keepAliveTimeoutMs: number
  timeoutMs: number
}

// One keep-alive pool (per origin) for every call to the platform: the proxy, the
// report client and the token requests share its connections.
export function createPlatformPool(opts: PoolOptions): Agent {
  return new Agent({
    connections: opts.connections,
    keepAliveTimeout: opts.keepAliveTimeoutMs,
    keepAliveMaxTimeout: Math.max(opts.keepAliveTimeoutMs, 1000),
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    pipelining: 1,
  })
}
