import type { AddressInfo } from 'node:net'
import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { rawRequest } from '../helpers/sandbox-gateway.js'

// RFC 9112, 6.3: a request with neither content-length nor transfer-encoding has no body.
// `curl -X PUT -H 'content-type: application/json' …` without -d sends such a request: the
// admin call that takes a body answers at once that it has none, as the proxy listener does.

const ADMIN_TOKEN = 'bodyless-admin-token-0123456789'
const sandbox = useSandbox()
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }), { listen: true })
let adminPort = 0
beforeAll(async () => {
  await gw.admin.listen({ host: '127.0.0.1', port: 0 })
  adminPort = (gw.admin.server.address() as AddressInfo).port
})

describe('a request that declares a JSON body and sends none (no content-length, no transfer-encoding)', () => {
  it.each([
    ['PUT', '/admin/log-level'],
    ['PUT', '/admin/token'],
  ])('admin %s %s: 400 GW_BAD_REQUEST at once (Node 24 never ended its empty body stream: the call hung)', async (method, path) => {
    const res = await rawRequest(adminPort, `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nauthorization: Bearer ${ADMIN_TOKEN}\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n`, 10_000)
    expect(res.status).toBe(400)
    expect(JSON.parse(res.body)).toEqual({ statusCode: 400, code: 'GW_BAD_REQUEST', error: 'Bad Request', message: 'body: not valid JSON' })
  })

  it('proxy POST: answered at once', async () => {
    const res = await rawRequest(Number(gw.port), `POST /api/v1/campaign/get HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${KEYS.all}\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n`, 10_000)
    expect(res.status).toBeGreaterThan(0)
  })
})

describe('a body sent to an admin call that takes none, however it is framed', () => {
  // The listener drops a content-type only where no body comes (no transfer-encoding, no
  // content-length but 0): a chunked body, or one with a length and no content-type, is refused.
  it.each([
    ['chunked, as JSON', 'content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n12\r\n{"advertiserId":1}\r\n0\r\n\r\n'],
    ['chunked, no content-type', 'transfer-encoding: chunked\r\n\r\n12\r\n{"advertiserId":1}\r\n0\r\n\r\n'],
    ['a length, no content-type', 'content-length: 18\r\n\r\n{"advertiserId":1}'],
  ])('%s: 400 GW_BAD_REQUEST, the call not made', async (_, framing) => {
    const res = await rawRequest(adminPort, `DELETE /admin/cache?dryRun=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nauthorization: Bearer ${ADMIN_TOKEN}\r\nconnection: close\r\n${framing}`, 10_000)
    expect([res.status, JSON.parse(res.body)]).toEqual([400, { statusCode: 400, code: 'GW_BAD_REQUEST', error: 'Bad Request', message: 'body: DELETE /admin/cache takes no body; nothing was changed' }])
  })
})
