// The price of reading a team key in its percent-encoded spellings too (src/access/api-keys.ts
// withoutKeys and holdsKey) beside the literal shape alone (`rgw_` and base64url, what they
// read before): an access line of 401 characters without `%`, and the same line with a
// percent-encoded path; side by side in one run, 8 rounds of 1 million calls each, the
// median of the last 5 printed with its rounds. Run after `npm run build:gateway`:
//   flock /tmp/bench.lock node_modules/.bin/node bench/key-shape-spellings.mjs
import { holdsKey, withoutKeys } from '../dist/observe/key-shape.js'

const LITERAL = /rgw_[A-Za-z0-9_-]{16,}/g
const A_LITERAL = /rgw_[A-Za-z0-9_-]{16,}/
const literal = {
  withoutKeys: (text) => (text.includes('rgw_') ? text.replace(LITERAL, '[REDACTED]') : text),
  holdsKey: (text) => text.includes('rgw_') && A_LITERAL.test(text),
}
const spelled = { withoutKeys, holdsKey }

const fields = {
  level: 30, time: 1795750000000, pid: 1, hostname: 'gw', reqId: '0f3a9c1e-2b4d-8a11-9c3e-000000000123', client: '127.0.0.1', team: 'growth', keyId: 'growth-2026',
  method: 'GET', path: '/api/v1/report/campaigns/get', advertiser: 101, route: 'report', status: 200, durationMs: 0.4, upstreamMs: null, cache: 'HIT', bytes: 1832,
  userAgent: 'Mozilla/5.0 (X11; Linux x86_64) dashboard/1.0', msg: 'request',
}
const lines = {
  'no %': JSON.stringify(fields),
  'a %2F path': JSON.stringify({ ...fields, path: '/api/v1/report/campaigns%2Fget%2Fx%20y' }),
}

function time(fn, line, n) {
  const started = process.hrtime.bigint()
  let sink = 0
  for (let i = 0; i < n; i++) sink += String(fn(line)).length
  if (sink < 0) console.log(sink)
  return Number(process.hrtime.bigint() - started) / n
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const [lineName, line] of Object.entries(lines)) {
  for (const fn of ['withoutKeys', 'holdsKey']) {
    const rounds = { literal: [], spelled: [] }
    for (let r = 0; r < 8; r++) for (const [name, impl] of [['literal', literal], ['spelled', spelled]]) rounds[name].push(time(impl[fn], line, 1_000_000))
    const out = Object.entries(rounds).map(([name, xs]) => {
      const kept = xs.slice(3)
      return `${name} ${median(kept).toFixed(0)} ns (${kept.map((x) => x.toFixed(0)).join(', ')})`
    })
    console.log(`${lineName}, ${fn}: ${out.join('; ')}`)
  }
}
