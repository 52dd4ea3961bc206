import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { KEYS, rawHttp, rawRequest } from '../helpers/sandbox-gateway.js'
import { call, direct, itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// Parsing differences: a gateway that checks its own parse and forwards the caller's
// bytes lets through what a PHP platform reads differently. Each attack is shown working
// on the sandbox (PHP's and Laravel's reading) and refused by the gateway, which
// forwards only its own serialization. The growth team is limited to 101 and 102; 103 is a sibling.

const sg = useAttackGateway()
const PARENT_CAMPAIGN = 100001
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

async function listed(res: { json: Record<string, unknown> }): Promise<number[]> {
  sg.sandbox.clearRequests()
  return ((res.json.data ?? []) as { id: number }[]).map((c) => c.id)
}

function nested(depth: number): string {
  return `{"userId":101,"x":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`
}

// A name PHP nests past max_input_nesting_level (64): it deletes the variable `name` whole.
function tooDeep(name: string): string {
  return `${name}${'[a]'.repeat(65)}`
}

const INVALID_UTF8 = Buffer.concat([Buffer.from('{"userId":101,"name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')])
// Valid JSON to JSON.parse, and to JSON.stringify again; PHP's json_decode fails on it (JSON_ERROR_UTF16).
const LONE_SURROGATE = '{"userId":101,"name":"\\ud800"}'

describe('what PHP reads (the sandbox models it)', () => {
  it('a name cut at NUL, or with leading spaces, is the account field; the last one wins', async () => {
    const nul = await direct(sg, 'GET', `/api/v1/report/campaigns/get?advertiserId=101&advertiserId%00=103&${REPORT_DATES}&byCampaign=1`)
    expect((nul.json.data as { campaignId: number }[]).every((r) => Math.floor(r.campaignId / 1000) === 103)).toBe(true)
    const spaced = await direct(sg, 'POST', '/api/v1/campaign/get', { headers: FORM, body: 'userId=101&%20%20userId=103' })
    expect((await listed(spaced)).every((id) => Math.floor(id / 1000) === 103)).toBe(true)
  })

  it('a form type holding /json, JSON too deep or not UTF-8: the call names nothing and lists the parent\'s campaigns', async () => {
    const asJson = await direct(sg, 'POST', '/api/v1/campaign/get', { headers: { 'content-type': 'application/x-www-form-urlencoded; x=/json' }, body: 'userId=101' })
    expect(await listed(asJson)).toContain(PARENT_CAMPAIGN)
    const deep = await direct(sg, 'POST', '/api/v1/campaign/get', { headers: { 'content-type': 'application/json' }, body: nested(513) })
    expect(await listed(deep)).toContain(PARENT_CAMPAIGN)
    const notUtf8 = await direct(sg, 'POST', '/api/v1/campaign/get', { headers: { 'content-type': 'application/json' }, body: INVALID_UTF8 })
    expect(await listed(notUtf8)).toContain(PARENT_CAMPAIGN)
    const surrogate = await direct(sg, 'POST', '/api/v1/campaign/get', { headers: { 'content-type': 'application/json' }, body: LONE_SURROGATE })
    expect(await listed(surrogate)).toContain(PARENT_CAMPAIGN)
  })

  it('a name with text after its last bracket is the array before it: campaignIds[]x is campaignIds[0]', async () => {
    // A POST report reads campaignIds from the body over the query: a body without them takes the query's.
    const res = await direct(sg, 'POST', '/api/v1/report/campaigns/get?campaignIds[]x=103001', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ userId: 101, dateFrom: '2026-01-01', dateTo: '2026-01-07', byCampaign: true }),
    })
    expect((res.json.data as { campaignId: number }[]).map((r) => r.campaignId)).toEqual([103001])
  })

  it('`__proto__[userId]` and `constructor[prototype][userId]` are arrays of those names: one team\'s call changes no other call\'s account', async () => {
    const inherited = (): unknown => (Object.prototype as Record<string, unknown>).userId
    try {
      for (const name of ['__proto__[userId]', 'constructor[prototype][userId]']) {
        const own = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.writer, body: `userId=101&${name}=101`, headers: FORM })
        expect(own.status).toBe(200)
        expect(inherited()).toBeUndefined()
        // Another team's list naming no account is the parent's, as ever.
        const other = await call(sg, 'POST', '/api/v1/campaign/get', { json: {} })
        expect(await listed(other)).toContain(PARENT_CAMPAIGN)
      }
      const query = await direct(sg, 'GET', `/api/v1/report/campaigns/get?advertiserId=101&__proto__[advertiserId]=103&${REPORT_DATES}`)
      expect(query.status).toBe(200)
      expect(inherited()).toBeUndefined()
    } finally {
      delete (Object.prototype as Record<string, unknown>).userId
      delete (Object.prototype as Record<string, unknown>).advertiserId
    }
  })

  it('a name nested past 64 levels deletes its variable, a value given before it included', async () => {
    const res = await direct(sg, 'POST', '/api/v1/campaign/get', { headers: FORM, body: `userId=101&${tooDeep('userId')}=101` })
    expect(await listed(res)).toContain(PARENT_CAMPAIGN)
    const report = await direct(sg, 'GET', `/api/v1/report/campaigns/get?advertiserId=101&${tooDeep('advertiserId')}=101&${REPORT_DATES}&byCampaign=1`)
    expect((report.json.data as { campaignId: number }[]).map((r) => r.campaignId)).toContain(PARENT_CAMPAIGN)
  })

  it('only the first 1000 parameters are read', async () => {
    const body = `userId=101&${Array.from({ length: 999 }, (_, i) => `p${i}=1`).join('&')}&userId=103`
    const res = await direct(sg, 'POST', '/api/v1/campaign/get', { headers: FORM, body })
    expect((await listed(res)).every((id) => Math.floor(id / 1000) === 101)).toBe(true)
  })
})

describe('the gateway refuses what PHP would read differently: 400, nothing reaches the platform', () => {
  it('names cut at NUL, with spaces, or otherwise not plain, in the query and in forms', async () => {
    const targets = [
      `/api/v1/report/campaigns/get?advertiserId=101&advertiserId%00=103&${REPORT_DATES}`,
      `/api/v1/report/campaigns/get?advertiserId=101&%20advertiserId=103&${REPORT_DATES}`,
      `/api/v1/report/campaigns/get?advertiserId=101&+advertiserId=103&${REPORT_DATES}`,
      `/api/v1/report/campaigns/get?advertiserId=101&advertiserId%0A=103&${REPORT_DATES}`,
    ]
    for (const target of targets) {
      const res = await rawRequest(sg.port, rawHttp('GET', target, { key: KEYS.growth }))
      expect(res.status, target).toBe(400)
    }
    for (const body of ['userId=101&%20userId=103', 'userId=101&userId%00=103', 'userId=101&user%20Id=103']) {
      const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body, headers: FORM })
      expect(res.status, body).toBe(400)
    }
    expect(sg.callerRequests()).toEqual([])
  })

  it('names nested deeper than 16 levels, in the query and in forms', async () => {
    // The growth team's campaign list of 101 whose userId PHP deletes: the parent's list.
    for (const body of [`userId=101&${tooDeep('userId')}=101`, `userId=101&x${'[]'.repeat(17)}=1`]) {
      const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body, headers: FORM })
      expect(res.status, `${body}: the platform listed ${JSON.stringify(await listed(res))}`).toBe(400)
      expect(res.json.message).toContain('nested deeper than 16 levels')
    }
    const queries = [
      `/api/v1/report/campaigns/get?advertiserId=101&${REPORT_DATES}&x${'[a]'.repeat(17)}=1`,
      `/api/v1/campaign/get?userId${'[a]'.repeat(65)}=1`,
    ]
    for (const target of queries) {
      const res = target.includes('/report/') ? await call(sg, 'GET', target, { key: KEYS.growth }) : await call(sg, 'POST', target, { key: KEYS.growth, json: { userId: 101 } })
      expect(res.status, target).toBe(400)
      expect(res.json.message).toContain('nested deeper than 16 levels')
    }
    const all = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.all, body: `userId=101&${tooDeep('userId')}=101`, headers: FORM })
    expect(all.status).toBe(400)
    expect(sg.callerRequests()).toEqual([])
    const sixteen = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body: `userId=101&x${'[a]'.repeat(16)}=1`, headers: FORM })
    expect(sixteen.status).toBe(200)
  })

  it('an account or campaign field named with text after its last bracket is checked as PHP reads it', async () => {
    const report = { userId: 101, dateFrom: '2026-01-01', dateTo: '2026-01-07', byCampaign: true }
    for (const target of ['/api/v1/report/campaigns/get?campaignIds[]x=103001', '/api/v1/report/campaigns/get?campaignIds[0]x=103001', '/api/v1/report/campaigns/get?campaignId[]x=103001']) {
      const res = await call(sg, 'POST', target, { key: KEYS.growth, json: report })
      expect(res.status, target).toBe(403)
      expect(res.json.code).toBe('GW_FORBIDDEN')
    }
    for (const body of ['userId=101&userId[]x=103', 'userId=101&campaignIds[]x=103001', 'userId=101&advertiserId[a]b=103']) {
      const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body, headers: FORM })
      expect(res.status, body).toBe(403)
    }
    const query = await call(sg, 'POST', '/api/v1/campaign/get?userId[]x=103', { key: KEYS.growth, json: { userId: 101 } })
    expect(query.status).toBe(403)
    expect(sg.callerRequests()).toEqual([])
  })

  it('content types other than plain JSON or form, and compressed bodies', async () => {
    const attempts: [Record<string, string>, string | Buffer][] = [
      [{ 'content-type': 'application/x-www-form-urlencoded; x=/json' }, 'userId=101'],
      [{ 'content-type': 'application/x-www-form-urlencoded; charset=utf-8; x=/json' }, 'userId=101'],
      [{ 'content-type': 'application/vnd.api+json' }, '{"userId":101}'],
      [{ 'content-type': 'text/plain' }, '{"userId":101}'],
      [{ 'content-type': 'application/json; charset=latin1' }, '{"userId":101}'],
      [{ 'content-type': 'application/json', 'content-encoding': 'gzip' }, gzipSync('{"userId":101}')],
    ]
    for (const [headers, body] of attempts) {
      const res = await rawRequest(sg.port, rawHttp('POST', '/api/v1/campaign/get', { key: KEYS.growth, headers, body }))
      expect(res.status, JSON.stringify(headers)).toBe(400)
    }
    // A read-only unrestricted team is held to the same body types.
    const all = await rawRequest(sg.port, rawHttp('POST', '/api/v1/campaign/get', { key: KEYS.all, headers: { 'content-type': 'text/plain' }, body: 'x' }))
    expect(all.status).toBe(400)
    expect(sg.callerRequests()).toEqual([])
  })

  it('JSON nested deeper than 32 levels, not UTF-8, an unpaired surrogate escaped, or not JSON at all', async () => {
    for (const body of [nested(33), nested(513), INVALID_UTF8, LONE_SURROGATE, '{"userId":101,}', '{"userId":101}{}']) {
      const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body, headers: { 'content-type': 'application/json' } })
      expect(res.status).toBe(400)
      expect(res.json.code).toBe('GW_BAD_REQUEST')
    }
    const report = await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: KEYS.growth, body: `{"campaignIds":[101001],"dateFrom":"2026-01-01","dateTo":"2026-01-07","x":"\\udc00"}`, headers: { 'content-type': 'application/json' } })
    expect(report.status).toBe(400)
    expect(sg.callerRequests()).toEqual([])
    expect((await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body: nested(32), headers: { 'content-type': 'application/json' } })).status).toBe(200)
  })

  it('percent-encoded bytes that are not UTF-8, in a query or a form, a name or a value: the parameter named by its place, no U+FFFD sent on', async () => {
    // URLSearchParams reads %FF as U+FFFD, which the gateway would send on as %EF%BF%BD
    // where PHP reads the byte 0xFF: what the platform got is in each failure's message.
    const queries: [string, string][] = [
      [`/api/v1/report/campaigns/get?advertiserId=101&${REPORT_DATES}&x=%FF`, 'query: the value of parameter 4 '],
      [`/api/v1/report/campaigns/get?advertiserId=101&${REPORT_DATES}&note=caf%C3%28`, 'query: the value of parameter 4 '],
      ['/api/v1/campaign/get?path=%C0%AF', 'query: the value of parameter 1 '],
      ['/api/v1/campaign/get?s=%ED%A0%80', 'query: the value of parameter 1 '],
      ['/api/v1/campaign/get?a%FFb=1', 'query: the name of parameter 1 '],
    ]
    for (const [target, named] of queries) {
      sg.sandbox.clearRequests()
      const res = target.includes('/report/') ? await call(sg, 'GET', target, { key: KEYS.growth }) : await call(sg, 'POST', target, { key: KEYS.growth, json: { userId: 101 } })
      expect(res.status, `${target}: the platform received ${JSON.stringify(sg.callerRequests().map((r) => r.query))}`).toBe(400)
      expect(res.json.code).toBe('GW_BAD_REQUEST')
      expect(res.json.message).toContain(named)
      expect(res.json.message).toContain('not UTF-8')
    }
    for (const [body, named] of [['userId=101&note=%FF', 'body: the value of parameter 2 '], ['userId=101&%E2%82=1', 'body: the name of parameter 2 ']]) {
      sg.sandbox.clearRequests()
      const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body, headers: FORM })
      expect(res.status, `${body}: the platform received ${JSON.stringify(sg.callerRequests().map((r) => r.body))}`).toBe(400)
      expect(res.json.message).toContain(named)
    }
    expect(sg.callerRequests()).toEqual([])
    // UTF-8 spelled in escapes, a byte-order mark and U+FFFD itself pass as they are.
    const fine = await call(sg, 'POST', '/api/v1/campaign/get?s=caf%C3%A9&b=%EF%BB%BFx&r=%EF%BF%BD&p=%2x+1', { key: KEYS.growth, json: { userId: 101 } })
    expect(fine.status).toBe(200)
    expect(sg.callerRequests()[0]?.query).toBe('s=caf%C3%A9&b=%EF%BB%BFx&r=%EF%BF%BD&p=%252x%201')
  })

  it('more than 256 parameters, in the query or a form', async () => {
    const many = Array.from({ length: 257 }, (_, i) => `p${i}=1`).join('&')
    expect((await call(sg, 'POST', `/api/v1/campaign/get?${many}`, { key: KEYS.growth, json: { userId: 101 } })).status).toBe(400)
    expect((await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body: `userId=101&${many}`, headers: FORM })).status).toBe(400)
    expect(sg.callerRequests()).toEqual([])
  })
})

describe('the platform receives the gateway\'s own serialization', () => {
  it('of a JSON body: one key per name, escapes decoded, no whitespace', async () => {
    const body = '{ "user\\u0049d" : 103 , "userId" : 101 , "note" : "caf\\u00e9" }'
    const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body, headers: { 'content-type': 'application/json; charset=UTF-8' } })
    expect(res.status).toBe(200)
    const [received] = sg.callerRequests()
    expect(received?.body).toBe('{"userId":101,"note":"café"}')
    expect(received?.headers['content-type']).toBe('application/json')
  })

  it('of a form and a query: re-encoded from the gateway\'s parse', async () => {
    const res = await call(sg, 'POST', '/api/v1/campaign/get?per_page=%35&x=%7e', { key: KEYS.growth, body: 'userId=%31%30%31&ids[]=1', headers: FORM })
    expect(res.status).toBe(200)
    const [received] = sg.callerRequests()
    expect(received?.query).toBe('per_page=5&x=~')
    expect(received?.body).toBe('userId=101&ids[]=1')
  })
})

itLoggedNoSecret(sg)
