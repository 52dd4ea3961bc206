import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { answerOnce as answerRaw } from '../helpers/raw-answer.js'
import { SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'

// What of a platform answer's head reaches a caller, and a cache between the caller and
// the gateway. A platform (or a front server, a CDN of its) may write a field on several
// lines, which undici hands on as a list: each line is read as RFC 9110, 5.3 says, one
// value joined by commas. A proxied answer is the answer to one team's key: a shared cache
// before the gateway (a corporate proxy, a CDN that keys by URL alone) must keep none of
// them, whatever freshness the platform gave it; a key in x-api-key is no Authorization,
// which alone keeps an answer out of a shared cache that has no `public` (RFC 9111, 3.5).

const sandbox = useSandbox()
let token: string
beforeAll(() => {
  token = sandbox.issueToken()
})
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token }, SANDBOX_TEAMS_YAML))

const LIST = Buffer.from('{"data":[]}')
const list = () => gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, payload: '{"userId":101}' })

/** The caller's answer to a campaign list the platform answers 200 with `head`. */
async function answeredWith(head: string[]) {
  answerRaw(sandbox, '200 OK', ['content-type: application/json', ...head], LIST)
  const res = await list()
  expect(res.statusCode).toBe(200)
  expect(res.body).toBe(LIST.toString())
  return res
}

describe("a proxied answer's cache-control: private to the key that asked", () => {
  it('reads a cache-control written on two lines as one: public on either is gone and the answer is private', async () => {
    const res = await answeredWith(['cache-control: public', 'cache-control: max-age=600'])
    expect(res.headers['cache-control']).toBe('max-age=600, private')
    const other = await answeredWith(['cache-control: max-age=600', 'cache-control: s-maxage=900'])
    expect(other.headers['cache-control']).toBe('max-age=600, private')
  })

  it.each([
    ['max-age alone', ['cache-control: max-age=600'], 'max-age=600, private'],
    ['no-cache alone', ['cache-control: no-cache'], 'no-cache, private'],
    ['expires, no cache-control', ['expires: Tue, 01 Dec 2099 16:00:00 GMT'], 'private'],
    ['last-modified alone (heuristic freshness)', ['last-modified: Tue, 01 Dec 2020 16:00:00 GMT'], 'private'],
    ['nothing', [], 'private'],
  ])('%s: private, as no shared cache may keep it for another key', async (_name, head, control) => {
    const res = await answeredWith(head)
    expect(res.headers['cache-control']).toBe(control)
  })

  it('leaves no-store and Laravel\'s own default as they are', async () => {
    expect((await answeredWith(['cache-control: no-store'])).headers['cache-control']).toBe('no-store')
    expect((await answeredWith(['cache-control: no-cache, private'])).headers['cache-control']).toBe('no-cache, private')
  })
})

describe("a proxied answer's vary", () => {
  it('keeps every vary line of the platform beside the key headers', async () => {
    const res = await answeredWith(['vary: accept-language', 'vary: origin'])
    expect(res.headers.vary).toBe('accept-language, origin, accept-encoding, authorization, x-api-key')
  })

  it('says * when a line of it does: no cache reuses the answer', async () => {
    const res = await answeredWith(['vary: accept-language', 'vary: *'])
    expect(res.headers.vary).toBe('*')
  })
})

// The gateway's own refusals on the proxy listener. RFC 9110, 15.1: a 404, 405, 410, 414
// or 501 is cacheable by default, and a cache before the gateway keeps one without
// cache-control for its own time (Varnish's builtin VCL: 120 s) under the URL alone, no
// key in it (a key in x-api-key is no Authorization, and the refusal names no vary):
// another team's 404 for a job id would answer the job's own team; a cache told to keep
// any status (nginx's `proxy_cache_valid any`) keeps a keyless 401 or a team's 429 too.
describe("the gateway's own refusals", () => {
  it.each([
    ['a job no team of the key has (404)', 'GET', '/api/v1/jobs/0000000000000AAAAAAAAAAAAAAAA', KEYS.all],
    ['a path outside /api/v1/ (404)', 'GET', '/nothing', KEYS.all],
    ['a method the gateway never forwards (405)', 'TRACE', '/api/v1/campaign/get', KEYS.all],
    ['no key (401)', 'GET', '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-02', null],
    ['an advertiser outside the team (403)', 'GET', '/api/v1/report/campaigns/get?advertiserId=103&dateFrom=2026-03-01&dateTo=2026-03-02', KEYS.growth],
    ['a report query without its range (400)', 'GET', '/api/v1/report/campaigns/get?advertiserId=101', KEYS.all],
  ] as const)('%s: kept by no cache', async (_name, method, url, key) => {
    const res = await gw.proxy.inject({ method, url, headers: key === null ? {} : { 'x-api-key': key } })
    expect(res.statusCode).toBeGreaterThanOrEqual(400)
    expect(String(res.headers['cache-control'])).toMatch(/(^|, )no-store$/)
  })
})

// A chunked answer whose connection closes before its last chunk is cut, however whole its
// JSON looks: undici fails the call, and neither the caller nor the cache takes the part.
describe('a platform answer cut before its last chunk', () => {
  const CUT = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nb\r\n{"data":[]}\r\n'
  it('is 502 on a proxied call', async () => {
    sandbox.setFailure({ kind: 'raw', answer: CUT, times: 1 })
    const res = await list()
    expect([res.statusCode, res.json().code]).toEqual([502, 'GW_UPSTREAM'])
  })

  it('is 502 on a report read, and no copy: the next read asks the platform', async () => {
    const report = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-05'
    const read = () => gw.proxy.inject({ method: 'GET', url: report, headers: { 'x-api-key': KEYS.all } })
    sandbox.setFailure({ kind: 'raw', answer: CUT, times: 1 })
    expect((await read()).statusCode).toBe(502)
    const again = await read()
    expect([again.statusCode, again.headers['x-cache']]).toEqual([200, 'MISS'])
    expect(again.body).not.toBe('{"data":[]}')
  })
})
