import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import type { Gateway } from '../../src/compose.js'
import { buildGateway, KEYS, listen, testConfig, WEEK_BY_DATE, REPORT_PATH } from '../helpers/build-gateway.js'
import { useSandbox } from '../helpers/fixtures.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// A closed gateway keeps nothing of itself alive in its process: no timer, observer or
// module-level registry holds it. A process builds one gateway, but what it keeps after
// a close is what every test process that builds hundreds keeps, and what an embedder
// that rebuilds one (a reload) would.

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** The two listeners of the gateway `make` builds, closed, held only weakly. */
async function closedGateway(make: () => Promise<Gateway>): Promise<WeakRef<object>[]> {
  const gw = await make()
  await gw.close()
  return [new WeakRef(gw.proxy), new WeakRef(gw.admin)]
}

describe('a closed gateway', () => {
  const sandbox = useSandbox()
  const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() })

  it('is garbage once closed, built for inject and never listening', async () => {
    const refs = await closedGateway(async () => {
      const gw = await buildGateway(config())
      expect((await gw.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${WEEK_BY_DATE}`, headers: { 'x-api-key': KEYS.all } })).statusCode).toBe(200)
      return gw
    })
    await waitFor('the closed gateway collected', () => {
      gc()
      return refs.every((ref) => ref.deref() === undefined)
    }, testTimeLeft(), 100)
  })

  it('is garbage once closed after listening and answering over a socket', async () => {
    const refs = await closedGateway(async () => {
      const gw = await listen(await buildGateway(config()))
      const answer = await fetch(`${gw.url}${REPORT_PATH}?${WEEK_BY_DATE}`, { headers: { 'x-api-key': KEYS.all, connection: 'close' } })
      await answer.arrayBuffer()
      expect(answer.status).toBe(200)
      return gw
    })
    await waitFor('the closed gateway collected', () => {
      gc()
      return refs.every((ref) => ref.deref() === undefined)
    }, testTimeLeft(), 100)
  })
})
