// The price of the team-key shape in every log line (src/access/api-keys.ts withoutKeys,
// applied in SecretSet.scrub): an access line of 401 characters holding no key, timed
// alone, with holdsKey, and within the whole scrub of 5 secrets; 8 rounds, the median of
// the last 5 printed with each round. Run after `npm run build:gateway`:
//   flock /tmp/bench.lock node bench/key-shape-scrub.mjs
import { SecretSet } from '../dist/observe/logger.js'
import { holdsKey, withoutKeys } from '../dist/observe/key-shape.js'

const secrets = new SecretSet()
for (const s of ['platform-token-0123456789abcdef', 'admin-token-0123456789abcdef', 'gateway-secret-0123456789abcdef', 'client-secret-0123456789', 'password-0123456789']) secrets.add(s)
const line = JSON.stringify({
  level: 30, time: Date.now(), pid: 1, hostname: 'gw', reqId: '0f3a9c1e-2b4d-8a11-9c3e-000000000123', client: '127.0.0.1', team: 'growth', keyId: 'growth-2026',
  method: 'GET', path: '/api/v1/report/campaigns/get', advertiser: 101, route: 'report', status: 200, durationMs: 0.4, upstreamMs: null, cache: 'HIT', bytes: 1832,
  userAgent: 'Mozilla/5.0 (X11; Linux x86_64) dashboard/1.0', msg: 'request',
})

/** Nanoseconds a call of `fn` on the line takes, over `n` calls. */
function time(fn, n) {
  const started = process.hrtime.bigint()
  let sink = 0
  for (let i = 0; i < n; i++) sink += String(fn(line)).length
  if (sink < 0) console.log(sink)
  return Number(process.hrtime.bigint() - started) / n
}

const N = 2_000_000
const cases = { nothing: (l) => l, withoutKeys, holdsKey, scrub: (l) => secrets.scrub(l) }
const rounds = Object.fromEntries(Object.keys(cases).map((k) => [k, []]))
for (let r = 0; r < 8; r++) for (const [name, fn] of Object.entries(cases)) rounds[name].push(time(fn, name === 'scrub' ? N / 4 : N))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
console.log(`line of ${line.length} characters`)
for (const [name, xs] of Object.entries(rounds)) console.log(`${name}: ${median(xs.slice(3)).toFixed(1)} ns (rounds ${xs.slice(3).map((x) => x.toFixed(1)).join(', ')})`)
