import { request as httpRequest } from 'node:http'
import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/build-gateway.js'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { seatsOf } from '../helpers/governors.js'
import { waitFor } from '../helpers/wait.js'

// Contract, "Logs": one access line per proxy-listener request, a request whose caller
// leaves before its answer included (status 499, as nginx writes it), and one only.

const env = useSandboxGateway()

function accessLines(reqId: string): Record<string, unknown>[] {
  return env.gw.logs.records().filter((r) => r.msg === 'request' && r.reqId === reqId)
}

/** The proxy listener's open connections. */
function connections(): Promise<number> {
  return new Promise((resolve, reject) => env.gw.proxy.server.getConnections((err, count) => (err ? reject(err) : resolve(count))))
}

/**
 * Sends a request over real HTTP and closes its connection once the platform has it: with
 * a FIN (`close`: the gateway learns it as it writes the answer), or a reset, as a browser's
 * aborted fetch does (`reset`: the gateway learns it at once, while the platform still works).
 */
async function leaveEarly(method: 'GET' | 'POST', path: string, reqId: string, body: string | undefined, how: 'close' | 'reset'): Promise<void> {
  const asked = env.callerRequests().length
  const req = httpRequest({
    host: '127.0.0.1',
    port: env.port,
    method,
    path,
    headers: { 'x-api-key': KEYS.growth, 'x-request-id': reqId, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
  })
  req.on('error', () => {})
  req.end(body)
  await waitFor(`the platform to receive ${reqId}`, () => env.callerRequests().length > asked)
  if (how === 'reset') req.socket!.resetAndDestroy()
  else req.destroy()
}

describe('a caller that leaves before its answer', () => {
  it.each([
    ['a report read', 'GET', '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07', 'left-early-report', 'report', undefined, 'close'],
    ['a report read reset during its fill', 'GET', '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-08&dateTo=2026-02-14', 'reset-early-report', 'report', undefined, 'reset'],
    ['a proxied call with a body', 'POST', '/api/v1/campaign/get', 'left-early-proxy', 'proxy', '{"userId":101}', 'close'],
    ['a proxied call with a body, reset', 'POST', '/api/v1/campaign/get', 'reset-early-proxy', 'proxy', '{"userId":101}', 'reset'],
  ] as const)('%s has its access line: status 499, its team and route, once', async (_name, method, path, reqId, route, body, how) => {
    // The call stays at the platform until released: the caller leaves before its answer, whatever the machine's pace.
    env.sandbox.setRouteFailure(path.split('?')[0] as string, { kind: 'held', times: 1 })
    try {
      const open = await connections()
      await leaveEarly(method, path, reqId, body, how)
      await waitFor(`${reqId} held at the platform`, () => env.sandbox.concurrency().held === 1)
      // The gateway heard the caller leave while the platform still works: a proxied call's line is written then.
      await waitFor(`the gateway to close ${reqId}'s connection`, async () => (await connections()) === open)
      if (route === 'proxy') expect(accessLines(reqId)).toHaveLength(1)
      // The platform's answer comes later, to no one: a report's fill goes on and stores its copy.
      env.sandbox.releaseHeld()
      await waitFor(`the platform's answer to ${reqId}`, () => seatsOf(env.gw).running('growth') === 0)
      await waitFor(`the access line of ${reqId}`, () => accessLines(reqId).length > 0)
      // Nothing was written to it: its bytes are 0, not unknown. A report read's line says what
      // its fill did with the cache (MISS: the copy stored), as the answer would have; a proxied call's, none.
      expect(accessLines(reqId)[0]).toMatchObject({ status: 499, team: 'growth', route, method, path: path.split('?')[0], client: '127.0.0.1', bytes: 0, cache: route === 'report' ? 'MISS' : null })
      expect(Number(accessLines(reqId)[0]!.upstreamMs)).toBeGreaterThan(route === 'report' ? 0 : -1)
    } finally {
      env.sandbox.clearRouteFailures()
      env.sandbox.releaseHeld()
    }
    const next = await fetch(`${env.url}${path}`, { method, headers: { 'x-api-key': KEYS.growth, 'x-request-id': `${reqId}-next`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body })
    expect(next.status).toBe(200)
    await waitFor(`the access line of ${reqId}-next`, () => accessLines(`${reqId}-next`).length === 1)
    expect(accessLines(reqId)).toHaveLength(1)
    // A caller that leaves is the caller's doing, not the gateway's fault: no error line.
    expect(env.gw.logs.records().filter((r) => r.reqId === reqId && Number(r.level) >= 50)).toEqual([])
  })

  it('a read that joined another caller\'s fill has its access line: status 499, no bytes counted as sent', async () => {
    const path = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-07'
    env.sandbox.setLatency(800)
    let filler: Promise<Response>
    try {
      const asked = env.callerRequests().length
      // Team limited (3 calls a minute): its rate count says when the gateway has read each request.
      filler = fetch(`${env.url}${path}`, { headers: { 'x-api-key': KEYS.limited, 'x-request-id': 'fill-first' } })
      await waitFor('the platform to receive the first read', () => env.callerRequests().length > asked)
      // The same report while its fill runs: joined before the router, then left.
      const joiner = httpRequest({ host: '127.0.0.1', port: env.port, path, headers: { 'x-api-key': KEYS.limited, 'x-request-id': 'joined-then-left' } })
      joiner.on('error', () => {})
      joiner.end()
      const limited = env.gw.config.teams.find((t) => t.name === 'limited')!
      await waitFor('the joiner to be admitted', () => env.gw.rateLimiter.peek(limited).remaining === 1)
      joiner.destroy()
      expect((await filler).status).toBe(200)
    } finally {
      env.sandbox.setLatency(0)
    }
    await waitFor('the access line of the joiner', () => accessLines('joined-then-left').length > 0)
    expect(accessLines('joined-then-left')).toEqual([expect.objectContaining({ status: 499, team: 'limited', route: 'report', client: '127.0.0.1', bytes: 0, cache: 'MISS' })])
    expect(env.callerRequests().filter((r) => r.query.includes('dateFrom=2026-03-01'))).toHaveLength(1)
  })
})

