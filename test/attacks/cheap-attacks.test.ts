import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import { UPLOADER_KEY, withLimitedWindow, withUploader } from '../helpers/build-gateway.js'
import { KEYS, rawHttp, rawRequest } from '../helpers/sandbox-gateway.js'
import { call, itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// Cheap attacks. Memory grown by unique URLs, event-loop time
// spent on bodies before the key and rate limit are checked, deep JSON as a 500, a body
// that trickles in held open for minutes. The request timeout is set short for the
// trickle, on a gateway of its own, so that it is cut off within the test; the bodies of
// a megabyte and more are read against the default (30 s), which a loaded machine does not
// come near.

const REQUEST_TIMEOUT_MS = 1500
// `uploader` may write any body to any account: its bodies of other types are passed on as they come.
const sg = useAttackGateway({ yaml: withUploader(withLimitedWindow('10000d')) })

const URL_BYTES = 15 * 1024

function longReportUrl(i: number, advertiser: number): string {
  const filler = 'x'.repeat(URL_BYTES)
  return `/api/v1/report/campaigns/get?advertiserId=${advertiser}&${REPORT_DATES}&pad=${i}${filler}`
}

describe('memory for unique URLs', () => {
  it('over HTTP, a forbidden advertiser\'s long URLs are 403 and never reach the platform', async () => {
    for (let i = 0; i < 20; i++) expect((await call(sg, 'GET', longReportUrl(i, 201), { key: KEYS.growth })).status).toBe(403)
    expect(sg.callerRequests()).toEqual([])
  })
})

describe('work only after admission', () => {
  it('a body is not read before the key: an unknown key with broken JSON is a 401', async () => {
    const res = await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: 'rgw_unknown_key_00000000000000000000000', body: '{"broken', headers: { 'content-type': 'application/json' } })
    expect(res.status).toBe(401)
  })

  it('nor on a path outside /api/v1/: a body there is never parsed, the answer is 404', async () => {
    for (const target of ['/oauth/token', '/nope', '/api/v2/campaign/get']) {
      const broken = await call(sg, 'POST', target, { key: 'rgw_unknown_key_00000000000000000000000', body: '{"broken', headers: { 'content-type': 'application/json' } })
      expect(broken.status, target).toBe(404)
      const empty = await call(sg, 'POST', target, { body: '', headers: { 'content-type': 'application/json' } })
      expect(empty.status, target).toBe(404)
    }
    expect(sg.callerRequests()).toEqual([])
  })

  it('nor before the rate limit: a team over its limit gets 429 for broken JSON, not 400', async ({ task }) => {
    const ok = { campaignIds: [101001], dateFrom: '2026-04-01', dateTo: '2026-04-02' }
    // The limit's windows are fixed stretches of the clock (rate-limit.ts): a window that
    // ended between the calls that spend it and the broken one would give the team a new
    // window, in which its broken call is read (400). Team `limited`'s window here is 10000d:
    // what is left of it (its `ratelimit` header's t) outlasts the test.
    for (let i = 0; i < 3; i++) expect((await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: KEYS.limited, json: ok })).status).toBe(200)
    const spent = await fetch(`${sg.url}/api/v1/report/campaigns/get`, { method: 'POST', headers: { 'x-api-key': KEYS.limited, 'content-type': 'application/json' }, body: JSON.stringify(ok) })
    await spent.arrayBuffer()
    expect(spent.status).toBe(429)
    expect(Number(/;t=(\d+)/.exec(spent.headers.get('ratelimit') ?? '')?.[1]) * 1000).toBeGreaterThan(task.timeout)
    const res = await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: KEYS.limited, body: `{"broken":"${'x'.repeat(60_000)}`, headers: { 'content-type': 'application/json' } })
    expect(res.status).toBe(429)
    expect(res.json.code).toBe('GW_RATE_LIMITED')
  })
})

describe('body caps', () => {
  it('a POST report body over 64 KiB is 413, declared or streamed', async () => {
    const big = JSON.stringify({ campaignIds: [101001], dateFrom: '2026-01-01', dateTo: '2026-01-02', pad: 'x'.repeat(70 * 1024) })
    expect((await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: KEYS.growth, body: big, headers: { 'content-type': 'application/json' } })).status).toBe(413)
    const chunked = await rawRequest(sg.port, rawHttp('POST', '/api/v1/report/campaigns/get', {
      key: KEYS.growth,
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      body: `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`,
    }))
    expect(chunked.status).toBe(413)
    expect(sg.callerRequests()).toEqual([])
  })

  it('a body of another type past bodyLimit (1 MiB), declared or streamed, is 413 GW_PAYLOAD_TOO_LARGE and never reaches the platform', async () => {
    const big = Buffer.alloc(1024 * 1024 + 1, 0x61)
    const declared = await rawRequest(sg.port, rawHttp('POST', '/api/v1/campaign/banner/create', { key: UPLOADER_KEY, headers: { 'content-type': 'application/octet-stream' }, body: big }))
    const streamed = await rawRequest(sg.port, rawHttp('POST', '/api/v1/campaign/banner/create', {
      key: UPLOADER_KEY,
      headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' },
      body: Buffer.concat([Buffer.from(`${big.length.toString(16)}\r\n`), big, Buffer.from('\r\n0\r\n\r\n')]),
    }))
    for (const res of [declared, streamed]) {
      expect(res.status).toBe(413)
      expect(JSON.parse(res.body)).toMatchObject({ code: 'GW_PAYLOAD_TOO_LARGE' })
    }
    expect(sg.callerRequests()).toEqual([])
    // Within the limit, streamed, it is passed on whole.
    const small = await rawRequest(sg.port, rawHttp('POST', '/api/v1/campaign/banner/create', {
      key: UPLOADER_KEY,
      headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' },
      body: '5\r\nhello\r\n0\r\n\r\n',
    }))
    expect(small.status).not.toBe(413)
    expect(sg.callerRequests().map((r) => r.body)).toEqual(['hello'])
  })

  it('any other body over bodyLimit (1 MiB) is 413', async () => {
    const big = JSON.stringify({ userId: 101, pad: 'x'.repeat(1024 * 1024) })
    const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.growth, body: big, headers: { 'content-type': 'application/json' } })
    expect(res.status).toBe(413)
    expect(res.json.code).toBe('GW_PAYLOAD_TOO_LARGE')
    expect(sg.callerRequests()).toEqual([])
  })
})

describe('deep JSON', () => {
  it('a 200,000-deep array is a 400, not a 500 (stack overflow)', async () => {
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`
    const res = await call(sg, 'POST', '/api/v1/campaign/get', { key: KEYS.all, body: deep, headers: { 'content-type': 'application/json' } })
    expect(res.status).toBe(400)
    expect(res.json.code).toBe('GW_BAD_REQUEST')
    const report = await call(sg, 'POST', '/api/v1/report/campaigns/get', { key: KEYS.all, body: `{"campaignIds":${'['.repeat(30_000)}${']'.repeat(30_000)}}`, headers: { 'content-type': 'application/json' } })
    expect(report.status).toBe(400)
    expect(sg.callerRequests()).toEqual([])
  })
})

describe('a body that trickles in', () => {
  const quick = useAttackGateway({ yaml: `${withUploader()}server: { requestTimeout: ${REQUEST_TIMEOUT_MS}ms }\n` })

  it('is cut off with 408 soon after server.requestTimeout, and nothing reaches the platform', async () => {
    const started = performance.now()
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(quick.port, '127.0.0.1')
      const chunks: Buffer[] = []
      let sent = 0
      const body = JSON.stringify({ userId: 101, pad: 'x'.repeat(200) })
      const timer = setInterval(() => {
        if (sent < body.length && socket.writable) socket.write(body[sent++] as string)
      }, 100)
      socket.on('data', (chunk: Buffer) => chunks.push(chunk))
      socket.on('error', reject)
      socket.on('close', () => {
        clearInterval(timer)
        resolve(Buffer.concat(chunks).toString('latin1'))
      })
      // Held to a hard stop so a gateway that never cuts it off fails rather than hangs.
      setTimeout(() => socket.destroy(), 15_000).unref()
      socket.write(`POST /api/v1/campaign/get HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.growth}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`)
    })
    const elapsed = performance.now() - started
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
    expect(answer).toContain('GW_REQUEST_TIMEOUT')
    // Not before the deadline; the 408 says the gateway cut it (the hard stop above sends none).
    expect(elapsed).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100)
    expect(quick.callerRequests()).toEqual([])
  })

  itLoggedNoSecret(quick)
})

itLoggedNoSecret(sg)
