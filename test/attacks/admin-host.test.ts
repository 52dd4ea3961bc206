import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { rawRequest } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// DNS rebinding: a page of attacker.example whose name comes to resolve to the admin
// listener's address is, in the operator's browser, of the same origin as the listener,
// and reads what needs no token (/metrics: team and credential names; /readyz; /docs/json).
// Its requests carry its own name in Host: the admin listener answers only a Host it
// answers to (an IP address, localhost, a name of admin.hosts).

const LISTED = 'report-gateway-admin.reports.svc.cluster.local'

describe('the admin listener asked under a name it does not answer to', () => {
  const sg = useAttackGateway({ env: { ADMIN_HOSTS: `report-gateway-admin, ${LISTED.toUpperCase()}.` } })
  let port = 0
  const get = async (path: string, host: string | null, version = '1.1', headers = '') => {
    if (port === 0) {
      await sg.gw.admin.listen({ host: '127.0.0.1', port: 0 })
      port = (sg.gw.admin.server.address() as AddressInfo).port
    }
    const hostLine = host === null ? '' : `Host: ${host}\r\n`
    return rawRequest(port, `GET ${path} HTTP/${version}\r\n${hostLine}${headers}Connection: close\r\n\r\n`)
  }

  it('refuses /metrics, /readyz, /docs/json, /console and /admin/* to a page of another name, saying which setting takes the name', async () => {
    for (const path of ['/metrics', '/readyz', '/healthz', '/docs/json', '/console', '/admin/status']) {
      const res = await get(path, `attacker.example:${port}`, '1.1', `authorization: Bearer ${ADMIN_TOKEN}\r\n`)
      expect(res.status, path).toBe(421)
      expect(res.headers['content-type'], path).toMatch(/^application\/json/)
      expect(res.headers['cache-control'], path).toBe('no-store')
      const body = JSON.parse(res.body) as Record<string, unknown>
      expect(body).toMatchObject({ statusCode: 421, code: 'GW_ADMIN_HOST', error: 'Misdirected Request' })
      expect(body.message).toContain('attacker.example')
      expect(body.message).toContain('admin.hosts')
      expect(body.message).toContain('ADMIN_HOSTS')
      expect(res.body).not.toContain('gateway_')
    }
  })

  it('refuses a name that only looks like an address or a listed name', async () => {
    for (const host of ['127.0.0.1.nip.io', 'localhost.attacker.example', 'attacker.localhost.', 'report-gateway-admin.attacker.example', `x${LISTED}`, ':8081']) {
      expect((await get('/metrics', host)).status, host).toBe(421)
    }
    // Node refuses a Host it cannot read at all (400) before the listener sees it.
    for (const host of ['[::1', '::1', '127.0.0.1:80:80', 'localhost:port']) expect((await get('/metrics', host)).status, host).toBe(400)
  })

  it('answers an IP address (v4, v6 in brackets), localhost and a listed name, with any port, in any case, with a trailing dot', async () => {
    const accepted = [
      `127.0.0.1:${port}`, '127.0.0.1', '10.1.2.3:8081', `[::1]:${port}`, '[::1]', '[fe80::1]',
      'localhost', `localhost:${port}`, 'LocalHost', 'localhost.', `LOCALHOST.:${port}`,
      'report-gateway-admin', 'Report-Gateway-Admin:8081', LISTED, `${LISTED}.`, `${LISTED.toUpperCase()}:8081`,
    ]
    for (const host of accepted) {
      const res = await get('/metrics', host)
      expect(res.status, host).toBe(200)
      expect(res.body, host).toContain('gateway_')
    }
  })

  it('answers a request without a Host (HTTP/1.0: no browser sends one)', async () => {
    expect((await get('/healthz', null, '1.0')).status).toBe(200)
  })

  it('counts the refusals in one audit line per source and interval, not one per call', async () => {
    const before = sg.gw.logs.records().filter((l) => l.action === 'admin-host').length
    for (let i = 0; i < 5; i++) await get('/metrics', 'rebound.example')
    const lines = sg.gw.logs.records().filter((l) => l.action === 'admin-host')
    expect(lines.length - before).toBeLessThanOrEqual(1)
    expect(lines.at(-1)).toMatchObject({ kind: 'audit', action: 'admin-host', outcome: 'refused', source: '127.0.0.1' })
  })

  itLoggedNoSecret(sg)
})
