// The platform stand-in (bench/dashboard-origin.mjs) on the load core, with its control calls.

import { http } from './http.mjs'
import { LOAD_CORE, launch, pin } from './processes.mjs'

/**
 * Starts a stand-in answering report calls in `latencyMs` (log-normally spread by `spread`, σ); with `knee`, `slopeMs` and
 * `refuseAbove`, a platform with a capacity (see bench/dashboard-origin.mjs); `callLog`: it keeps each report call.
 */
export async function startStandIn(name, { latencyMs, spread = 0, knee, slopeMs, refuseAbove, callLog = false }) {
  const env = { BENCH_LATENCY_MS: String(latencyMs), BENCH_SPREAD: String(spread), ...(callLog ? { BENCH_CALL_LOG: '1' } : {}) }
  if (knee !== undefined) Object.assign(env, { BENCH_KNEE: String(knee), BENCH_SLOPE_MS: String(slopeMs ?? 0) })
  if (refuseAbove !== undefined) env.BENCH_REFUSE_ABOVE = String(refuseAbove)
  const [cmd, args] = pin(LOAD_CORE, process.execPath, ['bench/dashboard-origin.mjs'])
  const p = await launch(name, cmd, args, { env, ready: /^READY / })
  const url = `http://127.0.0.1:${JSON.parse(p.line.slice('READY '.length)).port}`
  return {
    ...p,
    url,
    /** { count, byRoute, refused }: report calls since the last reset. */
    counts: async () => (await http('GET', `${url}/__count`)).json(),
    resetCounts: () => http('DELETE', `${url}/__count`),
    /** With `callLog`: the report calls from the `from`-th on, each { at, answeredAt, path, requestId }. */
    calls: async (from = 0) => (await http('GET', `${url}/__calls?from=${from}`)).json(),
    /** { inFlight, meanInFlight, peak, overLimit } since the previous call (bench/lib/platform-load.mjs). */
    load: async () => (await http('GET', `${url}/__load`)).json(),
  }
}
