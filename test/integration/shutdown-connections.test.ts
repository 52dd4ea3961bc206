import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { Agent, request } from 'undici'
import { KEYS, buildGateway, listen, testConfig } from '../helpers/build-gateway.js'
import { useSandbox } from '../helpers/fixtures.js'
import { waitUntil } from '../helpers/wait.js'

// A replica told to stop closes once its requests in flight are answered, not at the end
// of its grace: a caller that sends nothing more after SIGTERM (a load balancer that took
// the replica out) kept each connection that was answering open and idle, so every
// restart took the whole shutdownGrace (10 s, seen in a chaos soak) instead of a moment.
// A connection that was answering is closed a moment after its answer (a request on it
// meanwhile is refused GW_SHUTTING_DOWN: test/faults/shutdown.test.ts).

const sandbox = useSandbox()
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-06-01&dateTo=2026-06-07'

describe('closing with answers in flight on kept-alive connections', () => {
  it('answers them and is closed soon after, with nothing more sent', async () => {
    const gw = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() })))
    const agent = new Agent({ keepAliveTimeout: 60_000 })
    try {
      // The connection is kept alive (an answer before), then one answer is in flight.
      const first = await request(`${gw.url}/healthz`, { dispatcher: agent })
      await first.body.dump()
      sandbox.setLatency(600)
      const inFlight = request(`${gw.url}${REPORT}`, { headers: { 'x-api-key': KEYS.all }, dispatcher: agent })
      await waitUntil(2000, () => sandbox.countRequests((r) => r.path === '/api/v1/report/campaigns/get') === 1)
      let closed = false
      const closing = gw.close().then(() => (closed = true))
      const answer = await inFlight
      await answer.body.dump()
      expect(answer.statusCode).toBe(200)
      // Closed within moments of the answer; before, it waited for keepAliveTimeout (72 s).
      expect(await waitUntil(5000, () => closed)).toBe(true)
      await closing
    } finally {
      await gw.close()
      await agent.close().catch(() => undefined)
      await sleep(0)
    }
  })
})
