// The load: wrk runs (closed loop, fixed connections) and stampedes (many callers at once).

import { connect } from 'node:net'
import { join } from 'node:path'
import { PerformanceObserver, performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, Client, request } from 'undici'
import { BENCH, LOAD_CORE, pin, runToEnd } from './processes.mjs'
import { percentile } from './stats.mjs'

/**
 * One wrk run from the load core, with the team key on every request and, unless `gzip`
 * is false, `accept-encoding: gzip` (plain wrk sends no accept-encoding).
 */
export async function wrk(url, { seconds, connections, key, gzip = true, headers = [], script = 'wrk-fixed.lua', scriptArgs = [] }) {
  const argv = ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '5s', '-s', join(BENCH, script)]
  argv.push('-H', `x-api-key: ${key}`, ...(gzip ? ['-H', 'accept-encoding: gzip'] : []), ...headers.flatMap((h) => ['-H', h]), url)
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

/**
 * One GET with the team key, read to its end; its time from dispatch to last byte, its
 * status (or error code) and its retry-after header (null without one).
 */
export async function timedGet(agent, url, key) {
  const t0 = performance.now()
  try {
    const r = await request(url, { dispatcher: agent, headers: { 'x-api-key': key, 'accept-encoding': 'gzip' } })
    await r.body.dump()
    return { ms: performance.now() - t0, status: r.statusCode, retryAfter: r.headers['retry-after'] ?? null }
  } catch (err) {
    return { ms: performance.now() - t0, status: err.code ?? 'error', retryAfter: null }
  }
}

const day = (d) => new Date(Date.UTC(1990, 0, 1 + d)).toISOString().slice(0, 10)
let nextMiss = 0
/** A report on `route` never asked before in this run (a miss): a 7-day window from 1990 on, one of four advertisers. */
export function neverAsked(route) {
  const i = nextMiss++
  const first = Math.floor(i / 4)
  return `${route}?advertiserId=${100 + (i % 4)}&dateFrom=${day(first)}&dateTo=${day(first + 6)}&byDate=1`
}

/**
 * `callers` callers in a closed loop, each sending `nextPath()` with `key` to the next of
 * `origins` in turn as soon as its last answer is in, until `stop()` or `maxSeconds`. A
 * caller refused (429/503) waits as a polite client does: the answer's retry-after (1 s
 * without one, at most 5 s). `stop()` resolves, once every caller is done, with every
 * answer, { ms, status, at } (`at`: performance.now() when it was in).
 */
export function closedLoop({ origins, key, callers, nextPath, maxSeconds }) {
  const agent = new Agent({ connections: callers + 10, keepAliveTimeout: 60_000, headersTimeout: 60_000, bodyTimeout: 60_000 })
  const answers = []
  const until = performance.now() + maxSeconds * 1000
  let stopped = false
  let turn = 0
  const workers = Array.from({ length: callers }, async () => {
    while (!stopped && performance.now() < until) {
      const r = await timedGet(agent, `${origins[turn++ % origins.length]}${nextPath()}`, key)
      answers.push({ ms: r.ms, status: r.status, at: performance.now() })
      if (r.status === 429 || r.status === 503) await sleep(Math.min(5, Number(r.retryAfter) || 1) * 1000)
    }
  })
  return async () => {
    stopped = true
    await Promise.all(workers)
    await agent.close()
    return answers
  }
}

/**
 * One raw keep-alive HTTP/1.1 connection to 127.0.0.1:`port` (node:net, no client
 * library): `send(bytes)` writes a request, `next()` resolves with the next response,
 * { status, headers, body, at } (`at`: performance.now() when its last byte was read),
 * once its whole body is in (content-length, or chunked).
 */
export function rawConnection(port) {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, noDelay: true })
    let buf = Buffer.alloc(0)
    const waiting = []
    let failure = null
    const fail = (err) => {
      failure ??= err
      for (const w of waiting.splice(0)) w.reject(failure)
    }
    /** A complete response at the start of buf, or null while it is incomplete. */
    const parse = () => {
      const end = buf.indexOf('\r\n\r\n')
      if (end === -1) return null
      const lines = buf.subarray(0, end).toString('latin1').split('\r\n')
      const status = Number(lines[0].split(' ')[1])
      const headers = {}
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':')
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      let at = end + 4
      if (headers['content-length'] !== undefined) {
        const length = Number(headers['content-length'])
        if (buf.length < at + length) return null
        return { status, headers, body: buf.subarray(at, at + length), rest: at + length }
      }
      if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
        const parts = []
        for (;;) {
          const lineEnd = buf.indexOf('\r\n', at)
          if (lineEnd === -1) return null
          const size = parseInt(buf.subarray(at, lineEnd).toString('latin1'), 16)
          if (!Number.isFinite(size)) throw new Error('bad chunk size')
          if (buf.length < lineEnd + 2 + size + 2) return null
          if (size === 0) return { status, headers, body: Buffer.concat(parts), rest: lineEnd + 4 }
          parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size))
          at = lineEnd + 2 + size + 2
        }
      }
      throw new Error(`a response with neither content-length nor chunked body (status ${status})`)
    }
    socket.on('data', (chunk) => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk
      try {
        for (;;) {
          if (!waiting.length) return
          const r = parse()
          if (!r) return
          buf = buf.subarray(r.rest)
          waiting.shift().resolve({ status: r.status, headers: r.headers, body: Buffer.from(r.body), at: performance.now() })
        }
      } catch (err) {
        fail(err)
        socket.destroy()
      }
    })
    socket.on('error', (err) => {
      fail(err)
      reject(err)
    })
    socket.once('close', () => fail(new Error('connection closed')))
    socket.once('connect', () =>
      resolve({
        socket,
        send: (bytes) => socket.write(bytes),
        next: () => (failure ? Promise.reject(failure) : new Promise((res, rej) => waiting.push({ resolve: res, reject: rej }))),
        close: () => socket.destroy(),
      }),
    )
  })
}

/**
 * A stampede as issue 17 measures it: `callers` raw keep-alive connections to
 * 127.0.0.1:`port` opened (and each used once for `warmPath`) beforehand, then one GET
 * of `path` written on every one of them at once. Each caller's time runs from the
 * moment the writes start to its full answer. `before()` runs just before the writes;
 * `countCalls()` after the last answer and `settleMs`. Everything is bounded by `timeoutMs`.
 * `clientGcMs`: the time this process (the one that times the answers) spent in its own
 * garbage collections between the writes and the last answer, which every later answer's
 * time includes; `clientCpuMs`: its CPU time (user and system) over the same span.
 */
export async function rawStampede({ port, callers, path, key, warmPath = '/healthz', before = async () => {}, countCalls = async () => null, expectBody = null, settleMs = 200, timeoutMs = 20_000 }) {
  const conns = []
  let gcWatch = null
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    for (const c of conns) c.close()
  }, timeoutMs)
  try {
    const opening = await Promise.allSettled(Array.from({ length: callers }, () => rawConnection(port).then((c) => (conns.push(c), c))))
    const refused = opening.find((o) => o.status === 'rejected')
    if (refused) throw new Error(`could not open ${callers} connections: ${refused.reason.message}`)
    const opened = opening.map((o) => o.value)
    const warm = Buffer.from(`GET ${warmPath} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`, 'latin1')
    const warmed = await Promise.all(opened.map((c) => (c.send(warm), c.next())))
    const badWarm = warmed.find((r) => r.status !== 200)
    if (badWarm) throw new Error(`warm-up GET ${warmPath}: ${badWarm.status}`)
    await before()
    const collections = []
    gcWatch = new PerformanceObserver((list) => collections.push(...list.getEntries()))
    gcWatch.observe({ entryTypes: ['gc'] })
    const ask = Buffer.from(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nx-api-key: ${key}\r\n\r\n`, 'latin1')
    const answers = opened.map((c) => c.next())
    const cpuAtStart = process.cpuUsage()
    const t0 = performance.now()
    for (const c of opened) c.send(ask)
    const writesMs = performance.now() - t0
    const results = await Promise.all(answers)
    const clientCpu = process.cpuUsage(cpuAtStart)
    await sleep(settleMs)
    const calls = await countCalls()
    const sorted = results.map((r) => r.at - t0).sort((a, b) => a - b)
    const lastAt = t0 + sorted.at(-1)
    const clientCpuMs = (clientCpu.user + clientCpu.system) / 1000
    const clientGcMs = collections.filter((e) => e.startTime < lastAt && e.startTime + e.duration > t0).reduce((sum, e) => sum + Math.min(e.startTime + e.duration, lastAt) - Math.max(e.startTime, t0), 0)
    const statuses = {}
    for (const r of results) {
      const k = `${r.status} ${r.headers['x-cache'] ?? '-'}`
      statuses[k] = (statuses[k] ?? 0) + 1
    }
    const wrongBodies = expectBody ? results.filter((r) => r.status === 200 && !r.body.equals(expectBody)).length : 0
    return {
      calls,
      min: sorted[0],
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      max: sorted.at(-1),
      writesMs,
      clientGcMs,
      clientCpuMs,
      statuses,
      wrongBodies,
      ok: results.every((r) => r.status === 200) && wrongBodies === 0,
    }
  } catch (err) {
    throw timedOut ? new Error(`stampede not answered within ${timeoutMs} ms (${err.message})`) : err
  } finally {
    gcWatch?.disconnect()
    clearTimeout(timer)
    for (const c of conns) c.close()
  }
}
