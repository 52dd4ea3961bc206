import { brotliCompressSync, constants, deflateRawSync, deflateSync, gunzipSync, gzipSync } from 'node:zlib'
import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { answerOnce as answerRaw } from '../helpers/raw-answer.js'

// A platform answer in a content coding that decodes to far more than it is: a
// compression bomb (a few KiB of gzip, deflate or brotli that inflate to gigabytes). The
// gateway decodes every coded answer beside it to search it for its token (token-echo.ts):
// each decoded byte is the replica's CPU, spent for every team it serves. An answer that
// decodes past platform.bufferTotalBytes, the most a plain answer may be, fails as a plain
// one that large does (502 GW_UPSTREAM), its decoding stopped there.

const MiB = 1024 * 1024
const BOUND = 4 * MiB
const sandbox = useSandbox()
let token: string
beforeAll(() => {
  token = sandbox.issueToken()
})
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token }, `${SANDBOX_TEAMS_YAML}platform:\n  bufferTotalBytes: 4MiB\n`))

const answerOnce = (head: string[], body: Buffer): void => answerRaw(sandbox, '200 OK', head, body)

// Spaces after the start of a JSON array: text as the scan reads it, a thousandth of its size in gzip.
const past = Buffer.concat([Buffer.from('{"data":['), Buffer.alloc(16 * BOUND, 0x20), Buffer.from(']}')])
const within = Buffer.concat([Buffer.from('{"data":['), Buffer.alloc(BOUND / 2, 0x20), Buffer.from(']}')])

const BOMBS: [string, Buffer][] = [
  ['gzip', gzipSync(past, { level: 9 })],
  ['deflate', deflateSync(past, { level: 9 })],
  ['deflate', deflateRawSync(past, { level: 9 })],
  ['br', brotliCompressSync(past, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } })],
]

const proxied = (acceptEncoding: string) =>
  gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json', 'accept-encoding': acceptEncoding }, payload: '{"userId":101}' })

describe('a platform answer that decodes past platform.bufferTotalBytes', () => {
  it.each(BOMBS.map(([coding, bytes]) => [`${coding} (${bytes.length} bytes)`, coding, bytes] as const))('in %s: a proxied call is 502 GW_UPSTREAM naming the bound', async (_name, coding, bytes) => {
    expect(bytes.length).toBeLessThan(BOUND / 16)
    answerOnce(['content-type: application/json', `content-encoding: ${coding}`], bytes)
    const res = await proxied(coding)
    expect(res.statusCode, res.body.slice(0, 200)).toBe(502)
    expect(res.json()).toMatchObject({ code: 'GW_UPSTREAM', message: expect.stringContaining(`decodes to more than platform.bufferTotalBytes (${BOUND} bytes)`) })
  })

  it('in gzip, on a report read: 502 GW_UPSTREAM, no copy kept, the next read asks the platform', async () => {
    const url = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-05-01&dateTo=2026-05-02'
    answerOnce(['content-type: application/json', 'content-encoding: gzip'], BOMBS[0]![1])
    const res = await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all, 'accept-encoding': 'gzip' } })
    expect(res.statusCode, res.body.slice(0, 200)).toBe(502)
    expect(res.json()).toMatchObject({ code: 'GW_UPSTREAM', message: expect.stringContaining('decodes to more than platform.bufferTotalBytes') })
    const again = await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all } })
    expect(again.statusCode).toBe(200)
    expect(again.headers['x-cache']).toBe('MISS')
  })
})

describe('a coded platform answer that decodes within the bound', () => {
  it('passes, as it came to a caller that accepts its coding, decoded to one that does not', async () => {
    const gzip = gzipSync(within)
    answerOnce(['content-type: application/json', 'content-encoding: gzip'], gzip)
    const accepted = await proxied('gzip')
    expect(accepted.statusCode).toBe(200)
    expect(gunzipSync(accepted.rawPayload).equals(within)).toBe(true)
    answerOnce(['content-type: application/json', 'content-encoding: gzip'], gzip)
    const decoded = await proxied('identity')
    expect(decoded.statusCode).toBe(200)
    expect(decoded.rawPayload.equals(within)).toBe(true)
  })
})
