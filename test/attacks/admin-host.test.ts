import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { rawRequest } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
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
      // The name is not repeated: an echo redacted where it held a secret would answer a guess at it.
      expect(body.message).not.toContain('attacker.example')
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

  // RFC 9112, 3.2.2: a request target in absolute form names the host it asks, and a server
  // reads it in place of Host. Every name a request gives, its target's and its Host's,
  // meets the same check: a name in the target is no way past it.
  describe('with a request target in absolute form (GET http://host/path)', () => {
    it('refuses a target naming another host, whatever Host says or without one', async () => {
      for (const [target, host, version] of [
        [`http://attacker.example:${port}/metrics`, `127.0.0.1:${port}`, '1.1'],
        ['http://attacker.example/docs/json', 'localhost', '1.1'],
        ['HTTP://user:userinfo-secret@attacker.example/readyz', '127.0.0.1', '1.1'],
        ['http://127.0.0.1.nip.io/metrics', null, '1.0'],
        ['http://attacker.example/admin/status', null, '1.0'],
      ] as const) {
        const res = await get(target, host, version, `authorization: Bearer ${ADMIN_TOKEN}\r\n`)
        expect(res.status, target).toBe(421)
        expect(JSON.parse(res.body), target).toMatchObject({ code: 'GW_ADMIN_HOST', message: expect.not.stringContaining(new URL(target.toLowerCase()).hostname) })
        expect(res.headers['cache-control'], target).toBe('no-store')
        expect(res.body, target).not.toContain('userinfo-secret')
      }
    })

    it('refuses a target naming the listener when Host names another host', async () => {
      expect((await get(`http://127.0.0.1:${port}/metrics`, 'attacker.example')).status).toBe(421)
    })

    it('serves a target naming a host it answers to as its path and query: the same route, the same token asked', async () => {
      for (const target of [`http://127.0.0.1:${port}/metrics`, `http://localhost/metrics`, `https://${LISTED}:8443/metrics`, 'http://[::1]/metrics']) {
        const res = await get(target, `127.0.0.1:${port}`)
        expect(res.status, target).toBe(200)
        expect(res.body, target).toContain('gateway_')
      }
      expect((await get('http://localhost/admin/status', 'localhost')).status).toBe(401)
      const status = await get('http://user:userinfo-secret@localhost/admin/status', 'localhost', '1.1', `authorization: Bearer ${ADMIN_TOKEN}\r\n`)
      expect(status.status).toBe(200)
      expect(JSON.parse(status.body)).toHaveProperty('phase', 'serving')
    })

  })

  // What the router never sees (a CONNECT, a method Node's parser does not know) meets the
  // same check: a page of another name gets the 421 of every other method, not the 405
  // naming what the path takes.
  it('refuses CONNECT and a method Node does not know under a name it does not answer to, as any other method: 421, audited', async () => {
    await get('/healthz', '127.0.0.1')
    const auth = `authorization: Bearer ${ADMIN_TOKEN}\r\n`
    for (const [i, [what, head, name]] of ([
      ['FOO, Host refused', `FOO /admin/status HTTP/1.1\r\nHost: foo-rebound.example:${port}\r\n${auth}`, 'foo-rebound.example'],
      ['FOO, Host refused after other lines', `FOO /admin/status HTTP/1.1\r\nx-a: 1\r\nHOST: foo-later.example\r\n${auth}`, 'foo-later.example'],
      ['FOO, its absolute target refused', `FOO http://foo-target.example/admin/status HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}`, 'foo-target.example'],
      ['CONNECT, Host refused', `CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: connect-rebound.example\r\n`, 'connect-rebound.example'],
      ['CONNECT, its target refused', 'CONNECT connect-target.example:443 HTTP/1.1\r\nHost: 127.0.0.1\r\n', 'connect-target.example'],
    ] as const).entries()) {
      // Each from an address of its own: one address's refusals within 10 s are one audit line.
      const from = `127.0.0.${10 + i}`
      const res = await rawRequest(port, `${head}Connection: close\r\n\r\n`, 5000, from)
      expect(res.status, what).toBe(421)
      expect(JSON.parse(res.body), what).toMatchObject({ statusCode: 421, code: 'GW_ADMIN_HOST', message: expect.not.stringContaining(name) })
      expect([res.headers['cache-control'], res.headers['x-frame-options'], res.headers['x-content-type-options']], what).toEqual(['no-store', 'DENY', 'nosniff'])
      expect(res.headers.allow, what).toBeUndefined()
      expect(res.headers.connection, what).toBe('close')
      expect(res.text, what).not.toContain(ADMIN_TOKEN)
      const method = head.split(' ')[0]
      await waitFor(`the audit line of ${what}`, () => sg.gw.logs.records().some((l) => l.action === 'admin-host' && l.host === name))
      expect(sg.gw.logs.records().find((l) => l.action === 'admin-host' && l.host === name), what).toMatchObject({ kind: 'audit', outcome: 'refused', method, source: from, reqId: res.headers['x-request-id'] })
    }
    // A name it answers to: the 405 naming what the path takes, as before.
    for (const head of [`FOO /admin/status HTTP/1.1\r\nHost: ${LISTED}\r\n`, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: localhost:${port}\r\n`]) {
      expect((await rawRequest(port, `${head}Connection: close\r\n\r\n`)).status, head).toBe(405)
    }
  })

  // A refused name is repeated up to a DNS name's length (253): a secret of the gateway's
  // past that cut, in a Host sent by one who holds it, left its first characters in the
  // answer and the audit line, where the log's redaction of whole secrets no longer finds it.
  it('repeats a refused name that holds a secret of the gateway\'s nowhere, cut or whole', async () => {
    await get('/healthz', '127.0.0.1')
    for (const [i, host] of [`${'a'.repeat(230)}${ADMIN_TOKEN}`, ADMIN_TOKEN, `${ADMIN_TOKEN}:8081`].entries()) {
      const from = `127.0.0.${30 + i}`
      const res = await rawRequest(port, `GET /metrics HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, 5000, from)
      expect(res.status, host).toBe(421)
      expect(res.text, host).not.toContain(ADMIN_TOKEN.slice(0, 12))
      await waitFor(`the audit line from ${from}`, () => sg.gw.logs.records().some((l) => l.action === 'admin-host' && l.source === from))
      expect(sg.gw.logs.records().find((l) => l.action === 'admin-host' && l.source === from)?.host, host).toBe('[REDACTED]')
    }
    expect(sg.gw.logs.text()).not.toContain(ADMIN_TOKEN.slice(0, 12))
  })

  it('counts the refusals in one audit line per source and interval, not one per call', async () => {
    const fromHere = () => sg.gw.logs.records().filter((l) => l.action === 'admin-host' && l.source === '127.0.0.1')
    const before = fromHere().length
    for (let i = 0; i < 5; i++) await get('/metrics', 'rebound.example')
    const lines = fromHere()
    expect(lines.length - before).toBeLessThanOrEqual(1)
    expect(lines.at(-1)).toMatchObject({ kind: 'audit', action: 'admin-host', outcome: 'refused', source: '127.0.0.1' })
  })

  itLoggedNoSecret(sg)
})

describe('the audit line of a target in absolute form refused', () => {
  const sg = useAttackGateway()

  it('names the target\'s path and the name refused, never the userinfo', async () => {
    await sg.gw.admin.listen({ host: '127.0.0.1', port: 0 })
    const { port } = sg.gw.admin.server.address() as AddressInfo
    const res = await rawRequest(port, 'GET http://user:userinfo-secret@audited-name.example:8081/metrics?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
    expect(res.status).toBe(421)
    const refused = () => sg.gw.logs.records().find((l) => l.action === 'admin-host')
    await waitFor('the refusal\'s audit line', () => refused() !== undefined)
    expect(refused()).toMatchObject({ kind: 'audit', outcome: 'refused', method: 'GET', path: '/metrics', host: 'audited-name.example' })
    expect(sg.gw.logs.text()).not.toContain('userinfo-secret')
  })
})
