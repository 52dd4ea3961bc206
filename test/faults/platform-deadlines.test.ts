import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { Sandbox } from '../../src/sandbox/sandbox.js'
import { KEYS, REPORT_PATH as REPORT, teamsYamlWith } from '../helpers/build-gateway.js'
import { useSandboxGatewayProcess } from '../helpers/fixtures.js'
import { timedRequest } from '../helpers/gateway-process.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// Platform deadlines, against a gateway process (dist/main.js) and the
// sandbox in hang, trickle, reset, 5xx and 429 modes: `platform.timeout` bounds the whole
// call (queue wait and body included), and no failure is retried behind the caller's back.
// Where the time went shows as counts, not as times: the calls that reached the sandbox, the
// chunks a trickle sent before the gateway went away. A gateway that waits on shows as the
// test's timeout.

const TIMEOUT_MS = 3000
const CONNECTIONS = 64
// A platform's retry-after longer than a test's timeout (vitest.config.ts, 20 s).
const RETRY_AFTER_S = 30
const YAML = teamsYamlWith({ platform: { timeout: `${TIMEOUT_MS}ms`, connections: CONNECTIONS } })

describe('platform deadlines (gateway process, sandbox faults)', () => {
  const { sandbox, gw } = useSandboxGatewayProcess(YAML)

  beforeAll(async () => {
    // Warm: 100 client connections open and the report path compiled, so the timings
    // below are the gateway's deadlines and not a cold start.
    const warm = await Promise.all(Array.from({ length: 100 }, () => report('advertiserId=101&byDate=1&dateFrom=2025-05-01&dateTo=2025-05-07')))
    expect(warm.every((r) => r.status === 200)).toBe(true)
  }, 120_000)

  beforeEach(async () => {
    // A call of the test before that got its seat just before its deadline may still be
    // on its way: the next test's failure mode is for its own calls only. A call cut by its
    // deadline holds its seat until its expected end at the platform (docs/governor.md): the
    // next test's calls start with every seat free.
    await waitFor('the sandbox to be idle', () => sandbox.concurrency().inFlight === 0)
    await waitFor('every seat free', async () => /^gateway_platform_in_flight_calls\{credential="default"\} 0$/m.test(await (await fetch(`${gw.adminUrl}/metrics`)).text()), testTimeLeft(), 50)
    sandbox.setFailure({ kind: 'none' })
    sandbox.clearRouteFailures()
    sandbox.setLatency(0)
    sandbox.clearRequests()
  })

  const report = (query: string) => timedRequest(`${gw.url}${REPORT}?${query}`, { headers: { 'x-api-key': KEYS.all } })
  const reportCalls = () => sandbox.countRequests((r) => r.path === REPORT)

  it('answers 100 concurrent distinct misses against a hanging platform 504 at their deadline, queue wait included: the queued calls never reach it', async () => {
    sandbox.setFailure({ kind: 'hang' })
    // 100 calls for 64 pooled connections: 36 wait in the queue, on the same clock. A call cut
    // at its deadline holds its connection and seat for another timeout (a hung call's watch),
    // so a deadline that started at the seat would send the queued calls, and be answered, later.
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => report(`advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-${String(1 + Math.floor(i / 28)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}`)),
    )
    expect(answers.map((a) => a.status)).toEqual(Array(100).fill(504))
    expect(JSON.parse(answers[0]!.body)).toMatchObject({ statusCode: 504, code: 'GW_UPSTREAM_TIMEOUT' })
    expect(reportCalls()).toBeLessThanOrEqual(CONNECTIONS)
  })

  it('cuts off a body trickling in past the timeout, answers 504 and does not cache it', async () => {
    // Headers at once, then one chunk a second: each read is quick, the whole is not. On a
    // report split of its own: a call of the test before, cut off by the gateway just as it
    // went out, can still reach the sandbox after beforeEach found it idle (seen once in a
    // loaded full run), and must not be the one that takes the trickle.
    const creatives = '/api/v1/report/creatives/get'
    sandbox.setRouteFailure(creatives, { kind: 'trickle', intervalMs: 1000, chunks: 8, times: 1 })
    const url = `${gw.url}${creatives}?advertiserId=101&byDate=1&dateFrom=2025-06-01&dateTo=2025-06-07`
    const headers = { 'x-api-key': KEYS.all }
    const first = await timedRequest(url, { headers })
    expect(first.status).toBe(504)
    expect(JSON.parse(first.body)).toMatchObject({ code: 'GW_UPSTREAM_TIMEOUT' })
    await waitFor('the trickle to end', () => sandbox.trickles.length === 1)
    expect(sandbox.trickles[0]!.sent).toBeLessThan(sandbox.trickles[0]!.chunks)
    // Nothing was stored: the next read is a miss that reaches the platform.
    const second = await timedRequest(url, { headers })
    expect(second.status).toBe(200)
    expect(second.headers['x-cache']).toBe('MISS')
    expect(sandbox.countRequests((r) => r.path === creatives)).toBe(2)
  })

  it('answers 504 GW_UPSTREAM_TIMEOUT to a proxied answer trickling in past the timeout', async () => {
    sandbox.setFailure({ kind: 'trickle', intervalMs: 1000, chunks: 8, times: 1 })
    const res = await timedRequest(`${gw.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: '{"userId":101}' })
    // An answer is received whole before anything is sent (platform.bufferTotalBytes):
    // nothing went out before the body stalled, so the caller gets the error, and the
    // gateway went away before the platform's last chunk.
    expect(res.status).toBe(504)
    expect(JSON.parse(res.body)).toMatchObject({ code: 'GW_UPSTREAM_TIMEOUT' })
    await waitFor('the trickle to end', () => sandbox.trickles.length === 1)
    expect(sandbox.trickles[0]!.sent).toBeLessThan(sandbox.trickles[0]!.chunks)
  })

  it('sends a proxied GET the platform answers 503 to the platform once, and passes its retry-after on as seconds', async ({ task }) => {
    // A retry-after past the test's timeout: a gateway that waited it out would not answer within the test.
    expect(RETRY_AFTER_S * 1000).toBeGreaterThan(task.timeout ?? Infinity)
    sandbox.setFailure({ kind: 'status', status: 503, headers: { 'retry-after': String(RETRY_AFTER_S) } })
    const res = await timedRequest(`${gw.url}/api/v1/campaign/list?userId=101`, { headers: { 'x-api-key': KEYS.all } })
    expect(res.status).toBe(502)
    expect(JSON.parse(res.body)).toMatchObject({ statusCode: 502, code: 'GW_UPSTREAM' })
    expect(res.headers['retry-after']).toBe(String(RETRY_AFTER_S))
    expect(sandbox.countRequests((r) => r.path === '/api/v1/campaign/list')).toBe(1)

    // An HTTP date is read as a date, not as a number of anything.
    sandbox.setFailure({ kind: 'status', status: 503, headers: { 'retry-after': new Date(Date.now() + 30_000).toUTCString() } })
    const dated = await timedRequest(`${gw.url}/api/v1/campaign/list?userId=101`, { headers: { 'x-api-key': KEYS.all } })
    expect(Number(dated.headers['retry-after'])).toBeGreaterThanOrEqual(28)
    expect(Number(dated.headers['retry-after'])).toBeLessThanOrEqual(31)
    expect(sandbox.countRequests((r) => r.path === '/api/v1/campaign/list')).toBe(2)
  })

  it('makes one platform call for a report read the platform answers 500 or 429, and at most the 2 read retries on a reset', async ({ task }) => {
    // The 429 last: it pauses the credential for its retry-after, past the test's timeout:
    // a gateway that waited it out would not answer within the test.
    expect(RETRY_AFTER_S * 1000).toBeGreaterThan(task.timeout ?? Infinity)
    const cases: [Parameters<Sandbox['setFailure']>[0], number, number][] = [
      [{ kind: 'status', status: 500 }, 502, 1],
      [{ kind: 'reset' }, 502, 3],
      [{ kind: 'status', status: 429, headers: { 'retry-after': String(RETRY_AFTER_S) } }, 429, 1],
    ]
    for (const [i, [mode, status, calls]] of cases.entries()) {
      sandbox.clearRequests()
      sandbox.setFailure(mode)
      // Reports by campaign: a kind of work of its own. The hanging platform above cut calls of
      // the by-date kinds at their deadline, and a kind cut without an answer yet is taken to
      // take longer than its deadline for a while: not sent (docs/governor.md, deadline first).
      const res = await report(`advertiserId=101&byCampaign=1&dateFrom=2025-07-01&dateTo=2025-07-0${i + 1}`)
      expect(res.status, JSON.stringify(mode)).toBe(status)
      expect(reportCalls(), JSON.stringify(mode)).toBe(calls)
      if (status === 429) expect(res.headers['retry-after']).toBe(String(RETRY_AFTER_S))
    }
  })
})
