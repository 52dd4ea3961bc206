import { describe, expect, it } from 'vitest'
import { UPLOADER_KEY, withUploader } from '../helpers/build-gateway.js'
import { KEYS, rawHttp, rawRequest, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { call, direct, itLoggedNoSecret, newCampaign, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// Writes disguised as reads. The read/write rule and the
// token-path rule must read the same path the router and the platform read, and no
// method override may reach a PHP platform, which honours it on POST.

const sg = useAttackGateway({ env: { PLATFORM_TOKEN_URL: '/api/v1/auth/token' }, yaml: withUploader(SANDBOX_TEAMS_YAML) })

const NEW_CAMPAIGN = newCampaign(101)

async function campaignsOf(userId: number): Promise<number[]> {
  const listed = await direct(sg, 'POST', '/api/v1/campaign/get?per_page=500', {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ userId }),
  })
  sg.sandbox.clearRequests()
  return (listed.json.data as { id: number }[]).map((c) => c.id)
}

describe('a fragment in the request target', () => {
  it('a read-only team cannot create a campaign with `…/create#/get`: 400, nothing reaches the platform', async () => {
    const before = await campaignsOf(101)
    const res = await rawRequest(sg.port, rawHttp('POST', '/api/v1/campaign/banner/create#/get', {
      key: KEYS.growth,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(NEW_CAMPAIGN),
    }))
    expect(res.status).toBe(400)
    expect(JSON.parse(res.body)).toMatchObject({ code: 'GW_BAD_REQUEST' })
    expect(sg.callerRequests()).toEqual([])
    expect(await campaignsOf(101)).toEqual(before)
  })

  it('`/api/v1/auth/token#x` (the token URL under /api/v1/) is 400 and its plain spellings 404: never the token endpoint', async () => {
    for (const target of ['/api/v1/auth/token#x', '/api/v1/auth/token', '/api/v1/auth/token/', '/api/v1/AUTH/token', '/api/v1/auth/t%6Fken']) {
      const res = await rawRequest(sg.port, rawHttp('POST', target, { headers: { 'content-type': 'application/json' }, body: '{"grant_type":"password"}' }))
      expect(res.status, target).toBe(target.includes('#') ? 400 : 404)
    }
    expect(sg.callerRequests()).toEqual([])
  })

  it('`…/get#?advertiserId=101` is 400: the query behind `#` is neither checked nor dropped', async () => {
    const res = await rawRequest(sg.port, rawHttp('GET', `/api/v1/report/campaigns/get#?advertiserId=101&${REPORT_DATES}`, { key: KEYS.growth }))
    expect(res.status).toBe(400)
    expect(sg.callerRequests()).toEqual([])
  })
})

describe('method override', () => {
  it('is honoured by the platform on POST (the sandbox models it)', async () => {
    const [victim] = await campaignsOf(103)
    const res = await direct(sg, 'POST', `/api/v1/campaign/banner/delete/${victim}`, { headers: { 'x-http-method-override': 'DELETE' } })
    expect(res.status).toBe(200)
    expect(await campaignsOf(103)).not.toContain(victim)
    const query = await direct(sg, 'POST', `/api/v1/report/campaigns/get?.method=GET&advertiserId=101&${REPORT_DATES}`)
    expect(query.status).toBe(200)
  })

  it('override headers never reach the platform: a read stays the read it was checked as', async () => {
    for (const header of ['x-http-method-override', 'x-http-method', 'x-method-override']) {
      const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId: 101 }, headers: { [header]: 'DELETE' } })
      expect(res.status).toBe(200)
    }
    const received = sg.callerRequests()
    expect(received.map((r) => r.method)).toEqual(['POST', 'POST', 'POST'])
    for (const r of received) {
      expect(r.headers['x-http-method-override']).toBeUndefined()
      expect(r.headers['x-http-method']).toBeUndefined()
      expect(r.headers['x-method-override']).toBeUndefined()
    }
  })

  it('a scoped writer cannot turn a POST into a DELETE: the platform sees a POST (405) and the campaign stays', async () => {
    const res = await call(sg, 'POST', '/api/v1/campaign/banner/delete/101001', {
      key: KEYS.writer,
      json: { userId: 101 },
      headers: { 'x-http-method-override': 'DELETE' },
    })
    expect(res.status).toBe(405)
    expect(sg.callerRequests().map((r) => [r.method, r.headers['x-http-method-override']])).toEqual([['POST', undefined]])
    expect(await campaignsOf(101)).toContain(101001)
  })

  it('_method is refused in the query, a JSON body and a form body, however PHP would spell it', async () => {
    const attempts: [string, { json?: unknown; body?: string; headers?: Record<string, string> }][] = [
      [`/api/v1/report/campaigns/get?_method=GET&advertiserId=101&${REPORT_DATES}`, { json: { campaignIds: [101001], ...dates() } }],
      // PHP turns dots in a name into `_`: `.method` is `_method` to the platform.
      [`/api/v1/report/campaigns/get?.method=GET&${REPORT_DATES}`, { json: { campaignIds: [101001], ...dates() } }],
      [`/api/v1/report/campaigns/get?%2Emethod=GET&${REPORT_DATES}`, { json: { campaignIds: [101001], ...dates() } }],
      [`/api/v1/report/campaigns/get?.method[x]=GET&${REPORT_DATES}`, { json: { campaignIds: [101001], ...dates() } }],
      ['/api/v1/report/campaigns/get', { json: { _method: 'GET', campaignIds: [101001], ...dates() } }],
      ['/api/v1/campaign/get', { body: 'userId=101&_method=DELETE', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
      ['/api/v1/campaign/get', { body: 'userId=101&.method=DELETE', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
    ]
    for (const [target, opts] of attempts) {
      const res = await call(sg, 'POST', target, { key: KEYS.growth, ...opts })
      expect(res.status, target).toBe(400)
      expect(res.json.code).toBe('GW_BAD_REQUEST')
    }
    expect(sg.callerRequests()).toEqual([])
  })

  it('in a body of any type Laravel reads as JSON (`+json`, `/json` in a parameter), a writer of every account\'s included: 400, and the platform sees no override', async () => {
    const body = JSON.stringify({ userId: 101, _method: 'DELETE' })
    for (const type of ['application/vnd.api+json', 'application/problem+json; charset=utf-8', 'text/plain; x=/json', 'application/x-www-form-urlencoded; x=/json']) {
      const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: UPLOADER_KEY, body, headers: { 'content-type': type } })
      expect(res.status, type).toBe(400)
      expect(res.json, type).toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringContaining('_method') })
    }
    expect(sg.callerRequests()).toEqual([])
    // PHP reads a multipart form's parts as fields: one named `_method`, however spelt, is refused.
    const part = (name: string) => `--b\r\ncontent-disposition: form-data; name=${name}\r\n\r\nDELETE\r\n--b\r\ncontent-disposition: form-data; name="userId"\r\n\r\n101\r\n--b--\r\n`
    // PHP drops a name's leading spaces before it reads it (php_register_variable_ex): ` _method` is `_method`.
    for (const name of ['"_method"', '_method', '".method"', '"_method[x]"', '" _method"', '"   _method[]"', '" .method"', ' " _method"']) {
      const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: UPLOADER_KEY, body: part(name), headers: { 'content-type': 'multipart/form-data; boundary=b' } })
      expect(res.status, name).toBe(400)
      expect(res.json, name).toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringContaining('_method') })
    }
    expect(sg.callerRequests()).toEqual([])
    // Sent to the sandbox as the platform would get it, a part so named overrides the method (one named as a list, `_method[x]`, is an array Symfony passes by): the list's route answers DELETE 405.
    for (const name of ['"_method"', '_method', '".method"', '" _method"', '" .method"', ' " _method"']) {
      const straight = await direct(sg, 'POST', '/api/v1/campaign/get', { body: part(name), headers: { 'content-type': 'multipart/form-data; boundary=b' } })
      expect(straight.json.message, name).toBe('The DELETE method is not supported for route campaign/get. Supported methods: POST.')
    }
    sg.sandbox.clearRequests()
    // PHP takes the type before the first `;`, `,` or space, in any case, for a multipart form
    // or a form: a type so spelt is no media type to the gateway, and refused.
    const types: [string, string][] = [
      ['multipart/form-data,x; boundary=b', part('"_method"')],
      ['Multipart/Form-Data boundary=b', part('"_method"')],
      ['application/x-www-form-urlencoded,x', 'userId=101&_method=DELETE'],
      ['application/x-www-form-urlencoded x', 'userId=101&_method=DELETE'],
    ]
    for (const [type, body] of types) {
      const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: UPLOADER_KEY, body, headers: { 'content-type': type } })
      expect(res.status, type).toBe(400)
      expect(res.json.code, type).toBe('GW_BAD_REQUEST')
    }
    // As PHP reads a part's content-disposition (rfc1867.c): quotes in either kind, a `;`
    // quoted in a parameter before the name, a line without `:` or starting with a space
    // continuing the header, an unclosed quote read to the end, `name` in any case.
    const disposition = (value: string) => `--b\r\ncontent-disposition: ${value}\r\n\r\nDELETE\r\n--b--\r\n`
    const spellings = [
      "form-data; name='_method'",
      'form-data; x="; name=y"; name="_method"',
      "form-data; x='a;b'; name=_method",
      'form-data\r\n; name="_method"',
      'form-data;\r\n\tname=_method',
      'form-data; name="_method',
      'form-data; NAME="_method"',
      'form-data;; name=".method[x]"',
      'form-data; name="a"; name="_method"',
    ]
    const bodies = spellings.map(disposition)
    // PHP reads a multipart head in lines of its 5120-byte buffer at most (rfc1867.c next_line):
    // a longer line is cut there, and what follows is a line of its own (a header when it holds
    // a colon), or continues the header before it when its first 5120 bytes hold none.
    const head = (lines: string) => `--b\r\n${lines}\r\n\r\nDELETE\r\n--b--\r\n`
    const padTo5120 = (before: string, after: string) => `${before}${'a'.repeat(5120 - before.length - after.length)}${after}`
    bodies.push(
      head(`${padTo5120('x-pad: ', '')}content-disposition: form-data; name="_method"`),
      head(`${padTo5120('content-disposition: form-data; x=', '; name="_method')}X:Y"`),
      head(`content-disposition: form-data\r\n; name=_method ${'a'.repeat(5200)}:x`),
    )
    // As rfc1867.c reads a form where a reader of RFC 7578 would not: `==` read as one `=`
    // (php_ap_getword), lines ended by LF alone (next_line), the first content-disposition of
    // a head (php_mime_get_hdr_value), a line to its first NUL (a C string). The sandbox reads
    // each as PHP does: sent straight, each overrides the method.
    const phpOnly = [
      disposition('form-data; name==_method'),
      '--b\ncontent-disposition: form-data; name="_method"\n\nDELETE\n--b--\n',
      head('content-disposition: form-data; name="_method"\r\ncontent-disposition: form-data; name="note"'),
      head('content-disposition: form-data; name="_method"\0; name="note"'),
    ]
    for (const body of phpOnly) {
      const straight = await direct(sg, 'POST', '/api/v1/campaign/get', { body, headers: { 'content-type': 'multipart/form-data; boundary=b' } })
      expect(straight.json.message, JSON.stringify(body.slice(0, 80))).toBe('The DELETE method is not supported for route campaign/get. Supported methods: POST.')
    }
    sg.sandbox.clearRequests()
    bodies.push(...phpOnly)
    for (const body of bodies) {
      const value = body.slice(0, 80)
      const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: UPLOADER_KEY, body, headers: { 'content-type': 'multipart/form-data; boundary=b' } })
      expect(res.status, value).toBe(400)
      expect(res.json, value).toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringContaining('_method') })
    }
    expect(sg.callerRequests()).toEqual([])
    await call(sg, 'POST', '/api/v1/campaign/get', { key: UPLOADER_KEY, body: part('"note"'), headers: { 'content-type': 'multipart/form-data; boundary=b' } })
    expect(sg.callerRequests().map((r) => r.body)).toEqual([part('"note"')])
    sg.sandbox.clearRequests()
    // Without the override, such a body is read as the platform reads it: JSON.
    const read = await call(sg, 'POST', '/api/v1/campaign/get', { key: UPLOADER_KEY, body: JSON.stringify({ userId: 101 }), headers: { 'content-type': 'application/vnd.api+json' } })
    expect(read.status).toBe(200)
  })
})

describe('what keeps working', () => {
  it('a read-only team reads; a scoped writer creates and deletes its own campaign', async () => {
    expect((await call(sg, 'POST', '/api/v1/campaign/get?per_page=5', { key: KEYS.growth, json: { userId: 101 } })).status).toBe(200)
    const created = await call(sg, 'POST', '/api/v1/campaign/banner/create', { key: KEYS.writer, json: NEW_CAMPAIGN })
    expect(created.status).toBe(201)
    const id = (created.json.data as { id: number }).id
    expect((await call(sg, 'DELETE', `/api/v1/campaign/banner/delete/${id}?userId=101`, { key: KEYS.writer })).status).toBe(200)
    expect(sg.callerRequests().map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /api/v1/campaign/get',
      'POST /api/v1/campaign/banner/create',
      `DELETE /api/v1/campaign/banner/delete/${id}`,
    ])
  })
})

function dates(): { dateFrom: string; dateTo: string } {
  return { dateFrom: '2026-01-01', dateTo: '2026-01-07' }
}

itLoggedNoSecret(sg)
