import { brotliCompressSync, deflateRawSync, gunzipSync, gzipSync } from 'node:zlib'
import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { answerOnce as answerRaw } from '../helpers/raw-answer.js'

// A platform (or a front server of its) that compresses an answer the caller did not ask
// to be compressed: no accept-encoding, `identity`, a coding the gateway offered the
// platform but not this one, or one the caller refused (`;q=0`). RFC 9110, 12.5.3: a
// server should not send a coding the caller did not accept; the caller (curl without
// --compressed, a script reading bytes) gets bytes it cannot read. The gateway decodes it
// for that caller (it decodes it to search it anyway), on a proxied call and on a report
// read, a fresh answer and a kept copy alike, and says on each answer that it varies on
// `accept-encoding`.

const sandbox = useSandbox()
let token: string
beforeAll(() => {
  token = sandbox.issueToken()
})
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token }, SANDBOX_TEAMS_YAML))

const LIST = '{"data":[{"id":101001,"userId":101,"name":"Spring"}],"meta":{"current_page":1,"last_page":1,"per_page":15,"total":1}}'

const answerOnce = (status: string, head: string[], body: Buffer): void => answerRaw(sandbox, status, head, body)

const list = (acceptEncoding?: string, method: 'POST' | 'HEAD' = 'POST') =>
  gw.proxy.inject({
    method,
    url: '/api/v1/campaign/get',
    headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json', ...(acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding }) },
    ...(method === 'HEAD' ? {} : { payload: '{"userId":101}' }),
  })

const varies = (vary: unknown): string[] => String(vary).split(',').map((v) => v.trim().toLowerCase())

describe('a proxied answer in a coding the caller did not accept', () => {
  const unasked: [string, string | undefined, string, Buffer][] = [
    ['no accept-encoding, gzip', undefined, 'gzip', gzipSync(LIST)],
    ['`identity` alone, gzip', 'identity', 'gzip', gzipSync(LIST)],
    ['gzip refused (q=0), gzip', 'gzip;q=0, br', 'gzip', gzipSync(LIST)],
    ['`*;q=0`, x-gzip', '*;q=0, identity', 'x-gzip', gzipSync(LIST)],
    ['gzip asked, br', 'gzip', 'br', brotliCompressSync(LIST)],
    ['br asked, raw deflate', 'br', 'deflate', deflateRawSync(LIST)],
  ]

  it.each(unasked)('%s: is decoded for the caller, its coding, length and digests gone, its etag weak', async (_name, accept, coding, body) => {
    answerOnce('200 OK', ['content-type: application/json', `content-encoding: ${coding}`, 'etag: "v1"', 'content-md5: x', 'content-digest: sha-256=:x:', 'repr-digest: sha-256=:x:'], body)
    const res = await list(accept)
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-encoding']).toBeUndefined()
    expect(res.body).toBe(LIST)
    expect(res.headers.etag).toBe('W/"v1"')
    for (const name of ['content-md5', 'content-digest', 'repr-digest']) expect(res.headers[name], name).toBeUndefined()
    expect(varies(res.headers.vary)).toContain('accept-encoding')
  })

  it('passes a refusal (422) in gzip to a caller without accept-encoding decoded', async () => {
    const refusal = '{"message":"The user id field is required.","errors":{"userId":["The user id field is required."]}}'
    answerOnce('422 Unprocessable Content', ['content-type: application/json', 'content-encoding: gzip'], gzipSync(refusal))
    const res = await list()
    expect(res.statusCode).toBe(422)
    expect(res.headers['content-encoding']).toBeUndefined()
    expect(res.body).toBe(refusal)
  })

  it('answers a HEAD as its GET would be: no coding, no length of the coded bytes', async () => {
    sandbox.setFailure({ kind: 'raw', answer: 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ncontent-length: 97\r\n\r\n', times: 1 })
    const res = await list(undefined, 'HEAD')
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-encoding']).toBeUndefined()
    expect(res.headers['content-length']).not.toBe('97')
  })

  it('passes an answer in a coding the caller accepts as it came, and says it varies on accept-encoding', async () => {
    const gzipped = gzipSync(LIST)
    answerOnce('200 OK', ['content-type: application/json', 'content-encoding: gzip', 'etag: "v1"'], gzipped)
    const res = await list('gzip, br')
    expect(res.headers['content-encoding']).toBe('gzip')
    expect(res.headers.etag).toBe('"v1"')
    expect(gunzipSync(res.rawPayload).toString()).toBe(LIST)
    expect(varies(res.headers.vary)).toContain('accept-encoding')
  })

  it('says a plain answer varies on accept-encoding too: the same call with another accept-encoding may be answered in a coding', async () => {
    answerOnce('200 OK', ['content-type: application/json', 'vary: Origin'], Buffer.from(LIST))
    const res = await list()
    expect(res.body).toBe(LIST)
    expect(varies(res.headers.vary)).toEqual(expect.arrayContaining(['origin', 'accept-encoding', 'authorization', 'x-api-key']))
  })
})

describe('a report copy kept from a gzip answer', () => {
  const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-05-02&dateTo=2026-05-03'
  const rows = '{"data":[{"date":"2026-05-02","impressions":10,"clicks":1}]}'

  it.each(['identity', 'gzip;q=0', '*;q=0'])('is served decoded to a later caller that accepts only %s', async (accept) => {
    answerOnce('200 OK', ['content-type: application/json', 'content-encoding: gzip'], gzipSync(rows))
    const first = await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all, 'accept-encoding': 'gzip' } })
    expect(first.statusCode).toBe(200)
    const later = await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all, 'accept-encoding': accept } })
    expect(['HIT', 'MISS']).toContain(later.headers['x-cache'])
    expect(later.headers['content-encoding']).toBeUndefined()
    expect(later.body).toBe(rows)
    expect(varies(later.headers.vary)).toContain('accept-encoding')
  })
})
