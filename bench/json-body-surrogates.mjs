// The price of refusing unpaired UTF-16 surrogates in JSON bodies (src/access/request-body.ts
// parseJsonBody): a campaign create of 420 bytes and a POST report of 200 campaign ids,
// each timed as JSON.parse + JSON.stringify alone (what any re-serialization costs), as
// parseJsonBody (depth, keys, _method, surrogates), and as the surrogate test alone over
// the parsed value's strings and keys; 8 rounds, the median of the last 5 printed with
// each round. Run after `npm run build:gateway`:
//   flock /tmp/bench.lock node bench/json-body-surrogates.mjs
import { parseJsonBody } from '../dist/access/request-body.js'

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const LIMITS = { jsonDepth: 32, params: 256 }
const bodies = {
  create: Buffer.from(JSON.stringify({
    userId: 101, name: 'Holiday Promo – Native 2026', adDomain: 'acme-kenya.example', clickUrl: 'https://acme-kenya.example/landing/101001?utm_source=dsp',
    autoStart: true, dates: { from: '2026-12-01', to: '2026-12-31' }, country: 'KE', bid: 0.42, budget: { daily: 50, total: 1500 }, creativeSetIds: [11, 12, 13],
  })),
  report: Buffer.from(JSON.stringify({ campaignIds: Array.from({ length: 200 }, (_, i) => 101001 + i), dateFrom: '2026-01-01', dateTo: '2026-01-31', byDate: true, byCampaign: true })),
}

function surrogateWalk(value) {
  const pending = [value]
  let found = false
  while (pending.length > 0) {
    const node = pending.pop()
    if (typeof node === 'string') found ||= LONE_SURROGATE.test(node)
    else if (typeof node === 'object' && node !== null) {
      if (!Array.isArray(node)) for (const key of Object.keys(node)) found ||= LONE_SURROGATE.test(key)
      for (const member of Array.isArray(node) ? node : Object.values(node)) pending.push(member)
    }
  }
  return found
}

function time(fn, n) {
  const started = process.hrtime.bigint()
  let sink = 0
  for (let i = 0; i < n; i++) sink += fn() ? 1 : 0
  if (sink < 0) console.log(sink)
  return Number(process.hrtime.bigint() - started) / n
}

const N = 20_000
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const [name, bytes] of Object.entries(bodies)) {
  const parsed = JSON.parse(bytes.toString('utf8'))
  const cases = {
    'JSON.parse + stringify': () => JSON.stringify(JSON.parse(bytes.toString('utf8'))),
    parseJsonBody: () => parseJsonBody(bytes, LIMITS),
    'surrogate test alone': () => surrogateWalk(parsed) || true,
  }
  const rounds = Object.fromEntries(Object.keys(cases).map((k) => [k, []]))
  for (let r = 0; r < 8; r++) for (const [c, fn] of Object.entries(cases)) rounds[c].push(time(fn, N))
  console.log(`${name} body, ${bytes.length} bytes`)
  for (const [c, xs] of Object.entries(rounds)) console.log(`  ${c}: ${median(xs.slice(3)).toFixed(0)} ns (rounds ${xs.slice(3).map((x) => x.toFixed(0)).join(', ')})`)
}
