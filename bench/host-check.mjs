// The price of checking the Host header of every request (src/http/server.ts hostFault,
// RFC 9112 3.2: one Host line, a host[:port] value), on the head of a report read with
// 8 header lines, an IPv6 Host, and 30 header lines; 8 rounds, the median of the last 5
// printed with each round. Run after `npm run build:gateway`:
//   flock /tmp/bench.lock node_modules/.bin/node bench/host-check.mjs
import { hostFault } from '../dist/http/server.js'

function request(host, extra) {
  const rawHeaders = ['Host', host, 'User-Agent', 'dashboard/1.0', 'Accept', 'application/json', 'Accept-Encoding', 'gzip', 'x-api-key', 'rgw_x', 'x-request-id', 'abc', 'If-None-Match', '"e"', 'Connection', 'keep-alive']
  for (let i = 0; i < extra; i++) rawHeaders.push(`x-extra-${i}`, 'v')
  return { headers: { host }, rawHeaders, httpVersionMinor: 1 }
}
const cases = { 'report head, 8 lines': request('gateway.internal:8080', 0), 'IPv6 Host': request('[2001:db8::1]:8080', 0), '30 lines': request('gateway.internal:8080', 22) }

function time(req, n) {
  const started = process.hrtime.bigint()
  let faults = 0
  for (let i = 0; i < n; i++) if (hostFault(req) !== null) faults++
  if (faults > 0) throw new Error('a fault in a valid head')
  return Number(process.hrtime.bigint() - started) / n
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const [name, req] of Object.entries(cases)) {
  const rounds = []
  for (let r = 0; r < 8; r++) rounds.push(time(req, 200_000))
  const kept = rounds.slice(3)
  console.log(`${name}: median ${median(kept).toFixed(0)} ns (rounds ${kept.map((x) => x.toFixed(0)).join(', ')})`)
}
