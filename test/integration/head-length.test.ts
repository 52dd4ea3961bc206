import { gzipSync } from 'node:zlib'
import { request } from 'undici'
import { describe, expect, it } from 'vitest'
import { KEYS, teamsYamlWith, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'

// HEAD of a report is its GET without the body (contract, "Calling the proxy listener"):
// over HTTP, its content-length is the one its GET is sent with, in the coding the GET
// would be sent in, whether the gateway answers it from its cache or forwards it to the
// platform (the cache off); where the GET's length is not known before it is sent (a
// coding decoded as it streams), HEAD has none either.

const sandbox = useSandbox()
const cached = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }), { listen: true })
const proxied = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, teamsYamlWith({ cache: { enabled: false } })), { listen: true })

const report = (day: number) => `/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-${String(day).padStart(2, '0')}&byDate=1`
const GZIP = { 'accept-encoding': 'gzip' }

async function head(gw: TestGateway, method: 'GET' | 'HEAD', url: string, headers: Record<string, string> = {}) {
  const res = await request(`${gw.url}${url}`, { method, headers: { 'x-api-key': KEYS.all, ...headers } })
  const body = Buffer.from(await res.body.arrayBuffer())
  return { status: res.statusCode, length: res.headers['content-length'], coding: res.headers['content-encoding'], body }
}

/** The HEAD of `url` and then its GET: the same status, coding and content-length, the GET's the length of its body. */
async function expectHeadAsGet(gw: TestGateway, url: string, headers: Record<string, string> = {}) {
  const before = await head(gw, 'HEAD', url, headers)
  const got = await head(gw, 'GET', url, headers)
  const after = await head(gw, 'HEAD', url, headers)
  expect(got.status).toBe(200)
  expect(got.length).toBe(String(got.body.length))
  for (const answer of [before, after]) {
    expect(answer.body.length).toBe(0)
    expect([answer.status, answer.coding, answer.length]).toEqual([got.status, got.coding, got.length])
  }
}

describe('HEAD of a report carries the content-length of its GET', () => {
  it('answered from the cache: its first read (MISS) and a HIT, plain and gzip', async () => {
    await expectHeadAsGet(cached, report(7))
    await expectHeadAsGet(cached, report(8), GZIP)
  })

  it('forwarded to the platform (the cache off), plain and with accept-encoding gzip', async () => {
    await expectHeadAsGet(proxied, report(7))
    await expectHeadAsGet(proxied, report(8), GZIP)
  })

  it('forwarded, in gzip the caller accepts: the gzip\'s length; in gzip it does not accept: none, as its GET is decoded as it streams', async () => {
    const gzipped = gzipSync(JSON.stringify({ data: [{ date: '2026-02-01', spent: 12.5 }] }))
    const answer = (body: Buffer) => sandbox.setFailure({ kind: 'raw', answer: `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ncontent-length: ${gzipped.length}\r\n\r\n${body.toString('latin1')}`, times: 1 })
    for (const [headers, length] of [[GZIP, String(gzipped.length)], [{}, undefined]] as const) {
      answer(Buffer.alloc(0))
      const before = await head(proxied, 'HEAD', report(9), headers)
      answer(gzipped)
      const got = await head(proxied, 'GET', report(9), headers)
      expect([got.status, got.length]).toEqual([200, length])
      expect([before.status, before.coding, before.length]).toEqual([200, got.coding, length])
    }
  })
})
