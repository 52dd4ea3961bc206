// CPU per report miss on the gateway, without a profiler: the gateway process's CPU time
// (/proc/PID/stat, user + system) over a wrk run of misses (bench/wrk-misses.lua: every
// request a report never asked before, gzip accepted, 50 connections, the sandbox at
// 50 ms), divided by the answers. `--baseline=DIR`: the build in DIR/dist measured too, the
// two in alternating rounds on a fresh process each, their medians side by side.
// Where the time goes: `npm run bench -- --profile=miss` (the same load, profiled). Run after `npm run build:gateway`:
//   flock /tmp/bench.lock npx node bench/miss-cpu.mjs [--baseline=DIR] [--rounds=5]
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { setUp } from './lib/fixture.mjs'
import { wrk } from './lib/load.mjs'
import { cleanup, log, setUpPinning, stopProcess } from './lib/processes.mjs'
import { median } from './lib/stats.mjs'

const CONNECTIONS = 50
const PLATFORM_LATENCY_MS = 50
const WARMUP_S = 2
const MEASURED_S = 8
const TICK_MS = 10

const args = process.argv.slice(2)
const baseline = args.find((a) => a.startsWith('--baseline='))?.slice('--baseline='.length) ?? null
const rounds = Number(args.find((a) => a.startsWith('--rounds='))?.slice('--rounds='.length) ?? 5)

/** The process's CPU time so far, in ms (utime + stime, at the kernel's 100 Hz tick). */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS
}

let next = 0
async function round(fixture, build) {
  const gw = await fixture.startGateway(`gw-miss-${build.id}`, { extraEnv: build.dist ? { BENCH_DIST: build.dist } : {} })
  const load = { connections: CONNECTIONS, key: fixture.teamKey, script: 'wrk-misses.lua' }
  const warm = await wrk(`${gw.url}/`, { ...load, seconds: WARMUP_S, scriptArgs: [String(next)] })
  next += warm.requests + 1000
  const before = cpuMs(gw.child.pid)
  const r = await wrk(`${gw.url}/`, { ...load, seconds: MEASURED_S, scriptArgs: [String(next)] })
  const spent = cpuMs(gw.child.pid) - before
  next += r.requests + 1000
  await stopProcess(gw, 10_000)
  if (r.errors > 0) throw new Error(`${build.name}: ${r.errorDetail}`)
  return { usPerMiss: (spent * 1000) / r.requests, rps: r.rps, p50: r.p50 }
}

async function main() {
  setUpPinning()
  const fixture = await setUp([])
  await fixture.sandbox.setLatency(PLATFORM_LATENCY_MS)
  const builds = [{ id: 'this', name: 'this build', dist: null }, ...(baseline ? [{ id: 'baseline', name: `baseline ${baseline}`, dist: resolve(join(baseline, 'dist')) }] : [])]
  const results = new Map(builds.map((b) => [b.name, []]))
  for (let i = 0; i < rounds; i++) {
    for (const build of i % 2 === 0 ? builds : [...builds].reverse()) {
      const r = await round(fixture, build)
      results.get(build.name).push(r)
      log(`round ${i + 1}, ${build.name}: ${r.usPerMiss.toFixed(0)} µs of CPU per miss, ${r.rps.toFixed(0)} misses/s, p50 ${r.p50.toFixed(0)} ms`)
    }
  }
  const medians = new Map([...results].map(([name, xs]) => [name, median(xs.map((x) => x.usPerMiss))]))
  for (const [name, xs] of results) {
    console.log(`${name}: ${medians.get(name).toFixed(0)} µs of CPU per miss (median of ${xs.length}: ${xs.map((x) => x.usPerMiss.toFixed(0)).join(', ')}), ${median(xs.map((x) => x.rps)).toFixed(0)} misses/s`)
  }
  if (baseline) console.log(`this build / baseline: ${(medians.get('this build') / medians.get(builds[1].name)).toFixed(2)}×`)
}

main()
  .then(() => cleanup())
  .then(() => process.exit(0))
  .catch(async (err) => {
    console.error(err)
    await cleanup()
    process.exit(1)
  })
