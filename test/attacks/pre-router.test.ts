import { connect, type AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { KEYS, rawHttp, rawRequest, type RawResponse } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { ADMIN_TOKEN, itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// What the router never sees. A request Node's parser refuses (a broken header line, a
// head past its size, a method it does not know), one the router refuses before a route
// (a path that is no percent-encoding), one Node answers itself (no Host, an expectation
// it does not know), a CONNECT, and a body announced past the limit with `expect:
// 100-continue`: each answer is the contract's error (JSON, GW_* code, x-request-id) and
// leaves its access line, as every answer of the proxy listener does.

const sg = useAttackGateway()
const H = 'host: 127.0.0.1\r\n'

/** The access lines the gateway logged with `reqId`. */
function accessLines(reqId: string): Record<string, unknown>[] {
  return sg.gw.logs.records().filter((r) => r.msg === 'request' && r.reqId === reqId)
}

/** The admin listener's port, listening from the first test that asks. */
async function adminPort(): Promise<number> {
  if (!sg.gw.admin.server.listening) await sg.gw.admin.listen({ host: '127.0.0.1', port: 0 })
  return (sg.gw.admin.server.address() as AddressInfo).port
}

/**
 * The answer is the contract's error with `code`, has a request id, and that id has one
 * access line with `status`. It carries what every refusal of the gateway's own carries
 * (README, "Calling it"): `cache-control: no-store`, so that no cache before the gateway
 * keeps it for another caller, and the two headers every proxy answer carries.
 */
async function expectContractError(res: RawResponse, status: number, code: string): Promise<Record<string, unknown>> {
  expect(res.status, res.text).toBe(status)
  expect(res.headers['content-type']).toMatch(/^application\/json/)
  expect([res.headers['cache-control'], res.headers['x-content-type-options'], res.headers['content-security-policy']], res.text.slice(0, 400)).toEqual(['no-store', 'nosniff', "default-src 'none'; frame-ancestors 'none'; sandbox"])
  const body = JSON.parse(res.body) as Record<string, unknown>
  expect(body).toMatchObject({ statusCode: status, code, error: expect.any(String), message: expect.any(String) })
  const reqId = res.headers['x-request-id'] as string
  expect(reqId).toMatch(/^[\w.:-]+$/)
  await waitFor(`the access line of ${reqId}`, () => accessLines(reqId).length > 0)
  const lines = accessLines(reqId)
  expect(lines).toHaveLength(1)
  expect(lines[0]).toMatchObject({ status, client: '127.0.0.1' })
  return body
}

describe('requests refused before the router', () => {
  it.each([
    ['a broken header line', `GET /api/v1/campaign/get HTTP/1.1\r\n${H}x-api-key: ${KEYS.all}\r\nbroken header line\r\n\r\n`, /malformed/],
    ['two content-lengths', `POST /api/v1/campaign/get HTTP/1.1\r\n${H}x-api-key: ${KEYS.all}\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab`, /malformed/],
    ['transfer-encoding beside content-length', `POST /api/v1/campaign/get HTTP/1.1\r\n${H}x-api-key: ${KEYS.all}\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`, /malformed/],
    ['an obs-fold header', `GET /api/v1/campaign/get HTTP/1.1\r\n${H}x-api-key: ${KEYS.all}\r\nx-folded: a\r\n b\r\n\r\n`, /malformed/],
    ['an HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', /malformed/],
  ])('%s: 400 GW_BAD_REQUEST with a request id and an access line, saying what was wrong', async (_what, bytes, message) => {
    const res = await rawRequest(sg.port, bytes)
    const body = await expectContractError(res, 400, 'GW_BAD_REQUEST')
    expect(body.message).toMatch(message)
    expect(res.headers.connection).toBe('close')
  })

  it("from a caller that ends its side with the request: the access line names the caller's address", async () => {
    for (let i = 0; i < 3; i++) {
      const answer = await sentOnce(`GET /api/v1/campaign/get HTTP/1.1\r\n${H}connection: close\r\nx-api-key: ${KEYS.all}\r\nx-bad: a\x1bb\r\n\r\n`, 3000, true)
      expect(answer).toMatch(/^HTTP\/1\.1 400 /)
      const reqId = /\r\nx-request-id: ([^\r]+)\r\n/.exec(answer)?.[1] as string
      await waitFor(`the access line of ${reqId}`, () => accessLines(reqId).length > 0)
      expect(accessLines(reqId)).toEqual([expect.objectContaining({ status: 400, code: 'GW_BAD_REQUEST', client: '127.0.0.1' })])
    }
  })

  // A long request target (a report read naming many campaigns in its query) is the same 431, Node's parser
  // telling it from long headers not: the message names both ways out.
  it.each([
    ['one header past the size Node reads', '/api/v1/campaign/get', `x-pad: ${'a'.repeat(20_000)}\r\n`],
    ['many headers past it together', '/api/v1/campaign/get', Array.from({ length: 400 }, (_, i) => `x-pad-${i}: ${'b'.repeat(40)}\r\n`).join('')],
    ['a request target past it', `/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07${'&campaignIds[]=101001'.repeat(900)}`, ''],
  ])('%s: 431 GW_HEADERS_TOO_LARGE (RFC 6585), with a request id and an access line, the connection closed', async (_what, target, pad) => {
    const res = await rawRequest(sg.port, `GET ${target} HTTP/1.1\r\n${H}x-api-key: ${KEYS.all}\r\n${pad}\r\n`)
    const body = await expectContractError(res, 431, 'GW_HEADERS_TOO_LARGE')
    expect(res.text).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/)
    expect(body.message).toBe("the request line and header fields are larger than 16384 bytes together; send a shorter request target (a report's campaignIds in the POST form's JSON body) or fewer, shorter headers")
    expect(res.headers.connection).toBe('close')
    expect(res.text).not.toContain(KEYS.all)
    expect(sg.callerRequests()).toEqual([])
  })

  it('a request target past the size Node reads: 431 too (Node tells no long target from long headers)', async () => {
    const res = await rawRequest(sg.port, `GET /api/v1/report/campaigns/get?pad=${'a'.repeat(20_000)} HTTP/1.1\r\n${H}x-api-key: ${KEYS.all}\r\n\r\n`)
    await expectContractError(res, 431, 'GW_HEADERS_TOO_LARGE')
    expect(res.headers.connection).toBe('close')
  })

  it('on the admin listener too: 431 GW_HEADERS_TOO_LARGE, the connection closed', async () => {
    const port = await adminPort()
    const res = await rawRequest(port, `GET /admin/status HTTP/1.1\r\n${H}authorization: Bearer ${KEYS.all}\r\nx-pad: ${'a'.repeat(20_000)}\r\n\r\n`)
    expect(res.status, res.text.slice(0, 200)).toBe(431)
    expect(JSON.parse(res.body)).toMatchObject({ statusCode: 431, code: 'GW_HEADERS_TOO_LARGE' })
    expect(res.headers['x-request-id']).toMatch(/^[\w.:-]+$/)
    expect(res.headers.connection).toBe('close')
  })

  it('a method Node does not know: 405 GW_METHOD_NOT_ALLOWED with allow, as any method not forwarded, and an access line', async () => {
    const res = await rawRequest(sg.port, `FOO /api/v1/campaign/get HTTP/1.1\r\n${H}x-api-key: ${KEYS.all}\r\n\r\n`)
    await expectContractError(res, 405, 'GW_METHOD_NOT_ALLOWED')
    expect(res.headers.allow).toBe('GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS')
  })

  it('a path that is no percent-encoding: 400 GW_BAD_REQUEST and an access line with its method and path', async () => {
    const res = await rawRequest(sg.port, rawHttp('GET', '/api/v1/campaign/%zz?key=secret'))
    await expectContractError(res, 400, 'GW_BAD_REQUEST')
    expect(accessLines(res.headers['x-request-id'] as string)[0]).toMatchObject({ method: 'GET', path: '/api/v1/campaign/%zz' })
  })

  it('HTTP/1.1 without a Host: 400 GW_BAD_REQUEST (not Node\'s bare 400) and an access line', async () => {
    const res = await rawRequest(sg.port, `GET /api/v1/campaign/get HTTP/1.1\r\nx-api-key: ${KEYS.all}\r\nconnection: close\r\n\r\n`)
    const body = await expectContractError(res, 400, 'GW_BAD_REQUEST')
    expect(body.message).toMatch(/host/i)
    expect(sg.callerRequests()).toEqual([])
  })

  it('two Host lines, or a Host that is no host[:port], is 400 GW_BAD_REQUEST (RFC 9112, 3.2); an IPv6 literal is a host', async () => {
    for (const hosts of ['host: a.example\r\nhost: b.example\r\n', 'host: [::1\r\n', 'host: [::1]x\r\n', 'host: a b\r\n', 'host: a.example:80:80\r\n', 'host: user@a.example\r\n']) {
      const res = await rawRequest(sg.port, `GET /api/v1/campaign/get HTTP/1.1\r\n${hosts}x-api-key: ${KEYS.all}\r\nconnection: close\r\n\r\n`)
      const body = await expectContractError(res, 400, 'GW_BAD_REQUEST')
      expect(body.message, hosts).toMatch(/^host: /)
    }
    // A report read a hit would answer before the router is refused alike.
    const report = `/api/v1/report/campaigns/get?advertiserId=101&${REPORT_DATES}`
    expect((await rawRequest(sg.port, rawHttp('GET', report))).status).toBe(200)
    const twice = await rawRequest(sg.port, `GET ${report} HTTP/1.1\r\nhost: a.example\r\nhost: b.example\r\nx-api-key: ${KEYS.all}\r\nconnection: close\r\n\r\n`)
    await expectContractError(twice, 400, 'GW_BAD_REQUEST')
    expect(sg.callerRequests().filter((r) => r.path.startsWith('/api/v1/campaign/'))).toEqual([])
    for (const host of ['[::1]:3000', '[::1]', '[2001:db8::1]:8080', '127.0.0.1:8080', 'gateway.internal', '']) {
      const res = await rawRequest(sg.port, `GET ${report} HTTP/1.1\r\nhost: ${host}\r\nx-api-key: ${KEYS.all}\r\nconnection: close\r\n\r\n`)
      expect(res.status, host).toBe(200)
    }
  })

  it('two authorization lines are 400 GW_BAD_REQUEST, not the first taken (RFC 9110, 5.3: no list), on a hit and on the admin listener, the keys in no answer', async () => {
    // The attack: a proxy before the gateway that appends its caller's Authorization reads the last line, Node the first.
    const report = `/api/v1/report/campaigns/get?advertiserId=102&${REPORT_DATES}`
    const lines = [`authorization: Bearer ${KEYS.growth}\r\nauthorization: Bearer ${KEYS.all}\r\n`, `Authorization: Bearer ${KEYS.all}\r\nAUTHORIZATION: Bearer ${KEYS.all}\r\n`]
    expect((await rawRequest(sg.port, rawHttp('GET', report))).status).toBe(200)
    for (const [target, auth] of [report, '/api/v1/campaign/get?userId=102'].flatMap((t) => lines.map((l) => [t, l] as const))) {
      const res = await rawRequest(sg.port, `GET ${target} HTTP/1.1\r\n${H}${auth}connection: close\r\n\r\n`)
      const body = await expectContractError(res, 400, 'GW_BAD_REQUEST')
      expect(body.message).toBe('authorization: given more than once')
      expect(res.text).not.toContain(KEYS.all)
    }
    expect(sg.callerRequests().filter((r) => r.path.startsWith('/api/v1/campaign/'))).toEqual([])
    const port = await adminPort()
    const admin = await rawRequest(port, `GET /admin/whoami HTTP/1.1\r\n${H}authorization: Bearer ${KEYS.all}\r\nauthorization: Bearer ${KEYS.growth}\r\nconnection: close\r\n\r\n`)
    expect(admin.status, admin.text.slice(0, 300)).toBe(400)
    expect(JSON.parse(admin.body)).toMatchObject({ code: 'GW_BAD_REQUEST', message: 'authorization: given more than once' })
    // One line is read as before.
    expect((await rawRequest(sg.port, rawHttp('GET', report))).status).toBe(200)
  })

  it('two x-api-key lines are 400 GW_BAD_REQUEST naming the header, not 401, on a hit and a proxied call, the keys in no answer and no log line', async () => {
    // Node joins the lines into one value, no key: it was answered 401 as an unknown key.
    const report = `/api/v1/report/campaigns/get?advertiserId=102&${REPORT_DATES}`
    const lines = [`x-api-key: ${KEYS.growth}\r\nx-api-key: ${KEYS.all}\r\n`, `x-api-key: ${KEYS.all}\r\nX-API-KEY: ${KEYS.all}\r\n`]
    expect((await rawRequest(sg.port, rawHttp('GET', report))).status).toBe(200)
    sg.sandbox.clearRequests()
    for (const [target, keys] of [report, '/api/v1/campaign/get?userId=102'].flatMap((t) => lines.map((l) => [t, l] as const))) {
      const res = await rawRequest(sg.port, `GET ${target} HTTP/1.1\r\n${H}${keys}connection: close\r\n\r\n`)
      const body = await expectContractError(res, 400, 'GW_BAD_REQUEST')
      expect(body.message).toBe('x-api-key: given more than once')
      expect(res.text).not.toContain(KEYS.all)
      expect(res.text).not.toContain(KEYS.growth)
    }
    expect(sg.callerRequests()).toEqual([])
    expect(sg.gw.logs.text()).not.toContain(KEYS.growth)
    // The admin listener reads the same head first (headFault), as it does two authorization lines.
    const admin = await rawRequest(await adminPort(), `GET /admin/whoami HTTP/1.1\r\n${H}${lines[0]}connection: close\r\n\r\n`)
    expect(JSON.parse(admin.body)).toMatchObject({ statusCode: 400, code: 'GW_BAD_REQUEST', message: 'x-api-key: given more than once' })
    // One line is read as before.
    expect((await rawRequest(sg.port, rawHttp('GET', report))).status).toBe(200)
  })

  it('two team keys, one in x-api-key and another in authorization, are 400 GW_BAD_REQUEST, not the x-api-key taken, on a hit and a proxied call, the keys in no answer', async () => {
    // The attack: a proxy before the gateway that counts or allows by the Bearer key reads one team, the gateway another.
    const report = `/api/v1/report/campaigns/get?advertiserId=102&${REPORT_DATES}`
    expect((await rawRequest(sg.port, rawHttp('GET', report))).status).toBe(200)
    sg.sandbox.clearRequests()
    for (const [target, headers] of [
      [report, `x-api-key: ${KEYS.all}\r\nauthorization: Bearer ${KEYS.growth}\r\n`],
      ['/api/v1/campaign/get?userId=102', `authorization: bearer ${KEYS.all}\r\nx-api-key: ${KEYS.growth}\r\n`],
    ] as const) {
      const res = await rawRequest(sg.port, `GET ${target} HTTP/1.1\r\n${H}${headers}connection: close\r\n\r\n`)
      const body = await expectContractError(res, 400, 'GW_BAD_REQUEST')
      expect(body.message).toBe('x-api-key, authorization: two team keys given; send one (the keys are not shown)')
      expect(res.text).not.toContain(KEYS.all)
      expect(res.text).not.toContain(KEYS.growth)
    }
    expect(sg.callerRequests()).toEqual([])
    // One key in both, or a Bearer that is no team key (a sign-on proxy's own token beside the key), is read as before.
    for (const auth of [`Bearer ${KEYS.growth}`, 'Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln']) {
      const res = await rawRequest(sg.port, `GET ${report} HTTP/1.1\r\n${H}x-api-key: ${KEYS.growth}\r\nauthorization: ${auth}\r\nconnection: close\r\n\r\n`)
      expect(res.status, auth).toBe(200)
    }
  })

  it('an expectation other than 100-continue is read as none (not Node\'s bare 417): the request is answered as without it', async () => {
    const res = await rawRequest(sg.port, rawHttp('GET', '/nope', { headers: { expect: 'something-else' } }))
    await expectContractError(res, 404, 'GW_NOT_FOUND')
  })

  it('CONNECT: 405 with its access line', async () => {
    const res = await rawRequest(sg.port, `CONNECT 127.0.0.1:1 HTTP/1.1\r\n${H}x-api-key: ${KEYS.all}\r\n\r\n`)
    await expectContractError(res, 405, 'GW_METHOD_NOT_ALLOWED')
  })

  // The contract's words on errors hold for both listeners: the admin listener refuses
  // these as the proxy listener does, with the headers of every /admin/* answer.
  it.each([
    ['CONNECT, whatever its target', `CONNECT 127.0.0.1:1 HTTP/1.1\r\n${H}\r\n`, ''],
    ['a method Node does not know, on a path of GET', `FOO /admin/status HTTP/1.1\r\n${H}authorization: Bearer ${ADMIN_TOKEN}\r\n\r\n`, 'GET, HEAD'],
    ['a method Node does not know, on a path of PUT', `FOO /admin/log-level?x=1 HTTP/1.1\r\n${H}\r\n`, 'PUT'],
    ['a method Node does not know, on a path of GET and DELETE', `FOO /admin/cache/entry HTTP/1.1\r\n${H}\r\n`, 'GET, HEAD, DELETE'],
    ['a method Node does not know, on a path no route serves', `FOO /nope HTTP/1.1\r\n${H}\r\n`, ''],
    ['a method Node does not know, its target in absolute form', `FOO http://127.0.0.1/admin/status?x=1 HTTP/1.1\r\n${H}\r\n`, 'GET, HEAD'],
  ])('on the admin listener, %s: 405 GW_METHOD_NOT_ALLOWED with the allow of its path, the connection closed', async (_what, bytes, allow) => {
    const res = await rawRequest(await adminPort(), bytes)
    expect(res.status, res.text.slice(0, 300)).toBe(405)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    const body = JSON.parse(res.body) as { message: string }
    expect(body).toMatchObject({ statusCode: 405, code: 'GW_METHOD_NOT_ALLOWED', error: 'Method Not Allowed', message: expect.any(String) })
    // The admin listener forwards nothing and serves no /api/v1/: its refusal says what the path takes there.
    expect(body.message).not.toMatch(/platform|\/api\/v1/)
    expect(body.message).toContain(allow === '' ? 'no call has this path' : `it takes ${allow}`)
    expect([res.headers['cache-control'], res.headers['x-frame-options'], res.headers['x-content-type-options']]).toEqual(['no-store', 'DENY', 'nosniff'])
    expect(res.headers.allow).toBe(allow)
    expect(res.headers['x-request-id']).toMatch(/^[\w.:-]+$/)
    expect(res.headers.connection).toBe('close')
    expect(res.text).not.toContain(ADMIN_TOKEN)
  })

  // One order of checks for every method, on both listeners, as the router's hooks take
  // them: the head (headFault: 400), then on the admin listener the names it gives (421),
  // then the method. A method Node's parser does not know and a CONNECT, answered before
  // the router, are refused for a faulty head as GET is, not 405 (nor 421) past it.
  const faultyHeads: [string, string][] = [
    ['two Host lines', 'host: 127.0.0.1\r\nhost: 127.0.0.2\r\n'],
    ['no Host in HTTP/1.1', ''],
    ['a Host that is no host', 'host: a b\r\n'],
    ['two authorization lines', `${H}authorization: Bearer ${ADMIN_TOKEN}\r\nauthorization: Bearer ${ADMIN_TOKEN}x\r\n`],
    ['two x-api-key lines', `${H}x-api-key: ${KEYS.all}\r\nx-api-key: ${KEYS.growth}\r\n`],
    ['a transfer coding besides chunked', `${H}transfer-encoding: gzip, chunked\r\n`],
    ['two authorization lines and a Host the admin listener does not answer to', `host: faulty-rebound.example\r\nauthorization: Bearer ${ADMIN_TOKEN}\r\nauthorization: Bearer ${ADMIN_TOKEN}x\r\n`],
  ]
  it.each(faultyHeads)('a head with %s: the same 400 to every method, a method Node does not know and CONNECT included, on both listeners', async (_what, lines) => {
    const listeners: [string, number, string][] = [
      ['proxy', sg.port, '/api/v1/campaign/get'],
      ['admin', await adminPort(), '/admin/status'],
    ]
    for (const [listener, port, path] of listeners) {
      const head = (method: string, target: string) => `${method} ${target} HTTP/1.1\r\n${lines}connection: close\r\n\r\n0\r\n\r\n`
      const get = await rawRequest(port, head('GET', path))
      expect(get.status, `${listener} GET: ${get.text.slice(0, 300)}`).toBe(400)
      const { message } = JSON.parse(get.body) as { message: string }
      for (const [method, target] of [['FOO', path], ['CONNECT', '127.0.0.1:1']]) {
        const res = await rawRequest(port, head(method as string, target as string))
        expect(res.status, `${listener} ${method}: ${res.text.slice(0, 300)}`).toBe(400)
        expect(JSON.parse(res.body), `${listener} ${method}`).toMatchObject({ statusCode: 400, code: 'GW_BAD_REQUEST', message })
        expect(res.headers.allow).toBeUndefined()
        expect(res.text).not.toContain(ADMIN_TOKEN)
        expect(res.text).not.toContain(KEYS.all)
      }
    }
  })

  // HTTP/1.0 need not name its host (RFC 9112, 3.2); its other lines are held to the rules
  // of every head: a proxy before the gateway may read the last authorization where Node reads the first.
  it('HTTP/1.0 without a Host, with two authorization lines or two x-api-key lines: 400 on both listeners, as with a Host', async () => {
    const listeners: [number, string][] = [
      [sg.port, '/api/v1/campaign/get?userId=102'],
      [await adminPort(), '/admin/status'],
    ]
    for (const [port, path] of listeners) {
      for (const [name, lines] of [
        ['authorization', `authorization: Bearer ${KEYS.all}\r\nauthorization: Bearer ${KEYS.growth}\r\n`],
        ['x-api-key', `x-api-key: ${KEYS.all}\r\nx-api-key: ${KEYS.growth}\r\n`],
      ]) {
        const res = await rawRequest(port, `GET ${path} HTTP/1.0\r\n${lines}\r\n`)
        expect(res.status, `${path} ${name}: ${res.text.slice(0, 300)}`).toBe(400)
        expect(JSON.parse(res.body)).toMatchObject({ code: 'GW_BAD_REQUEST', message: `${name}: given more than once` })
      }
    }
    expect(sg.callerRequests().filter((r) => r.path.startsWith('/api/v1/campaign/'))).toEqual([])
  })

  // Methods Node reads that no admin call takes (WebDAV's, TRACE, QUERY) find no route of
  // the admin calls: their 404 carries what every /admin/* answer carries all the same.
  it.each(['PROPFIND', 'MKCOL', 'LOCK', 'SEARCH', 'TRACE', 'QUERY'])('on the admin listener, %s of /admin/status: 404 GW_NOT_FOUND with the headers of every /admin/* answer', async (method) => {
    const res = await rawRequest(await adminPort(), `${method} /admin/status HTTP/1.1\r\n${H}connection: close\r\nauthorization: Bearer ${ADMIN_TOKEN}\r\n\r\n`)
    expect(res.status, res.text.slice(0, 300)).toBe(404)
    expect(JSON.parse(res.body)).toMatchObject({ statusCode: 404, code: 'GW_NOT_FOUND' })
    expect([res.headers['cache-control'], res.headers['x-frame-options'], res.headers['x-content-type-options']]).toEqual(['no-store', 'DENY', 'nosniff'])
  })
})

describe('a head of many header lines', () => {
  it('past Node\'s 2000 headers, its transfer-encoding is still read: the body checked is the body sent', async () => {
    const junk = Array.from({ length: 2001 }, (_, i) => `a${i % 10}: b\r\n`).join('')
    const body = '{"userId":101}'
    const res = await rawRequest(sg.port, `POST /api/v1/campaign/get HTTP/1.1\r\n${H}connection: close\r\nx-api-key: ${KEYS.growth}\r\ncontent-type: application/json\r\n${junk}transfer-encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`)
    expect(res.status, res.text.slice(0, 300)).toBe(200)
    expect(sg.callerRequests().map((r) => r.body)).toEqual([body])
  })
})

describe('transfer codings', () => {
  // RFC 9112, 6.1: a transfer coding the server does not decode leaves it no content to read.
  // Node decodes chunked alone and hands on the bytes under any other coding as they came.
  it('a transfer-encoding naming a coding besides chunked (gzip, deflate, compress): 400 naming it, nothing sent on', async () => {
    const body = '{"userId":101}'
    for (const codings of ['gzip, chunked', 'deflate, chunked', 'compress, chunked', 'x-gzip,chunked']) {
      const res = await rawRequest(sg.port, `POST /api/v1/campaign/get HTTP/1.1\r\n${H}connection: close\r\nx-api-key: ${KEYS.growth}\r\ncontent-type: application/json\r\ntransfer-encoding: ${codings}\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`)
      const refusal = await expectContractError(res, 400, 'GW_BAD_REQUEST')
      expect(refusal.message).toMatch(/^transfer-encoding: /)
    }
    expect(sg.callerRequests()).toEqual([])
  })

  it('chunked alone, in any case, is read', async () => {
    const body = '{"userId":101}'
    for (const codings of ['chunked', 'Chunked']) {
      const res = await rawRequest(sg.port, `POST /api/v1/campaign/get HTTP/1.1\r\n${H}connection: close\r\nx-api-key: ${KEYS.growth}\r\ncontent-type: application/json\r\ntransfer-encoding: ${codings}\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`)
      expect(res.status, res.text.slice(0, 300)).toBe(200)
    }
  })
})

/** Sends a request head with `expect: 100-continue` and no body; what came back once the socket closed, or after `ms`. */
function expectContinue(head: string, ms = 3000): Promise<string> {
  return sentOnce(head, ms, false)
}

/** Sends `head` (and ends the caller's side with it when `end`); what came back once the socket closed, or after `ms`. */
function sentOnce(head: string, ms: number, end: boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(sg.port, '127.0.0.1')
    let text = ''
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1')
    })
    socket.on('error', reject)
    socket.on('close', () => resolve(text))
    setTimeout(() => {
      socket.destroy()
      resolve(text)
    }, ms).unref()
    if (end) socket.end(head)
    else socket.write(head)
  })
}

describe('expect: 100-continue', () => {
  it('with a content-length past the body limit: 413 GW_PAYLOAD_TOO_LARGE at once, no 100 Continue, the connection closed', async () => {
    const answer = await expectContinue(`POST /api/v1/campaign/get HTTP/1.1\r\n${H}x-api-key: ${KEYS.all}\r\ncontent-type: application/json\r\ncontent-length: 100000000\r\nexpect: 100-continue\r\n\r\n`)
    expect(answer).not.toContain('100 Continue')
    expect(answer).toMatch(/^HTTP\/1\.1 413 /)
    expect(answer.toLowerCase()).toContain('connection: close')
    expect(answer).toContain('"code":"GW_PAYLOAD_TOO_LARGE"')
    expect(answer.toLowerCase()).toMatch(/x-request-id: \S+/)
  })

  it('past a report body\'s own limit (64 KiB): 413 at once, no 100 Continue', async () => {
    const answer = await expectContinue(`POST /api/v1/report/campaigns/get HTTP/1.1\r\n${H}x-api-key: ${KEYS.all}\r\ncontent-type: application/json\r\ncontent-length: 100000\r\nexpect: 100-continue\r\n\r\n`)
    expect(answer).not.toContain('100 Continue')
    expect(answer).toMatch(/^HTTP\/1\.1 413 /)
  })

  it('with an unknown key: 401 without inviting the body', async () => {
    const answer = await expectContinue(`POST /api/v1/campaign/get HTTP/1.1\r\n${H}x-api-key: rgw_unknown_key_00000000000000000000000\r\ncontent-type: application/json\r\ncontent-length: 14\r\nexpect: 100-continue\r\n\r\n`)
    expect(answer).not.toContain('100 Continue')
    expect(answer).toMatch(/^HTTP\/1\.1 401 /)
    expect(answer.toLowerCase()).toContain('connection: close')
  })
})

itLoggedNoSecret(sg)
