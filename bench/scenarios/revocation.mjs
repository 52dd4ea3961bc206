// How long a key removed from the teams file keeps working: one replica (`node
// dist/main.js`) on the default teamsReload.poll (1 s) and the file's watch; each round
// rewrites its CONFIG_FILE without one more key (in place, as an editor writes it) and
// asks with that key every 5 ms until it is refused. Measured per round: from the file's
// write to the first 401 (the contract's revocation "within 2 s"). A round is bounded: a
// key still working after ROUND_BOUND_MS is counted as missed.

import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { stringify as toYaml } from 'yaml'
import { REPORT_PATH, startMainGateway } from '../lib/fixture.mjs'
import { http } from '../lib/http.mjs'
import { loadAverage } from '../lib/machine.mjs'
import { log, stopProcess } from '../lib/processes.mjs'
import { fmtMs, markdownTable, median, percentile } from '../lib/stats.mjs'
import { msUntil } from '../lib/until.mjs'

export const id = 'revocation'
export const title = 'A key removed from the teams file, to its first refusal (teamsReload.poll 1 s)'

const ROUND_BOUND_MS = 10_000
const ASK_EVERY_MS = 5

/** Runs the scenario; resolves with its Markdown section. */
export async function run({ fixture, quick }) {
  const ROUNDS = quick ? 5 : 15
  const { hashApiKey } = await import('../../dist/access/api-keys.js')
  const keys = Array.from({ length: ROUNDS + 1 }, () => `rgw_${randomBytes(32).toString('base64url')}`)
  const config = (held) => ({ teams: { revoked: { keys: held.map((k) => hashApiKey(k)), advertisers: ['*'] } } })
  let gw = null
  try {
    gw = await startMainGateway('revocation', { platformUrl: fixture.sandbox.url, platformToken: fixture.sandbox.token, config: config(keys) })
    const ask = async (key) => (await http('GET', `${gw.url}${REPORT_PATH}`, { headers: { 'x-api-key': key } })).status
    for (const key of keys) if ((await ask(key)) !== 200) throw new Error('revocation: a key of the file was refused before its round')
    const refused = []
    let missed = 0
    for (let round = 0; round < ROUNDS; round += 1) {
      const key = keys[round]
      writeFileSync(gw.configFile, toYaml(config(keys.slice(round + 1))))
      const took = await msUntil(async () => (await ask(key)) === 401, performance.now(), ROUND_BOUND_MS, ASK_EVERY_MS)
      if (took === null) missed += 1
      else refused.push(took)
    }
    const sorted = [...refused].sort((x, y) => x - y)
    log(`revocation: median ${fmtMs(median(refused))} from the write to the first refusal, ${missed} missed of ${ROUNDS}`)
    return [
      `${ROUNDS} keys removed, one a round; the removed key asked every ${ASK_EVERY_MS} ms (an answer's own time included); a round bounded at ${ROUND_BOUND_MS / 1000} s; load average ${loadAverage()}.`,
      '',
      markdownTable(
        ['what', 'median', 'p90', 'max', 'rounds within 2 s'],
        [["from the file's write to the removed key's first 401", fmtMs(median(refused)), fmtMs(percentile(sorted, 90)), fmtMs(sorted.at(-1)), `${sorted.filter((ms) => ms < 2000).length} of ${ROUNDS}${missed ? ` (${missed} past ${ROUND_BOUND_MS / 1000} s)` : ''}`]],
      ),
      '',
    ].join('\n')
  } finally {
    if (gw) await stopProcess(gw)
  }
}
