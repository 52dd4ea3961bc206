// The targets' stampede (200 raw keep-alive connections, one new report each, the stand-in
// at 20 ms) on gateways of this build prepared in different ways, side by side in a rotation
// that moves by one each round: what in the targets scenario's run before its stampede moves
// the waiters' p50. A variant is a gateway (`taskset -c 1`, as `npm start` runs it):
//   fresh  started, its report filled once, nothing else (as bench/stampede-cpu.mjs)
//   hits   the same, then L1 hits of that report as the targets' throughput runs make them
//          (wrk -t1 -c50, `--hit-seconds`, 39 by default: 3 rounds of 3 + 10 s)
// and a suffix for what comes just before each of its rounds: `@quiet` quietMoment (as the
// targets do), `@gap<ms>` a pause of that many ms (`fresh@gap500`); `.caller` before it: the
// variant's callers in a process that does nothing else (bench/lib/stampede-caller.mjs), not
// in this one (`fresh.caller`, `hits.caller@quiet`). A variant may be named
// more than once (each its own gateway, reported as <index>:<variant>).
// Set-up toggles, for the whole run:
//   --others   the targets' other servers on the servers' core, idle during the stampedes
//              (the L1 gateway's siblings: traced every request and 1 %, with their OTLP sink,
//              the bare server and nginx), each given the same hit run first
//   --quiet    bench/lib/machine.mjs's quietMoment before each round, as the targets do
//   --gap=MS   a pause before each round (the targets' rounds come after quietMoment's waits)
//   --logs=DIR the gateways' output kept (with BENCH_GATEWAY_NODE_FLAGS=--trace-gc, their collections)
//   flock /tmp/bench.lock node_modules/.bin/node bench/stampede-context.mjs --variants=fresh,hits [--rounds=10] [--warm=1] [--others] [--quiet]
// Per round and variant: the waiters' p50, the fastest caller, when the platform read the
// call, the gateway's CPU over the round (every thread's schedstat run time) and the time
// the callers' process spent in its own collections during the round.

import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { REPORT_PATH, startMainGateway, startSandbox } from './lib/fixture.mjs'
import { http } from './lib/http.mjs'
import { rawStampede, wrk } from './lib/load.mjs'
import { loadAverage, quietMoment, threadRunNs, versionOf } from './lib/machine.mjs'
import { startNginx } from './lib/nginx.mjs'
import { LOAD_CORE, ROOT, SERVER_CORE, cleanup, launch, log, pin, setUpPinning, tmp } from './lib/processes.mjs'
import { median } from './lib/stats.mjs'

const option = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const flag = (name) => process.argv.includes(`--${name}`)
const VARIANTS = option('variants', 'fresh,hits').split(',')
const ROUNDS = Number(option('rounds', '10'))
const WARM = Number(option('warm', '1'))
const HIT_SECONDS = Number(option('hit-seconds', '39'))
const GAP_MS = Number(option('gap', '0'))
const CALLERS = 200
const PLATFORM_TOKEN = 'bench-standin-token'

setUpPinning()
try {
  const sandbox = await startSandbox()
  const body = (await http('GET', `${sandbox.url}${REPORT_PATH}`, { headers: { authorization: `Bearer ${sandbox.token}` } })).body
  const bodyFile = join(tmp, 'stampede-report.json')
  writeFileSync(bodyFile, body)
  const startPlain = async (name, core, env) => {
    const [cmd, args] = pin(core, process.execPath, ['bench/bare-server.mjs'])
    const p = await launch(name, cmd, args, { env: { BENCH_BODY_FILE: bodyFile, BENCH_HEADERS: 'plain', ...env }, ready: /^READY / })
    return { ...p, url: `http://127.0.0.1:${JSON.parse(p.line.slice('READY '.length)).port}` }
  }
  const standin = await startPlain('stampede-platform', LOAD_CORE, { BENCH_LATENCY_MS: '20', BENCH_COUNT_PREFIX: '/api/v1/report/' })
  const platformCount = async () => (await http('GET', `${standin.url}/__count`)).json()
  const clearPlatformCalls = () => http('DELETE', `${standin.url}/__count`)

  const { hashApiKey } = await import('../dist/access/api-keys.js')
  const key = `rgw_${randomBytes(32).toString('base64url')}`
  const config = { teams: { bench: { keys: [hashApiKey(key)], advertisers: ['*'], rateLimit: { max: 1_000_000_000, window: '1m' } } } }
  const gateway = (name, env = {}) => startMainGateway(name, { platformUrl: standin.url, platformToken: PLATFORM_TOKEN, config, env })
  const hitRun = async (name, url) => {
    const r = await wrk(url, { seconds: HIT_SECONDS, connections: 50, key, gzip: false })
    log(`${name}: ${Math.round(r.rps)} req/s for ${HIT_SECONDS} s, ${r.errors} errors`)
  }
  const fill = async (gw) => {
    for (let i = 0; i < 2; i += 1) await http('GET', `${gw.url}${REPORT_PATH}`, { headers: { 'x-api-key': key } })
  }

  // The callers of `.caller` variants: one process of their own, doing nothing else.
  let caller = null
  const callerRound = (v, path) =>
    new Promise((resolve, reject) => {
      caller.once('message', (m) => (m.error ? reject(new Error(m.error)) : resolve(m)))
      caller.send({ port: v.gw.port, path, key, gatewayPid: v.gw.pid, standin: standin.url, bodyFile })
    })
  const variants = []
  for (const v of VARIANTS) {
    const [kind, pause = ''] = v.split('@')
    const [prep, where = ''] = kind.split('.')
    const gw = await gateway(`stampede-${variants.length}-${prep}`)
    await fill(gw)
    if (where === 'caller' && caller === null) {
      const [cmd, args] = pin(LOAD_CORE, process.execPath, ['bench/lib/stampede-caller.mjs'])
      caller = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    }
    variants.push({ name: `${variants.length}:${v}`, prep, ownCaller: where === 'caller', quiet: pause === 'quiet', gapMs: pause.startsWith('gap') ? Number(pause.slice(3)) : 0, gw, rounds: [] })
  }
  // The other servers on the servers' core (--others): their CPU over the counted rounds.
  const others = []
  if (flag('others')) {
    const [sinkCmd, sinkArgs] = pin(LOAD_CORE, process.execPath, ['bench/otlp-sink.mjs'])
    const sinkProcess = await launch('stampede-otlp-sink', sinkCmd, sinkArgs, { ready: /^READY / })
    const sink = `http://127.0.0.1:${JSON.parse(sinkProcess.line.slice('READY '.length)).port}`
    const traced = await gateway('stampede-traced', { OTEL_EXPORTER_OTLP_ENDPOINT: sink, OTEL_TRACES_SAMPLER: 'parentbased_always_on' })
    const sampled = await gateway('stampede-traced-1pct', { OTEL_EXPORTER_OTLP_ENDPOINT: sink, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' })
    const bare = await startPlain('stampede-bare', SERVER_CORE, {})
    const nginx = versionOf('nginx', ['-v']) ? await startNginx({ origin: standin.url, platformToken: PLATFORM_TOKEN, name: 'stampede-nginx', valid: '1h' }) : null
    for (const gw of [traced, sampled]) await fill(gw)
    const nginxWorkers = nginx ? readFileSync(`/proc/${nginx.pid}/task/${nginx.pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number) : []
    others.push(traced.pid, sampled.pid, bare.child.pid, ...(nginx ? [nginx.pid, ...nginxWorkers] : []))
    for (const [name, url] of [['traced', traced.url], ['traced 1 %', sampled.url], ['bare', bare.url], ['nginx', nginx?.url]]) if (url) await hitRun(name, `${url}${REPORT_PATH}`)
  }
  for (const v of variants) if (v.prep === 'hits') await hitRun(v.name, `${v.gw.url}${REPORT_PATH}`)

  const tag = Date.now().toString(36)
  const loads = [loadAverage()]
  // nginx's cache loader leaves after its first minute: a process gone counts from then as nothing.
  const othersNs = () => others.reduce((sum, pid) => sum + (existsSync(`/proc/${pid}/task`) ? threadRunNs(pid) : 0), 0)
  let othersBefore = null
  let countedSince = null
  for (let round = 1 - WARM; round <= ROUNDS; round += 1) {
    if (round === 1) [othersBefore, countedSince] = [othersNs(), performance.now()]
    const order = variants.map((_, i) => variants[(((i + round) % variants.length) + variants.length) % variants.length])
    for (const v of order) {
      if (flag('quiet') || v.quiet) await quietMoment()
      if (GAP_MS || v.gapMs) await sleep(GAP_MS || v.gapMs)
      let before = null
      let after = null
      const path = `${REPORT_PATH}&r=${tag}-${v.name}-${round}`
      const r = v.ownCaller
        ? await callerRound(v, path)
        : await rawStampede({
            port: v.gw.port,
            callers: CALLERS,
            path,
            key,
            expectBody: body,
            before: async () => {
              await clearPlatformCalls()
              before = { ns: threadRunNs(v.gw.pid), epoch: performance.timeOrigin + performance.now() }
            },
            countCalls: async () => {
              after = { ns: threadRunNs(v.gw.pid) }
              const count = await platformCount()
              after.callAt = count.lastCallAt - before.epoch
              return count.count
            },
          })
      // The callers' own process times its round, the gateway's CPU and when the platform read the call.
      const cpuMs = v.ownCaller ? r.cpuMs : (after.ns - before.ns) / 1e6
      const callAt = v.ownCaller ? r.callAt : after.callAt
      const ok = r.ok && r.calls === 1
      if (round > 0) v.rounds.push({ cpuMs, p50: r.p50, min: r.min, callAt, clientGcMs: r.clientGcMs, clientCpuMs: r.clientCpuMs, ok })
      log(`${v.name} round ${round}${round > 0 ? '' : ' (uncounted)'}: CPU ${cpuMs.toFixed(2)} ms, p50 ${r.p50.toFixed(1)} ms, min ${r.min.toFixed(1)}, call at ${callAt.toFixed(1)}, callers' collections ${r.clientGcMs.toFixed(2)} ms and CPU ${r.clientCpuMs.toFixed(2)} ms, ${r.calls} call(s)${ok ? '' : ' BAD'}`)
    }
    loads.push(loadAverage())
  }
  const flags = ['others', 'quiet'].filter(flag).join(', ') || 'none'
  const lines = [`stampede context: ${ROUNDS} rounds after ${WARM} uncounted, toggles ${flags}${GAP_MS ? `, gap ${GAP_MS} ms` : ''}, hit runs ${HIT_SECONDS} s, load average ${loads[0]} to ${loads.at(-1)}`]
  const base = variants[0]
  for (const v of variants) {
    const paired = v === base ? '' : `; paired ${v.name} - ${base.name}: p50 ${median(v.rounds.map((r, i) => r.p50 - base.rounds[i].p50)).toFixed(1)} ms (higher in ${v.rounds.filter((r, i) => r.p50 > base.rounds[i].p50).length} of ${v.rounds.length}), CPU ${median(v.rounds.map((r, i) => r.cpuMs - base.rounds[i].cpuMs)).toFixed(2)} ms`
    lines.push(
      `${v.name}: p50 median ${median(v.rounds.map((r) => r.p50)).toFixed(1)} ms (rounds ${v.rounds.map((r) => r.p50.toFixed(1)).join(' ')}), fastest ${median(v.rounds.map((r) => r.min)).toFixed(1)} ms, call read at ${median(v.rounds.map((r) => r.callAt)).toFixed(1)} ms, CPU ${median(v.rounds.map((r) => r.cpuMs)).toFixed(2)} ms (rounds ${v.rounds.map((r) => r.cpuMs.toFixed(1)).join(' ')}), the callers' collections ${v.rounds.reduce((sum, r) => sum + r.clientGcMs, 0).toFixed(1)} ms in all (in ${v.rounds.filter((r) => r.clientGcMs > 0).length} rounds), their CPU ${median(v.rounds.map((r) => r.clientCpuMs)).toFixed(2)} ms a round${paired}; ${v.rounds.filter((r) => !r.ok).length} bad rounds`,
    )
  }
  caller?.disconnect()
  if (others.length) lines.push(`the other servers on core ${SERVER_CORE} (${others.length} processes): ${((othersNs() - othersBefore) / 1e6).toFixed(1)} ms of CPU over the counted rounds' ${((performance.now() - countedSince) / 1000).toFixed(1)} s`)
  process.stdout.write(`${lines.join('\n')}\n`)
  const logs = option('logs', null)
  if (logs) {
    mkdirSync(logs, { recursive: true })
    for (const v of variants) copyFileSync(v.gw.logPath, join(logs, `${v.name.replace(/[^\w.-]/g, '_')}.log`))
  }
} finally {
  await cleanup()
}
