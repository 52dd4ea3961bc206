// The price of holding every answer whole (docs/decisions/answer-budget.md): a proxied
// answer of 1 MB, 12 MB and 50 MiB (the sandbox's `large` answer of
// POST /api/v1/campaign/get), read as fast as the caller can, straight from the sandbox,
// through this build, and with --baseline=<dir> through the gateway built there. Each
// target gets one call in turn, round after round, so that the machine's drift falls on
// all alike; each round's times are divided by the sandbox's own in that round, and the
// medians are reported: the time to the answer's headers (a held answer's come once it
// is in whole) and to its last byte.

import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { request } from 'undici'
import { startMainGateway } from '../lib/fixture.mjs'
import { log, stopProcess } from '../lib/processes.mjs'
import { fmtMs, fmtX, markdownTable, median } from '../lib/stats.mjs'

export const id = 'answers'
export const title = 'Large answers: the time to the headers and to the last byte, held whole against streamed'

const ROUTE = '/api/v1/campaign/get'
const SIZES = [
  { label: '1 MB', bytes: 1_000_000 },
  { label: '12 MB', bytes: 12_000_000 },
  { label: '50 MiB', bytes: 50 * 1024 * 1024 },
]

/** One call: ms to the headers and to the last byte, and the bytes read. */
async function timed(url, headers) {
  const started = performance.now()
  const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"userId":101}' })
  const head = performance.now() - started
  let bytes = 0
  for await (const chunk of res.body) bytes += chunk.length
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode}`)
  return { head, whole: performance.now() - started, bytes }
}

/** Runs the scenario; resolves with its Markdown section. */
export async function run({ fixture, quick, baseline = null }) {
  const ROUNDS = quick ? 3 : 9
  const own = []
  try {
    const { hashApiKey } = await import('../../dist/access/api-keys.js')
    const key = `rgw_${randomBytes(32).toString('base64url')}`
    const config = { teams: { bench: { keys: [hashApiKey(key)], advertisers: ['*'], rateLimit: { max: 1_000_000_000, window: '1m' } } } }
    const targets = [{ name: 'sandbox, straight', url: fixture.sandbox.url, headers: { authorization: `Bearer ${fixture.sandbox.token}` } }]
    for (const build of [{ label: 'gateway (this build)' }, ...(baseline ? [{ label: `gateway (${baseline})`, root: baseline }] : [])]) {
      const gw = await startMainGateway(`answers-${targets.length}`, { platformUrl: fixture.sandbox.url, platformToken: fixture.sandbox.token, config, ...(build.root ? { root: build.root } : {}) })
      own.push(gw)
      targets.push({ name: build.label, url: gw.url, headers: { 'x-api-key': key } })
    }
    const rows = []
    for (const size of SIZES) {
      const times = targets.map(() => ({ head: [], whole: [] }))
      for (let round = 0; round <= ROUNDS; round += 1) {
        for (const [i, t] of targets.entries()) {
          await fixture.sandbox.setRouteFailure(ROUTE, { kind: 'large', bytes: size.bytes, times: 1 })
          const r = await timed(`${t.url}${ROUTE}`, t.headers)
          if (r.bytes !== size.bytes) throw new Error(`${t.name}: ${r.bytes} bytes of ${size.bytes}`)
          // Round 0 warms each target up.
          if (round === 0) continue
          times[i].head.push(r.head)
          times[i].whole.push(r.whole)
        }
      }
      const straight = times[0]
      for (const [i, t] of targets.entries()) {
        const ratio = (xs, ys) => median(xs.map((x, k) => x / ys[k]))
        rows.push([size.label, t.name, fmtMs(median(times[i].head)), fmtMs(median(times[i].whole)), i === 0 ? '—' : fmtX(ratio(times[i].whole, straight.whole))])
      }
    }
    await fixture.sandbox.clearRouteFailures()
    log(`answers: ${rows.map((r) => `${r[0]} ${r[1]} ${r[3]}`).join(', ')}`)
    return [
      `${ROUNDS} rounds after a warm-up, one call per target in turn; the gateway's defaults (platform.bufferTotalBytes 128 MiB in this build).`,
      '',
      markdownTable(['answer', 'from', 'to the headers (median)', 'to the last byte (median)', '× straight, last byte (median of each round)'], rows),
      '',
    ].join('\n')
  } finally {
    await Promise.all(own.map((p) => stopProcess(p)))
  }
}
