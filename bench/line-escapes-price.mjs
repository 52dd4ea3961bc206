// The price of escaping a log line's line breakers (src/observe/line-escapes.ts, applied to
// every line the logger writes, after the scrub): an access line of 401 characters holding
// none, and the same line with a user-agent holding NEL and U+2028; 8 rounds, the median of
// the last 5 printed with each round. Run after `npm run build:gateway`:
//   flock /tmp/bench.lock node bench/line-escapes-price.mjs
import { escapedLineBreakers } from '../dist/observe/line-escapes.js'

const fields = {
  level: 30, time: Date.now(), pid: 1, hostname: 'gw', reqId: '0f3a9c1e-2b4d-8a11-9c3e-000000000123', client: '127.0.0.1', team: 'growth', keyId: 'growth-2026',
  method: 'GET', path: '/api/v1/report/campaigns/get', advertiser: 101, route: 'report', status: 200, durationMs: 0.4, upstreamMs: null, cache: 'HIT', bytes: 1832,
  userAgent: 'Mozilla/5.0 (X11; Linux x86_64) dashboard/1.0', msg: 'request',
}
const plain = JSON.stringify(fields)
const breaking = JSON.stringify({ ...fields, userAgent: 'Mozilla/5.0\u0085{"level":30}\u2028dashboard/1.0' })

/** Nanoseconds a call of `fn` on `line` takes, over `n` calls. */
function time(fn, line, n) {
  const started = process.hrtime.bigint()
  let sink = 0
  for (let i = 0; i < n; i++) sink += fn(line).length
  if (sink < 0) console.log(sink)
  return Number(process.hrtime.bigint() - started) / n
}

const N = 2_000_000
const cases = { nothing: [(l) => l, plain], plain: [escapedLineBreakers, plain], breaking: [escapedLineBreakers, breaking] }
const rounds = Object.fromEntries(Object.keys(cases).map((k) => [k, []]))
for (let r = 0; r < 8; r++) for (const [name, [fn, line]] of Object.entries(cases)) rounds[name].push(time(fn, line, N))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
console.log(`line of ${plain.length} characters`)
for (const [name, xs] of Object.entries(rounds)) console.log(`${name}: ${median(xs.slice(3)).toFixed(1)} ns (rounds ${xs.slice(3).map((x) => x.toFixed(1)).join(', ')})`)
