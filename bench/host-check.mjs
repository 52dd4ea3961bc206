// The price of checking every request's head before the router (src/http/server.ts
// headFault: one Host line, a host[:port] value, one Authorization line, one x-api-key
// line), on the head of a report read with 8 header lines, an IPv6 Host, and 30 header
// lines; 8 rounds, the median of the last 5 printed with each round. With
// --baseline=<dir of another built checkout> its headFault is timed in the same run, the
// two alternating round by round. Run after `npm run build:gateway`:
//   flock /tmp/bench.lock node_modules/.bin/node bench/host-check.mjs [--baseline=<dir>]
import { pathToFileURL } from 'node:url'
import { resolve } from 'node:path'
import { headFault } from '../dist/http/server.js'

const baselineDir = process.argv.find((a) => a.startsWith('--baseline='))?.slice('--baseline='.length)
const builds = { this: headFault }
if (baselineDir) {
  const other = await import(pathToFileURL(resolve(baselineDir, 'dist/http/server.js')).href)
  builds.baseline = other.headFault ?? other.hostFault
}

function request(host, extra) {
  const rawHeaders = ['Host', host, 'User-Agent', 'dashboard/1.0', 'Accept', 'application/json', 'Accept-Encoding', 'gzip', 'x-api-key', 'rgw_x', 'x-request-id', 'abc', 'If-None-Match', '"e"', 'Connection', 'keep-alive']
  for (let i = 0; i < extra; i++) rawHeaders.push(`x-extra-${i}`, 'v')
  return { headers: { host }, rawHeaders, httpVersionMinor: 1 }
}
const cases = { 'report head, 8 lines': request('gateway.internal:8080', 0), 'IPv6 Host': request('[2001:db8::1]:8080', 0), '30 lines': request('gateway.internal:8080', 22) }

function time(fault, req, n) {
  const started = process.hrtime.bigint()
  let faults = 0
  for (let i = 0; i < n; i++) if (fault(req) !== null) faults++
  if (faults > 0) throw new Error('a fault in a valid head')
  return Number(process.hrtime.bigint() - started) / n
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const [name, req] of Object.entries(cases)) {
  const rounds = Object.fromEntries(Object.keys(builds).map((b) => [b, []]))
  for (let r = 0; r < 8; r++) for (const [b, fault] of Object.entries(builds)) rounds[b].push(time(fault, req, 200_000))
  const line = Object.entries(rounds).map(([b, xs]) => {
    const kept = xs.slice(3)
    return `${b} median ${median(kept).toFixed(0)} ns (rounds ${kept.map((x) => x.toFixed(0)).join(', ')})`
  })
  console.log(`${name}: ${line.join('; ')}`)
}
