import { describe, expect, it } from 'vitest'
import { TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { distinctReport, proxyGet } from '../helpers/gateway-calls.js'

// The gateway's own 503 GW_OVERLOADED says when the calls ahead of a retry have gone to seats
// (docs/governor.md, "A refusal's retry-after"), against the sandbox over loopback HTTP.

const sandbox = useSandbox()
const gateways = useGateways()

describe('the retry-after of a refusal for want of a seat', () => {
  it('is the seat-time of the calls ahead, not 1 s, when the platform takes 2.5 s a call at one seat', async () => {
    // The new user's setup. No token probe: the gateway's own call would take the seat.
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() },
      `${TEAMS_YAML}\nplatform: { maxConcurrent: 1, adaptive: false, queue: 1, queueTimeout: 1s, probe: null }`))
    sandbox.setLatency(2_500)
    // One call answered teaches the kind's seat-time (the week reports of distinctReport).
    expect((await proxyGet(gw, distinctReport(0))).statusCode).toBe(200)
    const answers = await Promise.all(Array.from({ length: 4 }, (_, i) => proxyGet(gw, distinctReport(1 + i))))
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 503, 503, 503])
    const refused = answers.filter((a) => a.statusCode === 503).map((a) => ({ retryAfter: Number(a.headers['retry-after']), ...a.json<{ code: string; message: string }>() }))
    // Two refused at once for the full queue: the seat-time of the call waiting and what is left of the one in flight (a seat-time is
    // 2.5 s and the gateway's own part: 5 or 6 s); the one waiting, after its second: what is left of the call in flight (2 s). Each
    // message says the same seconds.
    const [timedOut, ...full] = refused.sort((a, b) => a.retryAfter - b.retryAfter)
    expect(timedOut?.message).toMatch(/no platform seat of credential default within 1000 ms; retry in \d+ s$/)
    for (const r of full) expect(r.message).toMatch(/the queue of credential default is full; retry in \d+ s$/)
    for (const r of refused) {
      expect(r.code).toBe('GW_OVERLOADED')
      expect(r.retryAfter).toBeGreaterThanOrEqual(2)
      expect(r.message.endsWith(`retry in ${r.retryAfter} s`)).toBe(true)
    }
    for (const r of full) expect(r.retryAfter).toBeGreaterThanOrEqual(4)
  }, 30_000)
})
