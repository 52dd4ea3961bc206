import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/build-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { ADMIN_TOKEN, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// A platform 5xx and the gateway's retry of a read, seen from the teams' side: what a
// retry costs, and whom. A read is sent again after a 502/503/504 (retry-policy.ts).
// (A shared fill's retry on another team's seat: test/slow/shared-fill-retry.test.ts, about 14 s: its no-seat case waits some 10 s for the job to be given back.)

const sg = useAttackGateway()
const CAMPAIGNS = '/api/v1/campaign/get'
const REPORT = '/api/v1/report/campaigns/get'

/** gateway_platform_calls_total of `call` (proxy, report), every outcome: each call sent counts once when it ends, its retries included. */
async function callsEnded(call: 'proxy' | 'report'): Promise<number> {
  const res = await sg.gw.admin.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  let n = 0
  for (const line of res.body.split('\n')) if (line.startsWith('gateway_platform_calls_total{') && line.includes(`call="${call}"`)) n += Number(line.split(' ').at(-1))
  return n
}

/** The platform's calls to `path` once a read of it, whose caller left while the platform worked on it, was answered 503. */
async function sentAfterLeaving(call: 'proxy' | 'report', path: string, target: string, init: RequestInit): Promise<number> {
  const ended = await callsEnded(call)
  sg.sandbox.setLatency(600)
  sg.sandbox.setRouteFailure(path, { kind: 'status', status: 503, times: 1 })
  try {
    const left = new AbortController()
    const asked = fetch(`${sg.url}${target}`, { ...init, signal: left.signal }).catch(() => 'left')
    await waitFor('the read at the platform', () => sg.sandbox.concurrency().inFlight === 1)
    left.abort()
    expect(await asked).toBe('left')
    // The gateway's call ends (its retries included) once the platform's 503 is in.
    await waitFor('the call ended', async () => (await callsEnded(call)) > ended)
    return sg.sandbox.countRequests((r) => r.path === path)
  } finally {
    sg.sandbox.setLatency(0)
    sg.sandbox.clearRouteFailures()
  }
}

describe('a read whose caller left while the platform worked, answered 503, is not sent to the platform again', () => {
  it('a proxied read', async () => {
    const init = { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: '{"userId":101}' }
    expect(await sentAfterLeaving('proxy', CAMPAIGNS, CAMPAIGNS, init)).toBe(1)
  })

  it('a report fill, its only caller gone', async () => {
    const target = `${REPORT}?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07`
    expect(await sentAfterLeaving('report', REPORT, target, { headers: { 'x-api-key': KEYS.all } })).toBe(1)
  })
})

describe('a read the platform answered 503, then 200 on the retry', () => {
  it('is charged to its team once: one request of its rate limit', async () => {
    sg.sandbox.setRouteFailure(CAMPAIGNS, { kind: 'status', status: 503, times: 1 })
    try {
      const res = await fetch(`${sg.url}${CAMPAIGNS}`, { method: 'POST', headers: { 'x-api-key': KEYS.limited, 'content-type': 'application/json' }, body: '{"userId":101}' })
      expect(res.status).toBe(200)
      expect(sg.sandbox.countRequests((r) => r.path === CAMPAIGNS)).toBe(2)
      // max 3 a minute: the retried call took one.
      expect(res.headers.get('ratelimit')).toMatch(/r=2\b/)
    } finally {
      sg.sandbox.clearRouteFailures()
    }
  })
})

itLoggedNoSecret(sg)
