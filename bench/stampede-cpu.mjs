// The targets' stampede (200 raw keep-alive connections each asking one new report at
// once, the platform stand-in at 20 ms) on several builds of the gateway side by side,
// measured by the gateway's CPU time a round: the run time of every thread of its process
// (/proc/<pid>/task/*/schedstat, nanoseconds) from just before the 200 writes to after the
// last answer, and its utime+stime (/proc/<pid>/stat, ticks) as a check, with the share of
// them spent in the kernel (stime: the sockets' reads and writes, loopback's delivery). CPU, unlike the
// waiters' wall-clock p50, is barely moved by other sessions on a shared machine.
// Every build is started as `npm start` runs it (startMainGateway, `taskset -c 1`); the
// stand-in and the callers on core 0. The builds take their turns in a rotation that moves
// by one each round; `--warm` uncounted rounds each first.
//   flock /tmp/bench.lock node bench/stampede-cpu.mjs --builds=new=.,old=/tmp/bench-old [--rounds=20] [--warm=5] [--callers=200] [--profile=DIR]
// `--builds`: name=folder pairs, each folder a built checkout (its dist/ and node_modules).
// Each build after the first is paired with it round by round: the medians of the rounds'
// differences (CPU, waiters' p50, the time the stand-in read the call) and in how many it was lower.
// `--logs=DIR`: the gateways' output kept (with BENCH_GATEWAY_NODE_FLAGS=--trace-gc, their collections).
// `--profile=DIR`: each gateway under node --cpu-prof (interval 100 µs), its profile in DIR/<name>/,
// with windows.json: the counted rounds' windows (µs on the profile's clock), for
// `node bench/profile-summary.mjs FILE --windows=DIR/<name>/windows.json` restricted to them.

import { randomBytes } from 'node:crypto'
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { REPORT_PATH, startMainGateway, startSandbox } from './lib/fixture.mjs'
import { http } from './lib/http.mjs'
import { rawStampede } from './lib/load.mjs'
import { buildsOption, loadAverage, threadRunNs } from './lib/machine.mjs'
import { LOAD_CORE, cleanup, launch, log, pin, setUpPinning, stopProcess, tmp } from './lib/processes.mjs'
import { median } from './lib/stats.mjs'

const option = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const builds = buildsOption()
const ROUNDS = Number(option('rounds', '20'))
const CALLERS = Number(option('callers', '200'))
const WARM = Number(option('warm', '5'))
const profileDir = option('profile', null)
const PLATFORM_TOKEN = 'bench-standin-token'

/** Nanoseconds every thread of `pid` has run, and its utime and stime in ticks. */
function cpuOf(pid) {
  const ns = threadRunNs(pid)
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return { ns, user: Number(f[11]), system: Number(f[12]), ticks: Number(f[11]) + Number(f[12]) }
}

setUpPinning()
const own = []
try {
  const sandbox = await startSandbox()
  own.push(sandbox)
  const platformAnswer = await http('GET', `${sandbox.url}${REPORT_PATH}`, { headers: { authorization: `Bearer ${sandbox.token}` } })
  const body = platformAnswer.body
  const bodyFile = join(tmp, 'stampede-report.json')
  writeFileSync(bodyFile, body)
  const [cmd, args] = pin(LOAD_CORE, process.execPath, ['bench/bare-server.mjs'])
  const standinProcess = await launch('stampede-platform', cmd, args, {
    env: { BENCH_BODY_FILE: bodyFile, BENCH_HEADERS: 'plain', BENCH_LATENCY_MS: '20', BENCH_COUNT_PREFIX: '/api/v1/report/' },
    ready: /^READY /,
  })
  own.push(standinProcess)
  const standin = `http://127.0.0.1:${JSON.parse(standinProcess.line.slice('READY '.length)).port}`
  const platformCount = async () => (await http('GET', `${standin}/__count`)).json()
  const clearPlatformCalls = () => http('DELETE', `${standin}/__count`)

  const { hashApiKey } = await import('../dist/access/api-keys.js')
  const key = `rgw_${randomBytes(32).toString('base64url')}`
  const config = { teams: { bench: { keys: [hashApiKey(key)], advertisers: ['*'], rateLimit: { max: 1_000_000_000, window: '1m' } } } }
  const previousFlags = process.env.BENCH_GATEWAY_NODE_FLAGS
  for (const b of builds) {
    if (profileDir) {
      const dir = resolve(profileDir, b.name)
      mkdirSync(dir, { recursive: true })
      process.env.BENCH_GATEWAY_NODE_FLAGS = `--cpu-prof --cpu-prof-interval=100 --cpu-prof-dir=${dir}`
    }
    b.gw = await startMainGateway(`stampede-${b.name}`, { platformUrl: standin, platformToken: PLATFORM_TOKEN, config, root: b.root })
    own.push(b.gw)
    b.rounds = []
  }
  process.env.BENCH_GATEWAY_NODE_FLAGS = previousFlags
  const tag = Date.now().toString(36)
  const loads = [loadAverage()]
  for (let round = 1 - WARM; round <= ROUNDS; round += 1) {
    const order = builds.map((_, i) => builds[(((i + round) % builds.length) + builds.length) % builds.length])
    for (const b of order) {
      let before = null
      let after = null
      const r = await rawStampede({
        port: b.gw.port,
        callers: CALLERS,
        path: `${REPORT_PATH}&r=${tag}-${b.name}-${round}`,
        key,
        expectBody: body,
        before: async () => {
          await clearPlatformCalls()
          before = cpuOf(b.gw.pid)
          before.us = Number(process.hrtime.bigint() / 1000n)
          before.epoch = performance.timeOrigin + performance.now()
        },
        countCalls: async () => {
          after = cpuOf(b.gw.pid)
          after.us = Number(process.hrtime.bigint() / 1000n)
          const count = await platformCount()
          after.callAt = count.lastCallAt - before.epoch
          return count.count
        },
      })
      const cpuMs = (after.ns - before.ns) / 1e6
      const tickMs = (after.ticks - before.ticks) * 10
      if (!r.ok || r.calls !== 1) log(`${b.name} round ${round}: ${JSON.stringify(r.statuses)}, ${r.calls} platform calls, ${r.wrongBodies} wrong bodies`)
      const systemMs = (after.system - before.system) * 10
      if (round > 0) b.rounds.push({ cpuMs, tickMs, systemMs, p50: r.p50, min: r.min, callAt: after.callAt, ok: r.ok && r.calls === 1, window: [before.us, after.us] })
      log(`${b.name}${round > 0 ? '' : ' (uncounted)'}: CPU ${cpuMs.toFixed(2)} ms (ticks ${tickMs} ms), p50 ${r.p50.toFixed(1)} ms, min ${r.min.toFixed(1)}, call at ${after.callAt.toFixed(1)}, ${r.calls} call(s)`)
    }
    loads.push(loadAverage())
  }
  const lines = [`stampede CPU: ${ROUNDS} rounds, ${CALLERS} callers, load average ${loads[0]} to ${loads.at(-1)}`]
  const base = builds[0]
  for (const b of builds) {
    const cpu = median(b.rounds.map((r) => r.cpuMs))
    // Each measure's difference with the first build's in the same round, the median of the rounds' (and how many rounds it was lower in).
    const pairedOf = (measure) => {
      const d = b.rounds.map((r, i) => r[measure] - base.rounds[i][measure])
      return `${median(d).toFixed(2)} ms (lower in ${d.filter((x) => x < 0).length} of ${d.length})`
    }
    const paired = b === base ? '' : `, paired ${b.name} - ${base.name} medians: CPU ${pairedOf('cpuMs')}, p50 ${pairedOf('p50')}, the call read ${pairedOf('callAt')}`
    lines.push(
      `${b.name} (${b.root}): CPU a round median ${cpu.toFixed(2)} ms (${((cpu * 1000) / CALLERS).toFixed(1)} µs a caller; rounds ${b.rounds.map((r) => r.cpuMs.toFixed(1)).join(' ')}), ticks median ${median(b.rounds.map((r) => r.tickMs))} ms (in the kernel: ${((100 * b.rounds.reduce((sum, r) => sum + r.systemMs, 0)) / b.rounds.reduce((sum, r) => sum + r.tickMs, 0)).toFixed(0)} % of all the rounds' ticks), p50 median ${median(b.rounds.map((r) => r.p50)).toFixed(1)} ms, fastest caller median ${median(b.rounds.map((r) => r.min)).toFixed(1)} ms, the call read by the platform at ${median(b.rounds.map((r) => r.callAt)).toFixed(1)} ms (median)${paired}; ${b.rounds.filter((r) => !r.ok).length} bad rounds`,
    )
  }
  process.stdout.write(`${lines.join('\n')}\n`)
  // The counted rounds' windows on the monotonic clock V8's profiles use (microseconds).
  if (profileDir) for (const b of builds) writeFileSync(resolve(profileDir, b.name, 'windows.json'), JSON.stringify(b.rounds.map((r) => r.window)))
  for (const p of own.reverse()) if (p.child) await stopProcess(p, profileDir ? 30_000 : 4000)
  const logs = option('logs', null)
  if (logs) {
    mkdirSync(logs, { recursive: true })
    for (const b of builds) copyFileSync(b.gw.logPath, join(logs, `${b.name}.log`))
  }
} finally {
  await cleanup()
}
