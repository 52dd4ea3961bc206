// The gateway's CPU time a router answer (one Fastify's router writes: /healthz, a call
// passed on to the platform) on several builds side by side: each build started as
// `npm start` runs it (startMainGateway, `taskset -c 1`), wrk -t1 -c10 (core 0) on each path
// in turn, the builds' order moving by one each round, the gateway's run time (every thread,
// /proc/<pid>/task/*/schedstat) over the requests wrk counted, less what it spent idle in a
// second just before; medians of the rounds. A
// build made without a part (an export of a commit with the part taken out, built) against
// one with it gives the part's price a router answer.
//   flock /tmp/bench.lock node_modules/.bin/node bench/router-answer-price.mjs --builds=with=.,without=/tmp/other [--rounds=5] [--seconds=5]

import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { join } from 'node:path'
import { REPORT_PATH, startMainGateway, startSandbox } from './lib/fixture.mjs'
import { http } from './lib/http.mjs'
import { wrk } from './lib/load.mjs'
import { buildsOption, loadAverage, threadRunNs } from './lib/machine.mjs'
import { LOAD_CORE, cleanup, launch, log, pin, setUpPinning, tmp } from './lib/processes.mjs'
import { median } from './lib/stats.mjs'

const option = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const builds = buildsOption()
const ROUNDS = Number(option('rounds', '5'))
const SECONDS = Number(option('seconds', '5'))
// A route the gateway passes on as it is (not a report read): the platform stand-in answers it at once.
const PATHS = { healthz: '/healthz', 'unknown path (404)': '/nope', 'passed on': '/api/v1/campaigns/get?advertiserId=101' }

setUpPinning()
try {
  const sandbox = await startSandbox()
  const body = (await http('GET', `${sandbox.url}${REPORT_PATH}`, { headers: { authorization: `Bearer ${sandbox.token}` } })).body
  const bodyFile = join(tmp, 'router-answer.json')
  writeFileSync(bodyFile, body)
  const [cmd, args] = pin(LOAD_CORE, process.execPath, ['bench/bare-server.mjs'])
  const standinProcess = await launch('router-platform', cmd, args, { env: { BENCH_BODY_FILE: bodyFile, BENCH_HEADERS: 'plain' }, ready: /^READY / })
  const standin = `http://127.0.0.1:${JSON.parse(standinProcess.line.slice('READY '.length)).port}`
  const { hashApiKey } = await import('../dist/access/api-keys.js')
  const key = `rgw_${randomBytes(32).toString('base64url')}`
  const config = { teams: { bench: { keys: [hashApiKey(key)], advertisers: ['*'], rateLimit: { max: 1_000_000_000, window: '1m' } } } }
  for (const b of builds) {
    b.gw = await startMainGateway(`router-${b.name}`, { platformUrl: standin, platformToken: 'bench-standin-token', config, root: b.root })
    b.rows = Object.fromEntries(Object.keys(PATHS).map((p) => [p, []]))
  }
  const loads = [loadAverage()]
  for (let round = 0; round <= ROUNDS; round += 1) {
    const order = builds.map((_, i) => builds[(i + round) % builds.length])
    for (const [name, path] of Object.entries(PATHS)) {
      for (const b of order) {
        const url = `${b.gw.url}${path}`
        // What the gateway spends idle (its timers) over a second, taken out of the run's.
        const idle0 = threadRunNs(b.gw.pid)
        await sleep(1000)
        const idleNsPerS = threadRunNs(b.gw.pid) - idle0
        const before = threadRunNs(b.gw.pid)
        const r = await wrk(url, { seconds: SECONDS, connections: 10, key, gzip: false })
        const us = (threadRunNs(b.gw.pid) - before - idleNsPerS * SECONDS) / 1000 / r.requests
        if (r.errors && !path.startsWith('/nope')) log(`${b.name} ${name}: ${r.errors} errors (${r.errorDetail})`)
        if (round > 0) b.rows[name].push(us)
        log(`${b.name} ${name}${round > 0 ? '' : ' (warm-up)'}: ${us.toFixed(1)} µs a request, ${Math.round(r.rps)} req/s (idle ${(idleNsPerS / 1e6).toFixed(1)} ms a second)`)
      }
    }
    loads.push(loadAverage())
  }
  const lines = [`router answers: ${ROUNDS} rounds of ${SECONDS} s a build and path (wrk -t1 -c10), load average ${loads[0]} to ${loads.at(-1)}`]
  for (const name of Object.keys(PATHS)) {
    const base = median(builds[0].rows[name])
    for (const b of builds) {
      const m = median(b.rows[name])
      lines.push(`${name}, ${b.name}: ${m.toFixed(1)} µs of gateway CPU a request (rounds ${b.rows[name].map((v) => v.toFixed(1)).join(' ')})${b === builds[0] ? '' : `, ${(m / base).toFixed(3)}× ${builds[0].name}`}`)
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`)
} finally {
  await cleanup()
}
