/**
 * A job call is counted and logged under its own route label, `jobs`: a status call
 * with `?wait` is held until its job changes (up to N seconds, by design), and so must
 * stay out of the `proxy` latency that the dashboard draws and GatewayLatencyHigh
 * watches (`route=~"report|proxy"`).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH } from '../helpers/build-gateway.js'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

const env = useSandboxGateway()

/** The lines of the gateway's /metrics of `name` that carry `route="<route>"`. */
async function routeLines(name: string, route: string): Promise<string[]> {
  const text = (await env.gw.admin.inject({ method: 'GET', url: '/metrics' })).body
  return text.split('\n').filter((l) => l.startsWith(`${name}{`) && l.includes(`route="${route}"`))
}

describe('job calls under their own route label', () => {
  afterEach(() => {
    env.sandbox.setFailure({ kind: 'none' })
    env.sandbox.releaseHeld()
  })

  it('counts and logs a job\'s status (waited for with ?wait), its result and its cancel as route jobs, never as proxy', async () => {
    const headers = { 'x-api-key': KEYS.all }
    const proxyBefore = await routeLines('gateway_requests_total', 'proxy')
    // The job's platform call is held at the platform: the job stays running, and its ?wait ends with no change.
    env.sandbox.setFailure({ kind: 'held', times: 1 })
    const asked = await fetch(`${env.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-05-01&dateTo=2025-05-31`, { headers: { ...headers, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const job = asked.headers.get('location')!
    await waitFor('the job running', async () => ((await (await fetch(`${env.url}${job}`, { headers })).json()) as { state: string }).state === 'running', testTimeLeft(), 20)
    const waited = await fetch(`${env.url}${job}?wait=1`, { headers: { ...headers, 'x-request-id': 'status-waited' } })
    expect(waited.status).toBe(200)
    expect((await fetch(`${env.url}${job}/result`, { headers })).status).toBe(409)
    expect((await fetch(`${env.url}${job}`, { method: 'DELETE', headers })).status).toBe(409)

    expect(await routeLines('gateway_requests_total', 'jobs')).toEqual(
      expect.arrayContaining([expect.stringMatching(/^gateway_requests_total\{route="jobs",status="200"\} [1-9]/), expect.stringMatching(/^gateway_requests_total\{route="jobs",status="409"\} 2$/)]),
    )
    expect(await routeLines('gateway_request_duration_seconds_count', 'jobs')).toEqual([expect.stringMatching(/ [1-9]\d*$/)])
    expect(await routeLines('gateway_requests_total', 'proxy')).toEqual(proxyBefore)
    const line = env.gw.logs.records().find((r) => r.msg === 'request' && r.reqId === 'status-waited')
    expect(line).toMatchObject({ route: 'jobs', status: 200, path: job })
  })
})
