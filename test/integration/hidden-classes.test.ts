import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { KEYS, TEAMS_YAML } from '../helpers/build-gateway.js'
import { probeAsker, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { startsTimeout, testTimeLeft } from '../helpers/wait.js'

const PROBE = fileURLToPath(new URL('../helpers/shape-probe.mjs', import.meta.url))
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2025-01-01&dateTo=2025-01-31'

// Two ways a gateway process can lose a tenth of each hit to V8's runtime, both through
// the hidden classes of process.nextTick's queue entries, seven per hit. Ajv's code
// optimizer fills the transitions of the class every `{}` starts from
// (src/perf/validator-code.ts); start-up's full collections drop the entries' classes while
// none is alive (src/perf/tick-shape.ts).
describe('hidden classes of a gateway process', () => {
  let sandbox: Sandbox
  let gw: GatewayProcess
  let ask: ReturnType<typeof probeAsker>

  beforeAll(async () => {
    sandbox = await startSandbox()
    gw = await spawnGateway({
      env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() },
      yaml: TEAMS_YAML,
      nodeArgs: ['--allow-natives-syntax', '--expose-gc', '--import', PROBE],
      ipc: true,
    })
    ask = probeAsker(gw)
    const headers = { 'x-api-key': KEYS.all }
    expect((await fetch(`${gw.url}${REPORT}`, { headers })).status).toBe(200)
    expect((await fetch(`${gw.url}${REPORT}`, { headers })).headers.get('x-cache')).toBe('HIT')
    // A query the route's schema refuses: its validator has run.
    expect((await fetch(`${gw.url}/api/v1/report/campaigns/get?advertiserId=abc`, { headers })).status).toBe(400)
    // A gateway's start is ~1.5 s of CPU (loading its modules, compiling its validators):
    // 20 s and more at a load of 20 on two cores. spawnGateway waits for its /readyz within
    // one start's allowance; the hook is given that beside the sandbox and the three reads.
  }, startsTimeout(1))

  afterAll(async () => {
    await gw?.close()
    await sandbox?.close()
  })

  it('no validator (config, teams file, routes) was compiled through Ajv\'s code optimizer', async () => {
    expect(await ask<number>({ kind: 'name-sets' }, 'nameSets', testTimeLeft())).toBe(0)
  })

  it('a queue entry of process.nextTick made after full collections has the hidden class of the one kept', async () => {
    // Three full collections of the gateway's heap, then one tick: the reply's wait is bounded by the test's time left.
    expect(await ask<{ kept: boolean; same: boolean }>({ kind: 'tick-shape' }, 'shape', testTimeLeft())).toEqual({ kept: true, same: true })
  })
})
