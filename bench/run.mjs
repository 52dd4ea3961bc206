// `npm run bench`: the report gateway's benchmark. Each scenario is its own module in
// bench/scenarios/ and returns a Markdown section; this runner sets up what they share
// (Redis, the platform sandbox, team keys), runs them in turn and writes the results.
//
//   hits             hits, misses and stampedes against a bare node:http server and nginx
//   fairness         one team's 200 misses in flight against another team's one a second
//   noisy-neighbour  team A's attacks on the shared credential against team B, three replicas
//   dashboard        one team's dashboard users (Zipf popularity) on a 4 s TTL, a 400 ms platform, and nginx
//   dashboard-noisy  the same while a second team keeps 200 misses outstanding
//   dashboard-family seeded dashboard traces (users, reports, popularity, freshness, platform latency), with and without a burst, and nginx
//   capacity         a platform slower past 12 calls in flight, 429 past 20: the learned limit, 1 and 3 replicas
//   two-teams        a dashboard team beside a team of year-long, unread, failing or throttled reports;
//                    a dashboard that waits for all its answers; a platform 3× slower over a minute
//   report-jobs      50 year-long reports asked as jobs by one team beside two-teams' dashboard team
//   targets          issue 17 item 3's targets, set up as the hidden benchmark measures them
//   spread           L1 hits of several identical gateway processes and a bare server with a hit's headers
//   scale            1 and 50 replicas on one Redis and on a Cluster: Redis commands and CPU per platform call, a 5 s stall
//   redis-traffic    Redis commands per idle replica and per request kind (INFO commandstats)
//   pubsub           the bus on a 3-master Cluster: PUBLISH against sharded SPUBLISH
//   answers          proxied answers of 1 MB to 50 MiB: held whole against straight from the platform
//   webhooks         a webhook attempt, http and https: the platform-address check, a connection per attempt or kept, against a plain POST
//   token-rotation   a token PUT on one replica: its time, and from its answer to another replica holding the token
//   revocation       a key removed from the teams file: from the file's write to its first refusal
//
// Flags: --quick (shorter runs, written to .bench/results-quick.md)
//        --only=<id>[,<id>] (those scenarios, written to bench/results-<id>.md)
//        --baseline=<dir> (targets, spread, answers: the gateway built in <dir> too, side by side;
//        dashboard-family: every trace replayed against it too)
//        --traces=<n>[,<n>] (dashboard-family: only those traces of the eight, by number)
//        --without-refresh-ahead (dashboard-family: every trace replayed against the gateway
//        with `cache.refreshAhead: false` too)
//        --nginx-any-age (dashboard-family: every trace replayed against nginx with `use_stale
//        updating` too, which serves a copy stale at any age, beside the one whose stale window
//        is the gateway's)
//        --profile[=l1|l2|miss] (no table: that case once with node --cpu-prof on the
//        gateway, summarized; the profile is kept in .bench/)
// Servers under test are pinned to core 1 (`taskset -c 1`, as issue 17 measures), the
// load (wrk, this process), the sandbox and Redis to core 0 (SERVER_CORE and LOAD_CORE in
// lib/processes.mjs). Every process started here is stopped at the end, on error and on
// SIGINT/SIGTERM, and the whole run is bounded in time.

import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { setUp } from './lib/fixture.mjs'
import { loadAverage, setGateBudget, versionOf } from './lib/machine.mjs'
import { BENCH, LOAD_CORE, ROOT, SERVER_CORE, cleanup, log, pinning, secondsSinceStart, setUpPinning, wasInterrupted } from './lib/processes.mjs'
import * as capacity from './scenarios/capacity.mjs'
import * as dashboard from './scenarios/dashboard.mjs'
import * as dashboardNoisy from './scenarios/dashboard-noisy.mjs'
import * as dashboardFamily from './scenarios/dashboard-family.mjs'
import * as fairness from './scenarios/fairness.mjs'
import * as hits from './scenarios/hits.mjs'
import * as noisyNeighbour from './scenarios/noisy-neighbour.mjs'
import * as scale from './scenarios/scale.mjs'
import * as spread from './scenarios/spread.mjs'
import * as redisTraffic from './scenarios/redis-traffic.mjs'
import * as pubsub from './scenarios/pubsub.mjs'
import * as answers from './scenarios/answers.mjs'
import * as twoTeams from './scenarios/two-teams.mjs'
import * as targets from './scenarios/targets.mjs'
import * as reportJobs from './scenarios/report-jobs.mjs'
import * as webhooks from './scenarios/webhooks.mjs'
import * as tokenRotation from './scenarios/token-rotation.mjs'
import * as revocation from './scenarios/revocation.mjs'
import { profileGateway } from './scenarios/profile.mjs'

const SCENARIOS = [hits, fairness, noisyNeighbour, dashboard, dashboardNoisy, dashboardFamily, capacity, twoTeams, reportJobs, targets, spread, scale, redisTraffic, pubsub, answers, webhooks, tokenRotation, revocation]
const TIME_LIMIT_MS = 45 * 60_000

const args = process.argv.slice(2)
const quick = args.includes('--quick')
const profile = args.find((f) => f === '--profile' || f.startsWith('--profile='))?.split('=')[1] ?? (args.includes('--profile') ? 'l1' : null)
const only = args.find((f) => f.startsWith('--only='))?.slice('--only='.length).split(',') ?? null
const baseline = args.find((f) => f.startsWith('--baseline='))?.slice('--baseline='.length) ?? null
const traces = args.find((f) => f.startsWith('--traces='))?.slice('--traces='.length).split(',').map(Number) ?? null
const withoutAhead = args.includes('--without-refresh-ahead')
const nginxAnyAge = args.includes('--nginx-any-age')
// Every scenario is listed, by its id, in the header comment above.
const lines = readFileSync(new URL(import.meta.url), 'utf8').split('\n')
const header = lines.slice(0, lines.findIndex((l) => !l.startsWith('//')))
for (const s of SCENARIOS) {
  if (!header.some((l) => l.startsWith(`//   ${s.id} `))) throw new Error(`bench/run.mjs: scenario ${s.id} is not listed in the header comment`)
}
for (const id of only ?? []) {
  if (!SCENARIOS.some((s) => s.id === id)) throw new Error(`--only=${id}: the scenarios are ${SCENARIOS.map((s) => s.id).join(', ')}`)
}

async function main() {
  const limit = setTimeout(() => {
    log(`over the time limit of ${TIME_LIMIT_MS / 1000} s: stopping`)
    void cleanup().finally(() => process.exit(1))
  }, TIME_LIMIT_MS)
  setUpPinning()
  setGateBudget(quick ? 5_000 : 15_000)
  try {
    execFileSync('wrk', ['-v'], { stdio: 'ignore' })
  } catch (err) {
    if (err.code === 'ENOENT') throw new Error('wrk is not installed (apt-get install -y wrk)')
  }
  const notes = []
  const loadAtStart = loadAverage()
  const fixture = await setUp(notes)
  if (profile) {
    await profileGateway(profile, { fixture })
    clearTimeout(limit)
    return
  }

  const sections = []
  for (const scenario of SCENARIOS.filter((s) => !only || only.includes(s.id))) {
    log(`scenario ${scenario.id}`)
    const loadBefore = loadAverage()
    const section = await scenario.run({ fixture, quick, notes, baseline, traces, withoutAhead, nginxAnyAge })
    sections.push(`### ${scenario.title}\n\n${section}\nLoad average (1/5/15 min) before this scenario ${loadBefore}, after it ${loadAverage()}.\n`)
  }

  const versions = [
    `node ${process.version}`,
    versionOf('wrk', ['-v'])?.replace(/ Copyright.*$/, '') ?? 'wrk',
    `redis ${versionOf('redis-server', ['--version'])?.split(' ').find((p) => p.startsWith('v='))?.slice(2) ?? 'not installed'}`,
  ]
  const out = [
    `## Benchmark (${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC${quick ? ', QUICK run: shorter rounds, not for the README' : ''})`,
    '',
    `Machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}); pinning ${pinning() ? `servers under test on core ${SERVER_CORE}, the load, sandbox and Redis on core ${LOAD_CORE}` : 'NONE (taskset or a second core missing)'}. ${versions.join(', ')}${notes.length ? `, ${notes.join('; ')}` : ''}. Run took ${secondsSinceStart().toFixed(0)} s (without the build); load average at the start ${loadAtStart}, at the end ${loadAverage()}: other work on the machine shares both cores, so compare rows of one run, not runs.`,
    '',
    ...sections,
  ].join('\n')
  process.stdout.write(`\n${out}`)
  const resultFile = quick ? join(ROOT, '.bench', 'results-quick.md') : only ? join(BENCH, `results-${only.join('-')}.md`) : join(BENCH, 'results.md')
  mkdirSync(join(resultFile, '..'), { recursive: true })
  writeFileSync(resultFile, `# Benchmark results (npm run bench${only ? ` -- --only=${only.join(',')}` : ''})\n\n${out}`)
  log(`written to ${resultFile.slice(ROOT.length)}`)
  clearTimeout(limit)
}

main()
  .then(() => cleanup())
  .then(() => process.exit(0))
  .catch(async (err) => {
    if (!wasInterrupted()) process.stderr.write(`\nbench failed: ${err.stack ?? err}\n`)
    await cleanup()
    process.exit(wasInterrupted() ? 130 : 1)
  })
