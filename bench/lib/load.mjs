// The load: wrk runs (closed loop, fixed connections) and stampedes (many callers at once).

import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { Client, request } from 'undici'
import { BENCH, LOAD_CORE, pin, runToEnd } from './processes.mjs'
import { percentile } from './stats.mjs'

/** One wrk run from the load core, with the team key and gzip on every request. */
export async function wrk(url, { seconds, connections, key, script = 'wrk-fixed.lua', scriptArgs = [] }) {
  const argv = ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '5s', '-s', join(BENCH, script)]
  argv.push('-H', `x-api-key: ${key}`, '-H', 'accept-encoding: gzip', url)
  if (scriptArgs.length) argv.push('--', ...scriptArgs)
  const [cmd, args] = pin(LOAD_CORE, 'wrk', argv)
  const out = await runToEnd('wrk', cmd, args, (seconds + 30) * 1000)
  const line = out.split('\n').find((l) => l.startsWith('WRK_JSON '))
  if (!line) throw new Error(`wrk printed no result:\n${out}`)
  const r = JSON.parse(line.slice('WRK_JSON '.length))
  const errors = r.err_connect + r.err_read + r.err_write + r.err_status + r.err_timeout
  return {
    requests: r.requests,
    rps: r.requests / (r.duration_us / 1e6),
    p50: r.p50_us / 1000,
    p99: r.p99_us / 1000,
    errors,
    errorDetail: errors ? `connect ${r.err_connect}, read ${r.err_read}, write ${r.err_write}, non-2xx ${r.err_status}, timeout ${r.err_timeout}` : '',
  }
}

/**
 * `callers` requests for one URL, all started together from this process, on
 * connections opened beforehand. Latency of each: from its dispatch to its last byte.
 */
export async function stampede(groups, path, { key, before, countCalls }) {
  const clients = []
  for (const { origin, callers, warmPath } of groups) {
    for (let i = 0; i < callers; i += 1) clients.push({ client: new Client(origin, { pipelining: 1, keepAliveTimeout: 60_000 }), warmPath })
  }
  try {
    // Open every connection first, so the stampede measures waiting, not TCP handshakes.
    await Promise.all(clients.map(({ client, warmPath }) => client.request({ method: 'GET', path: warmPath }).then((r) => r.body.dump())))
    await before()
    const headers = { 'x-api-key': key, 'accept-encoding': 'gzip' }
    const results = await Promise.all(
      clients.map(({ client }) => {
        const t0 = performance.now()
        return client.request({ method: 'GET', path, headers }).then(async (r) => {
          await r.body.dump()
          return { ms: performance.now() - t0, status: r.statusCode, cache: String(r.headers['x-cache-status'] ?? r.headers['x-cache'] ?? '-') }
        })
      }),
    )
    await sleep(200)
    const calls = await countCalls()
    const sorted = results.map((r) => r.ms).sort((a, b) => a - b)
    const statuses = {}
    for (const r of results) statuses[`${r.status} ${r.cache}`] = (statuses[`${r.status} ${r.cache}`] ?? 0) + 1
    return { calls, min: sorted[0], p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1], statuses, ok: results.every((r) => r.status === 200) }
  } finally {
    await Promise.all(clients.map(({ client }) => client.close().catch(() => undefined)))
  }
}

/** One GET with the team key, read to its end; its time from dispatch to last byte and its status (or error code). */
export async function timedGet(agent, url, key) {
  const t0 = performance.now()
  try {
    const r = await request(url, { dispatcher: agent, headers: { 'x-api-key': key, 'accept-encoding': 'gzip' } })
    await r.body.dump()
    return { ms: performance.now() - t0, status: r.statusCode }
  } catch (err) {
    return { ms: performance.now() - t0, status: err.code ?? 'error' }
  }
}
