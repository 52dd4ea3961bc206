import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, teamsYamlWith } from '../helpers/build-gateway.js'
import { freshRequest } from '../helpers/balancers.js'
import { spawnGateway, timedRequest } from '../helpers/gateway-process.js'
import { commandGate } from '../helpers/redis-gate.js'
import { redisAvailability, startRedis } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'
import { startSandbox } from '../../src/sandbox/sandbox.js'

// A SIGTERM that comes once the gateway serves (readiness 200) but before its start has
// returned: the start's last steps (the replicas' announcement and subscriptions) still
// under way. The stop of the start's moments (main.ts: exit 0 at once, before serving)
// ended the process there, its callers mid-request cut off without an answer; the stop
// now drains as any stop of a serving gateway. The start is held at that moment by the
// replica's SUBSCRIBE of its history channel, which Redis receives only when the test
// releases it.

const { available } = redisAvailability()
const PROXIED = '/api/v1/campaign/get'

describe.skipIf(!available)('SIGTERM between readiness 200 and the end of the start (gateway process)', () => {
  // Closed last first: the gateway, the gate, the sandbox, Redis.
  const cleanups: (() => void | Promise<void>)[] = []
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn()
  })

  it('drains: readiness 503 at once, the call in flight answered, then the process exits 0 once the start has ended', async () => {
    const redis = await startRedis()
    cleanups.push(() => redis.close())
    const sandbox = await startSandbox()
    cleanups.push(() => sandbox.close())
    const gate = await commandGate(redis.port, 'history-asked', cleanups)
    const gw = await spawnGateway({
      env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: gate.url, LOG_LEVEL: 'info' },
      yaml: teamsYamlWith({ shutdownDrain: '1s', shutdownGrace: '10s' }),
    })
    cleanups.push(() => gw.close())
    // Readiness answers 200 (spawnGateway waited for it) and the start waits on its SUBSCRIBE.
    expect(gate.holding()).toBe(true)
    expect(gw.output()).not.toMatch(/"msg":"report gateway listening"/)

    sandbox.setRouteFailure(PROXIED, { kind: 'held', times: 1 })
    const answer = timedRequest(`${gw.url}${PROXIED}`, { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: '{"userId":101}' })
    // Held there (the start's token probe, on the same path, was answered before).
    await waitFor('the call held at the platform', () => sandbox.concurrency().held === 1)

    gw.kill('SIGTERM')
    await waitFor(
      () => `readiness 503 (draining):\n${gw.output()}`,
      async () => {
        if (gw.child.exitCode !== null) throw new Error(`the gateway exited (${gw.child.exitCode}) on SIGTERM, its call in flight unanswered:\n${gw.output()}`)
        return (await freshRequest(`${gw.adminUrl}/readyz`)).status === 503
      },
    )
    sandbox.releaseHeld()
    const res = await answer
    expect([res.status, res.headers.connection]).toEqual([200, 'close'])
    // The start is still held: the drain did not wait for it, and the process waits for the start before closing.
    expect(gate.holding()).toBe(true)
    expect(gw.child.exitCode).toBe(null)
    gate.release()
    expect(await gw.exited).toMatchObject({ code: 0, signal: null })
    expect(gw.output()).toMatch(/"signal":"SIGTERM".*"msg":"draining: readiness 503/)
    expect(gw.output()).toMatch(/"msg":"stopped"/)
    expect(gw.output()).not.toMatch(/stopped during the start/)
  }, 60_000)
})
