// How far one gateway process's hit throughput is its own (issue 17 item 3): several
// gateway processes of one build, started the same way, next to a bare node:http server
// and one sending the eleven headers of a gateway hit. Each server gets 1 s of wrk in turn,
// round after round, so that the machine's drift falls on all of them alike; each round's
// figure is divided by the bare server's in that round, and the medians are reported.
// Set-up as in `targets`: `node dist/main.js`, LOG_LEVEL=warn, one team with
// advertisers ["*"] and a rate limit of 10^9 a minute, servers on core 1, wrk -t1 -c50
// (no accept-encoding) on core 0, L1 hits of the sandbox's 4 KB report.
// With --baseline=<dir>, as many processes of the gateway built in <dir> join the turns:
// this build against another, judged against the spread of each with itself.
// With BENCH_SPREAD_ROUTED=1 the gateways' hits carry `prefer: handling=lenient`: the fast
// path hands each to Fastify's router, whose hooks and route answer it (an L1 hit still).

import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { REPORT_PATH, startMainGateway } from '../lib/fixture.mjs'
import { http } from '../lib/http.mjs'
import { wrk } from '../lib/load.mjs'
import { loadAverage } from '../lib/machine.mjs'
import { SERVER_CORE, launch, log, pin, stopProcess, tmp } from '../lib/processes.mjs'
import { fmtInt, fmtX, markdownTable, median } from '../lib/stats.mjs'

export const id = 'spread'
export const title = 'L1 hits: the spread between identical gateway processes, and the floor the headers set'

const CONNECTIONS = 50
/** Request headers that send every gateway hit through the router (BENCH_SPREAD_ROUTED=1). */
const ROUTED = process.env.BENCH_SPREAD_ROUTED === '1' ? { prefer: 'handling=lenient' } : {}
const GATEWAYS = 4

/** Runs the scenario; resolves with its Markdown section. */
export async function run({ fixture, quick, baseline = null }) {
  const ROUNDS = quick ? 3 : 12
  const own = []
  const keep = (p) => (own.push(p), p)
  try {
    const answer = await http('GET', `${fixture.sandbox.url}${REPORT_PATH}`, { headers: { authorization: `Bearer ${fixture.sandbox.token}` } })
    if (answer.status !== 200) throw new Error(`the sandbox did not answer the report: ${answer.status}`)
    const body = answer.body
    const bodyFile = join(tmp, 'spread-report.json')
    writeFileSync(bodyFile, body)
    const bare = async (name, headers) => {
      const [cmd, args] = pin(SERVER_CORE, process.execPath, ['bench/bare-server.mjs'])
      const p = keep(await launch(name, cmd, args, { env: { BENCH_BODY_FILE: bodyFile, BENCH_HEADERS: headers }, ready: /^READY / }))
      return { name, url: `http://127.0.0.1:${JSON.parse(p.line.slice('READY '.length)).port}${REPORT_PATH}` }
    }
    const { hashApiKey } = await import('../../dist/access/api-keys.js')
    const key = `rgw_${randomBytes(32).toString('base64url')}`
    const config = { teams: { bench: { keys: [hashApiKey(key)], advertisers: ['*'], rateLimit: { max: 1_000_000_000, window: '1m' } } } }
    const servers = [await bare('bare node:http (2 headers)', 'plain'), await bare("bare node:http with a hit's 11 headers", 'hit-plain')]
    const builds = [{ label: 'gateway process', root: undefined }, ...(baseline ? [{ label: `baseline (${baseline}) process`, root: baseline }] : [])]
    for (let i = 1; i <= GATEWAYS; i += 1) {
      for (const build of builds) {
        const gw = keep(await startMainGateway(`spread-gw${i}${build.root ? '-baseline' : ''}`, { platformUrl: fixture.sandbox.url, platformToken: fixture.sandbox.token, config, ...(build.root ? { root: build.root } : {}) }))
        const url = `${gw.url}${REPORT_PATH}`
        for (let ask = 0; ask < 2; ask += 1) await http('GET', url, { headers: { 'x-api-key': key, ...ROUTED } })
        const hit = await http('GET', url, { headers: { 'x-api-key': key, ...ROUTED } })
        if (hit.status !== 200 || hit.headers['x-cache'] !== 'HIT' || !hit.body.equals(body)) throw new Error(`${build.label} ${i}: no HIT with the platform's bytes (${hit.status} ${hit.headers['x-cache']})`)
        servers.push({ name: `${build.label} ${i}`, url, baseline: Boolean(build.root), headers: Object.entries(ROUTED).map(([k, v]) => `${k}: ${v}`) })
      }
    }
    for (const s of servers) await wrk(s.url, { seconds: quick ? 1 : 3, connections: CONNECTIONS, key, gzip: false, headers: s.headers ?? [] })
    const loads = []
    for (let round = 0; round < ROUNDS; round += 1) {
      loads.push(loadAverage())
      for (const s of servers) {
        const r = await wrk(s.url, { seconds: 1, connections: CONNECTIONS, key, gzip: false, headers: s.headers ?? [] })
        if (r.errors) throw new Error(`${s.name}: ${r.errorDetail}`)
        ;(s.rps ??= []).push(r.rps)
      }
    }
    const bareRps = servers[0].rps
    const rows = servers.map((s) => [s.name, fmtInt(median(s.rps)), fmtX(median(s.rps.map((rps, i) => rps / bareRps[i])))])
    log(`spread: ${rows.map((r) => `${r[0]} ${r[2]}`).join(', ')}`)
    // This build against the baseline: each round's mean of its processes over theirs.
    const meanOf = (group, i) => group.reduce((sum, s) => sum + s.rps[i], 0) / group.length
    const ours = servers.filter((s) => s.name.startsWith('gateway process'))
    const theirs = servers.filter((s) => s.baseline)
    const against = theirs.length
      ? (() => {
          const ratios = bareRps.map((_, i) => meanOf(ours, i) / meanOf(theirs, i))
          return [`This build against the baseline, the mean of its ${ours.length} processes over theirs, round by round: median ${fmtX(median(ratios))} (rounds: ${ratios.map(fmtX).join(', ')}).`, '']
        })()
      : []
    return [
      ...against,
      `${ROUNDS} rounds of 1 s per server in turn, after a warm-up${ROUTED.prefer ? ', the gateways\' hits routed (`prefer: handling=lenient`)' : ''}; load average (1/5/15 min) at the first round ${loads[0]}, at the last ${loads.at(-1)}.`,
      '',
      markdownTable(['server', 'req/s (median)', '× bare (median of each round)'], rows),
      '',
      'The gateway processes run one build with one configuration: their spread is what one',
      "process's figure can move with nothing but the process changed.",
    ].join('\n')
  } finally {
    await Promise.all(own.map((p) => stopProcess(p)))
  }
}
