// A replica's cold start: the built gateway (`node dist/main.js`, as `npm start` and the
// image run it) spawned N times with one fixed configuration, each start timed from
// spawn() to its first 200 on the admin listener's /readyz, with the CPU it took by then
// (every thread's time on a core, from /proc/<pid>/task/*/schedstat, read at that 200).
// Several builds are measured in one run, their starts alternating, so that the
// machine's load falls on each alike.
//
// Usage: node bench/cold-start.mjs [--runs=15] [--mode=configured|demo]
//          [--builds=<name>=<checkout>,...] [--compile-cache=<dir>]
//   --mode=configured  (default) one team in a CONFIG_FILE, a static platform token, no
//                      Redis, the platform at a closed loopback port (the token's check at
//                      start fails at once; readiness does not wait on it)
//   --mode=demo        DEMO=1: the bundled sandbox starts in the process too
//   --builds           built checkouts to measure, each its dist/main.js (default: this one)
//   --compile-cache    also measures each build with NODE_COMPILE_CACHE=<dir> (the cache
//                      is filled by one start first, as a replica's image or volume would hold it)
// Run under `flock /tmp/bench.lock` beside other benchmarks. Prints one Markdown table.

import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { freePort } from '../scripts/free-port.mjs'
import { buildsOption, threadRunNs } from './lib/machine.mjs'
import { markdownTable, median, percentile } from './lib/stats.mjs'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const [k, ...v] = a.replace(/^--/, '').split('=')
    return [k, v.join('=')]
  }),
)
const builds = buildsOption()
const runs = Number(args.runs ?? 15)
const mode = args.mode ?? 'configured'
if (mode !== 'configured' && mode !== 'demo') throw new Error(`--mode: configured or demo, not ${mode}`)

const tmp = mkdtempSync(join(tmpdir(), 'rgw-cold-'))
const configFile = join(tmp, 'config.yaml')
writeFileSync(configFile, 'teams:\n  cold:\n    keys: ["sha256:0160b8c1d1ad2506a70b7cc1a711e481f5342e58f5b18ce74677f91d978a7702"]\n    advertisers: [101, 102]\n')

/** The status of one GET, or 0 when nothing answers. */
function status(port, path) {
  return new Promise((done) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume()
      done(res.statusCode ?? 0)
    })
    req.once('error', () => done(0))
    req.end()
  })
}

/** One start: ms from spawn to the first 200 on /readyz, and the CPU ms it took. */
async function start(build, cache, signal = 'SIGKILL') {
  const [port, adminPort, closed] = [await freePort(), await freePort(), await freePort()]
  const env = { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), ADMIN_HOST: '127.0.0.1', ADMIN_PORT: String(adminPort), LOG_LEVEL: 'warn' }
  if (mode === 'demo') env.DEMO = '1'
  else Object.assign(env, { CONFIG_FILE: configFile, PLATFORM_BASE_URL: `http://127.0.0.1:${closed}`, PLATFORM_TOKEN: 'cold-start-token' })
  if (cache) env.NODE_COMPILE_CACHE = cache
  let output = ''
  const t0 = performance.now()
  const child = spawn(process.execPath, [join(build.root, 'dist/main.js')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout.setEncoding('utf8').on('data', (c) => (output += c))
  child.stderr.setEncoding('utf8').on('data', (c) => (output += c))
  let exited = false
  const gone = new Promise((done) => child.once('exit', () => done((exited = true))))
  // Asks again as soon as an answer (or a refused connection) comes back: the first 200 is seen within one round trip.
  while ((await status(adminPort, '/readyz')) !== 200) {
    if (exited) throw new Error(`${build.name}: the gateway exited before it was ready:\n${output}`)
  }
  const ms = performance.now() - t0
  const cpuMs = threadRunNs(child.pid) / 1e6
  child.kill(signal)
  await gone
  return { ms, cpuMs }
}

const cases = builds.flatMap((b) => [{ ...b, cache: null }, ...(args['compile-cache'] ? [{ ...b, name: `${b.name}, compile cache`, cache: join(resolve(args['compile-cache']), b.name.replace(/\W+/g, '-')) }] : [])])
for (const c of cases) {
  if (c.cache) {
    rmSync(c.cache, { recursive: true, force: true })
    // SIGINT: a clean stop, once the drain (shutdownDrain) ends. Node writes the compile cache as the process exits, not on SIGKILL.
    await start(c, c.cache, 'SIGINT')
  }
}
const loadBefore = loadavg()
const started = new Date()
const figures = new Map(cases.map((c) => [c, []]))
// One warm-up start each (the files in the page cache), not counted.
for (const c of cases) await start(c, c.cache)
for (let i = 0; i < runs; i++) {
  const order = i % 2 === 0 ? cases : [...cases].reverse()
  for (const c of order) figures.get(c).push(await start(c, c.cache))
}
const loadAfter = loadavg()
rmSync(tmp, { recursive: true, force: true })

const fmt = (x) => x.toFixed(0)
const rows = cases.map((c) => {
  const ms = figures.get(c).map((f) => f.ms).sort((a, b) => a - b)
  const cpu = figures.get(c).map((f) => f.cpuMs).sort((a, b) => a - b)
  return [c.name, fmt(median(ms)), fmt(percentile(ms, 90)), fmt(median(cpu)), fmt(percentile(cpu, 90))]
})
process.stdout.write(
  `Cold starts, mode ${mode}, ${runs} starts each (alternating), ${process.version}, ${started.toISOString()}; ` +
    `load average ${loadBefore[0].toFixed(1)} before, ${loadAfter[0].toFixed(1)} after\n\n` +
    `${markdownTable(['build', 'spawn → 200 /readyz, median (ms)', 'p90 (ms)', 'CPU by then, median (ms)', 'p90 (ms)'], rows)}\n`,
)
