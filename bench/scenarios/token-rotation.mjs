// How long a token rotation takes to reach another replica: two replicas (`node
// dist/main.js`, GATEWAY_SECRET set) on one redis-server; each round issues a token at the
// sandbox, PUTs it on replica A (/admin/token: the probe call, then stored in Redis and
// announced on the bus) and reads replica B's GET /admin/token every 2 ms until its
// fingerprint is the one A answered. Measured per round: the PUT's own time, and from A's
// answer to B holding the token (the contract's rotation "within 1 s" on every replica).
// A round is bounded: one B has not switched on after ROUND_BOUND_MS is counted as missed.

import { performance } from 'node:perf_hooks'
import { startMainGateway } from '../lib/fixture.mjs'
import { http } from '../lib/http.mjs'
import { loadAverage } from '../lib/machine.mjs'
import { log, stopProcess } from '../lib/processes.mjs'
import { fmtMs, markdownTable, median, percentile } from '../lib/stats.mjs'
import { msUntil } from '../lib/until.mjs'

export const id = 'token-rotation'
export const title = 'A token rotation from one replica to another (PUT /admin/token, Redis pub/sub)'

const ROUND_BOUND_MS = 10_000
const READ_EVERY_MS = 2

/** Runs the scenario; resolves with its Markdown section. */
export async function run({ fixture, quick }) {
  if (!fixture.redisUrl) return 'Skipped: no redis-server.\n'
  const ROUNDS = quick ? 8 : 30
  const own = []
  try {
    const base = { platformUrl: fixture.sandbox.url, platformToken: fixture.sandbox.token, redisUrl: fixture.redisUrl, env: { ADMIN_TOKEN: fixture.adminToken } }
    const config = { teams: fixture.teams, redis: { keyPrefix: `rgwrotation-${process.pid}:` } }
    const a = own[own.push(await startMainGateway('rotation-a', { ...base, config })) - 1]
    const b = own[own.push(await startMainGateway('rotation-b', { ...base, config })) - 1]
    const headers = { authorization: `Bearer ${fixture.adminToken}` }
    const fingerprintOf = async (gw) => (await http('GET', `${gw.admin}/admin/token`, { headers })).json().fingerprint
    const puts = []
    const switches = []
    let missed = 0
    for (let round = 0; round < ROUNDS; round += 1) {
      const token = (await fixture.sandbox.control('POST', '/tokens', { accountId: 100 })).access_token
      const t0 = performance.now()
      const r = await http('PUT', `${a.admin}/admin/token`, { headers, json: { token } })
      const answered = performance.now()
      if (r.status !== 200) throw new Error(`PUT /admin/token on A: ${r.status} ${r.body.toString('utf8').slice(0, 200)}`)
      const want = r.json().fingerprint
      puts.push(answered - t0)
      const took = await msUntil(async () => (await fingerprintOf(b)) === want, answered, ROUND_BOUND_MS, READ_EVERY_MS)
      if (took === null) missed += 1
      else switches.push(took)
    }
    const sorted = [...switches].sort((x, y) => x - y)
    log(`token-rotation: median ${fmtMs(median(switches))} from A's answer to B's switch, ${missed} missed of ${ROUNDS}`)
    return [
      `${ROUNDS} rotations, one at a time; B read every ${READ_EVERY_MS} ms (a read's own time included in the figures); a round bounded at ${ROUND_BOUND_MS / 1000} s; load average ${loadAverage()}.`,
      '',
      markdownTable(
        ['what', 'median', 'p90', 'max', 'rounds within 1 s'],
        [
          ['PUT /admin/token on A (probe call, stored, announced)', fmtMs(median(puts)), fmtMs(percentile([...puts].sort((x, y) => x - y), 90)), fmtMs(Math.max(...puts)), `${puts.filter((ms) => ms < 1000).length} of ${ROUNDS}`],
          ["from A's answer to B holding the token", fmtMs(median(switches)), fmtMs(percentile(sorted, 90)), fmtMs(sorted.at(-1)), `${sorted.filter((ms) => ms < 1000).length} of ${ROUNDS}${missed ? ` (${missed} past ${ROUND_BOUND_MS / 1000} s)` : ''}`],
        ],
      ),
      '',
    ].join('\n')
  } finally {
    await Promise.all(own.map((p) => stopProcess(p)))
  }
}
