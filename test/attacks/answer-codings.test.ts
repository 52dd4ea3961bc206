import { brotliCompressSync, deflateRawSync, deflateSync, gunzipSync, gzipSync, inflateRawSync } from 'node:zlib'
import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { answerChunkedOnce, answerOnce as answerRaw } from '../helpers/raw-answer.js'

// The platform's token handed back in bytes a caller reads otherwise than the scan
// (token-echo.ts) did: in a content coding a client decodes more leniently than the
// gateway (raw deflate), in a coding that is none (a client that does not decode reads the
// bytes as sent), after the end of a gzip member, in UTF-16 of any type (a reader that
// guesses the charset, a reader of bytes), or behind header lines the platform repeated.
// Each reaches no caller, on a proxied call and on a report read, and no log line.

const sandbox = useSandbox()
let token: string
beforeAll(() => {
  token = sandbox.issueToken()
})
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token }, SANDBOX_TEAMS_YAML))

const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-03-20&dateTo=2026-03-21'

const answerOnce = (status: string, head: string[], body: Buffer): void => answerRaw(sandbox, status, head, body)

/** Whether `bytes` hold the token as written, in UTF-16 of either order, or in a deflate stream that decodes to it. */
function holdsToken(bytes: Buffer): boolean {
  const wide = Buffer.from(token, 'utf16le')
  const decoded = [inflateRawSync, gunzipSync].map((decode) => {
    try {
      return decode(bytes)
    } catch {
      return Buffer.alloc(0)
    }
  })
  return [bytes, ...decoded].some((seen) => seen.includes(token) || seen.includes(wide) || seen.includes(Buffer.from(wide).swap16()))
}

const reflected = (): string => JSON.stringify({ message: 'Server Error', headers: { authorization: [`Bearer ${token}`] } })
const utf16 = (text: string): Buffer => Buffer.from(`中文报告 ${text}`, 'utf16le')

const cases = (): [string, string[], Buffer][] => [
  ['raw deflate labelled deflate', ['content-type: application/json', 'content-encoding: deflate'], deflateRawSync(reflected())],
  ['a body labelled gzip that is none', ['content-type: application/json', 'content-encoding: gzip'], Buffer.from(reflected())],
  ['the token after a gzip member', ['content-type: application/json', 'content-encoding: gzip'], Buffer.concat([gzipSync('{"data":[]}'), Buffer.from(reflected())])],
  ['application/octet-stream in UTF-16LE', ['content-type: application/octet-stream'], utf16(reflected())],
  ['application/vnd.api+json in UTF-16LE after CJK text', ['content-type: application/vnd.api+json'], utf16(reflected())],
  ['two content-encoding lines', ['content-type: application/json', 'content-encoding: gzip', 'content-encoding: gzip'], gzipSync(gzipSync(reflected()))],
  ['two content-type lines, one naming UTF-16', ['content-type: application/json', 'content-type: text/plain; charset=utf-16le'], utf16(reflected())],
  // The names of an object's members, which a table of decoders holds for every object: no coding.
  ['a coding named constructor', ['content-type: application/json', 'content-encoding: constructor'], Buffer.from(reflected())],
  ['a coding named __proto__', ['content-type: application/json', 'content-encoding: __proto__'], Buffer.from(reflected())],
]

describe('a platform answer that carries the token in bytes the scan read otherwise', () => {
  it.each(cases().map(([name]) => [name]))('%s: a proxied call is 502 GW_UPSTREAM, with nothing of the token', async (name) => {
    const [, head, body] = cases().find(([n]) => n === name) as [string, string[], Buffer]
    answerOnce('200 OK', head, body)
    const res = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json', 'accept-encoding': 'gzip, deflate' }, payload: '{"userId":101}' })
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ code: 'GW_UPSTREAM' })
    expect(holdsToken(res.rawPayload)).toBe(false)
    expect(gw.logs.text().includes(token)).toBe(false)
  })

  it.each(cases().map(([name]) => [name]))('%s: a report read\'s 422 passed through is 502 GW_UPSTREAM, with nothing of the token, and no copy is made', async (name) => {
    const [, head, body] = cases().find(([n]) => n === name) as [string, string[], Buffer]
    answerOnce('422 Unprocessable Content', head, body)
    const res = await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all, 'accept-encoding': 'gzip' } })
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ code: 'GW_UPSTREAM' })
    expect(holdsToken(res.rawPayload)).toBe(false)
    expect(gw.logs.text().includes(token)).toBe(false)
  })
})

// A transfer coding before chunked (RFC 9112, 6.1): the HTTP client removes the chunks and
// hands on the bytes still coded, which the scan read as they were (found by a black-box
// pass, session 133: `deflate, chunked` carried the token to a caller, labelled JSON).
describe('a platform answer in a transfer coding other than chunked alone', () => {
  it.each([
    ['deflate, chunked', 'application/json', deflateSync],
    ['br, chunked', 'application/json', brotliCompressSync],
    ['gzip, chunked', 'application/octet-stream', gzipSync],
    ['compress, chunked', 'application/json', (text: string) => Buffer.from(text)],
    // A tab after chunked (JavaScript's trim() takes it, the HTTP client does not): the answer is read to the connection's end, its framing in the body.
    ['chunked\t', 'application/json', (text: string) => Buffer.from(text)],
    ['chunked\u00a0', 'application/json', (text: string) => Buffer.from(text)],
  ])('%j (%s) fails the call, 502 GW_UPSTREAM, with nothing of the token', async (codings, type, code) => {
    // The token split between two chunks: read with its framing, no scan finds it whole.
    const body = code(reflected())
    answerChunkedOnce(sandbox, '200 OK', [`content-type: ${type}`], codings, body, body.indexOf(token.slice(0, 8)) + 4)
    const res = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json', 'accept-encoding': 'identity' }, payload: '{"userId":101}' })
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ code: 'GW_UPSTREAM' })
    expect(holdsToken(res.rawPayload)).toBe(false)
    expect(holdsToken(Buffer.from(res.rawPayload.toString('latin1').replace(/\r\n[0-9a-f]+\r\n/g, ''), 'latin1'))).toBe(false)
    expect(gw.logs.text().includes(token)).toBe(false)
  })

  it('passes an answer in chunked alone, whatever the letter case', async () => {
    answerChunkedOnce(sandbox, '200 OK', ['content-type: application/json'], 'Chunked', Buffer.from('{"data":[]}'))
    const res = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, payload: '{"userId":101}' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ data: [] })
  })
})

describe('header lines the platform folds (obs-fold, RFC 9112 5.2)', () => {
  it('fail the call (502 GW_UPSTREAM): undici reads no folded line, and nothing of one reaches the caller', async () => {
    const [head, tail] = [token.slice(0, 40), token.slice(40)]
    sandbox.setFailure({ kind: 'raw', answer: `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-echo: Bearer ${head}\r\n ${tail}\r\ncontent-length: 11\r\n\r\n{"data":[]}`, times: 3 })
    const res = await gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, payload: '{"userId":101}' })
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ code: 'GW_UPSTREAM' })
    expect(res.headers['x-echo']).toBeUndefined()
    expect(res.body.includes(tail)).toBe(false)
  })
})

describe('a report answer\'s coding, as the scan reads it', () => {
  const report = (day: number): string => `/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-04-${String(day).padStart(2, '0')}&dateTo=2026-04-${String(day).padStart(2, '0')}`
  const read = (url: string, acceptEncoding?: string) => gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all, ...(acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding }) } })
  const rows = '{"data":[{"date":"2026-04-01","impressions":10,"clicks":1}]}'

  it.each(['GZIP', 'x-gzip', 'Gzip '])('reads a report in %s as gzip: served, decoded for a caller that asked for none, and kept', async (coding) => {
    const url = report(coding.length)
    answerOnce('200 OK', ['content-type: application/json', `content-encoding: ${coding}`], gzipSync(rows))
    const first = await read(url)
    expect(first.statusCode).toBe(200)
    expect(first.headers['content-encoding']).toBeUndefined()
    expect(first.body).toBe(rows)
    const again = await read(url, 'gzip')
    expect(again.headers['x-cache']).toBe('HIT')
    expect(gunzipSync(again.rawPayload).toString()).toBe(rows)
  })

  it('passes a refusal in gzip on decoded, and fails one in a coding it did not ask for (br, deflate): a caller would get bytes it cannot read', async () => {
    const refusal = '{"message":"The date from field is required.","errors":{"dateFrom":["The date from field is required."]}}'
    answerOnce('422 Unprocessable Content', ['content-type: application/json', 'content-encoding: x-gzip'], gzipSync(refusal))
    const gzipped = await read(report(20))
    expect(gzipped.statusCode).toBe(422)
    expect(gzipped.body).toBe(refusal)
    for (const [coding, bytes] of [['br', brotliCompressSync(refusal)], ['deflate', deflateSync(refusal)]] as const) {
      answerOnce('422 Unprocessable Content', ['content-type: application/json', `content-encoding: ${coding}`], bytes)
      const res = await read(report(21))
      expect(res.statusCode, coding).toBe(502)
      expect(res.json()).toMatchObject({ code: 'GW_UPSTREAM', message: expect.stringContaining(`(${coding})`) })
    }
  })
})
