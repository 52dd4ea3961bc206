// `--profile[=l1|l1-traced|l2|miss]`: one scenario with node --cpu-prof on the gateway,
// summarized (no table); the profile is kept in .bench/ for Chrome DevTools. `l1-traced`:
// L1 hits with tracing on, every request sampled, exporting OTLP/HTTP protobuf to
// bench/otlp-sink.mjs on the load's core (as the targets scenario's traced row).
// BENCH_CPU_PROF_INTERVAL_US: the sampling interval (node's default 1000 µs gives a miss
// about four samples; 100 µs tells the small functions apart, and inflates every figure).

import { copyFileSync, mkdirSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { REPORT_PATH } from '../lib/fixture.mjs'
import { wrk } from '../lib/load.mjs'
import { LOAD_CORE, ROOT, launch, log, pin, stopProcess, tmp } from '../lib/processes.mjs'
import { fmtInt, fmtMs } from '../lib/stats.mjs'
import { summarizeProfile } from '../profile-summary.mjs'

const CONNECTIONS = 50
const PLATFORM_LATENCY_MS = 50
const WARMUP_S = 2

export async function profileGateway(scenario, { fixture }) {
  const { startGateway, expectCache, redisUrl, sandbox, teamKey } = fixture
  if (!['l1', 'l1-traced', 'l2', 'miss'].includes(scenario)) throw new Error(`--profile=${scenario}: use l1, l1-traced, l2 or miss`)
  if (scenario === 'l2' && !redisUrl) throw new Error('--profile=l2 needs redis-server')
  const profDir = join(tmp, 'prof')
  mkdirSync(profDir)
  let sink = null
  if (scenario === 'l1-traced') {
    const [cmd, args] = pin(LOAD_CORE, process.execPath, ['bench/otlp-sink.mjs'])
    sink = await launch('prof-otlp-sink', cmd, args, { ready: /^READY / })
  }
  const tracing = sink ? { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${JSON.parse(sink.line.slice('READY '.length)).port}`, OTEL_TRACES_SAMPLER: 'parentbased_always_on' } : {}
  const gw = await startGateway('gw-prof', { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profDir}`, ...(process.env.BENCH_CPU_PROF_INTERVAL_US ? [`--cpu-prof-interval=${process.env.BENCH_CPU_PROF_INTERVAL_US}`] : [])], extraEnv: tracing, ...(scenario === 'l2' ? { redis: true, l1: false } : {}) })
  let url = `${gw.url}${REPORT_PATH}`
  let script
  let scriptArgs = []
  if (scenario === 'miss') {
    await sandbox.setLatency(PLATFORM_LATENCY_MS)
    url = `${gw.url}/`
    script = 'wrk-misses.lua'
  } else {
    await expectCache(gw, 'MISS')
    await expectCache(gw, 'HIT')
  }
  const load = { connections: CONNECTIONS, key: teamKey, script }
  const warm = await wrk(url, { ...load, seconds: WARMUP_S, scriptArgs })
  if (scenario === 'miss') scriptArgs = [String(warm.requests + 1000)]
  const r = await wrk(url, { ...load, seconds: 10, scriptArgs })
  log(`profiled ${scenario}: ${fmtInt(r.rps)} req/s, p50 ${fmtMs(r.p50)}, p99 ${fmtMs(r.p99)} (with the profiler on)`)
  await stopProcess(gw, 10_000)
  if (sink) await stopProcess(sink)
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'))
  if (!file) throw new Error('no .cpuprofile was written')
  const keep = join(ROOT, '.bench')
  mkdirSync(keep, { recursive: true })
  copyFileSync(join(profDir, file), join(keep, `gateway-${scenario}.cpuprofile`))
  // The measured 10 s run ended just before the process was stopped.
  process.stdout.write(`${summarizeProfile(JSON.parse(readFileSync(join(profDir, file), 'utf8')), { root: ROOT.replace(/\/$/, ''), lastSeconds: 10 })}\n`)
  log(`profile kept in .bench/gateway-${scenario}.cpuprofile (open it in Chrome DevTools > Performance)`)
}
