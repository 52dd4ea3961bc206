import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { ADMIN_TOKEN, useAttackGateway } from '../attacks/attack-gateway.js'
import { rawRequest } from '../helpers/sandbox-gateway.js'

// A new user's tries of the methods the README and the contract name, as curl sends them.
// README.md ("Operations"): on the admin listener, "`CONNECT` and unknown methods are 405".
// docs/contract.md ("Admin listener"): a Host that is an IP address is always answered; 421
// `GW_ADMIN_HOST` is for a name the listener does not answer to. docs/contract.md ("Errors"):
// 404 `GW_NOT_FOUND` "outside `/api/v1/`"; 405 for a method "under `/api/v1/`" (and CONNECT).

describe('methods a new user tries, as the README and the contract describe them', () => {
  const sg = useAttackGateway()

  it('admin listener: `curl -X CONNECT http://127.0.0.1:<port>/admin/status` (Host an IP address) is 405, not 421 naming the path as a host name', async () => {
    await sg.gw.admin.listen({ host: '127.0.0.1', port: 0 })
    const { port } = sg.gw.admin.server.address() as AddressInfo
    // What curl sends for -X CONNECT with a URL: the target in origin form, Host the URL's address.
    const res = await rawRequest(port, `CONNECT /admin/status HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nauthorization: Bearer ${ADMIN_TOKEN}\r\nConnection: close\r\n\r\n`)
    const body = JSON.parse(res.body) as Record<string, unknown>
    expect(body.code, res.body).not.toBe('GW_ADMIN_HOST')
    expect(res.status, res.body).toBe(405)
    expect(body).toMatchObject({ statusCode: 405, code: 'GW_METHOD_NOT_ALLOWED' })
  })

  it('proxy listener: a method Node does not know outside /api/v1/ is 404 GW_NOT_FOUND, as PROPFIND there is', async () => {
    const propfind = await rawRequest(sg.port, 'PROPFIND /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
    expect(propfind.status).toBe(404)
    const res = await rawRequest(sg.port, 'FOO /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')
    expect(res.status, res.body).toBe(404)
    expect(JSON.parse(res.body)).toMatchObject({ statusCode: 404, code: 'GW_NOT_FOUND' })
  })
})
