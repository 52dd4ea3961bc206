import { beforeAll, describe, expect, it } from 'vitest'
import type { SandboxRequestRecord } from '../../src/sandbox/sandbox.js'
import { KEYS, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { onRealTimers } from '../helpers/clock.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'
import { newCampaign, rawHttp, rawRequest as sendRaw, SANDBOX_TEAMS_YAML } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'

// Contract, "Calling it" and "Errors", for everything under /api/v1/ that is not a
// cached report: the gateway against the real sandbox over loopback HTTP.

const TOKEN_URL_PATH = '/api/v1/auth/token'

const sandbox = useSandbox()
let platformToken: string
beforeAll(() => {
  platformToken = sandbox.issueToken()
})
const gw = useGateway(
  () =>
    testConfig(
      { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: platformToken, PLATFORM_TOKEN_URL: TOKEN_URL_PATH },
      // The default platform.timeout (30 s), which no call on a loaded machine comes near: a
      // read's retries are sent only when they fit in what its deadline leaves, and the
      // failures below count them. The hang waits out a short deadline on a gateway of its own.
      SANDBOX_TEAMS_YAML,
    ),
  { listen: true },
)
// The start's token probe is the gateway's own call: what callers send starts here.
beforeAll(() => sandbox.clearRequests())

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'HEAD' | 'OPTIONS' | 'TRACE'

function call(method: Method, url: string, opts: { key?: string | null; headers?: Record<string, string>; json?: unknown; form?: string } = {}, through: TestGateway = gw) {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) }
  const key = opts.key === undefined ? KEYS.all : opts.key
  if (key !== null) headers['x-api-key'] = key
  let payload: string | undefined
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json'
    payload = JSON.stringify(opts.json)
  } else if (opts.form !== undefined) {
    headers['content-type'] = 'application/x-www-form-urlencoded'
    payload = opts.form
  }
  return through.proxy.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) })
}

function only(): SandboxRequestRecord {
  expect(sandbox.requests).toHaveLength(1)
  return sandbox.requests[0] as SandboxRequestRecord
}

/** A raw GET over a socket: no client-side path normalization. */
function rawRequest(target: string) {
  // A connection the gateway keeps open ends the wait after 3 s; the assertions then see why.
  return sendRaw(gw.port as number, rawHttp('GET', target), 3000)
}

// What every answer of the proxy listener says to a browser: it is no page of the gateway's origin.
const ANSWER_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox"

const CAMPAIGN_FIELDS = newCampaign(101, { name: 'Gateway test', clickUrl: 'https://example.com/landing', bid: 0.5 })

describe('token injection', () => {
  it('sends the platform token and never the caller\'s credentials', async () => {
    const res = await call('POST', '/api/v1/campaign/get', {
      key: null,
      headers: {
        authorization: `Bearer ${KEYS.all}`,
        cookie: 'laravel_session=caller-session; other=1',
        'proxy-authorization': 'Basic Y2FsbGVyOnNlY3JldA==',
      },
      json: { userId: 101 },
    })
    expect(res.statusCode).toBe(200)
    const seen = only()
    expect(seen.headers.authorization).toBe(`Bearer ${platformToken}`)
    expect(seen.headers.cookie).toBeUndefined()
    expect(seen.headers['x-api-key']).toBeUndefined()
    expect(seen.headers['proxy-authorization']).toBeUndefined()
    expect(JSON.stringify(seen.headers)).not.toContain(KEYS.all)
    expect(JSON.stringify(seen.headers)).not.toContain('caller-session')
  })

  it('strips x-api-key and forwards the gateway\'s own serialization of the JSON body', async () => {
    const body = '{"userId":  101 ,"extra":"k\\u00e9y"}'
    const res = await gw.proxy.inject({
      method: 'POST',
      url: '/api/v1/campaign/get?page=1',
      headers: { 'x-api-key': KEYS.growth, 'content-type': 'application/json' },
      payload: body,
    })
    expect(res.statusCode).toBe(200)
    const seen = only()
    expect(seen.headers['x-api-key']).toBeUndefined()
    expect(seen.headers.authorization).toBe(`Bearer ${platformToken}`)
    expect(seen.body).toBe('{"userId":101,"extra":"kéy"}')
    expect(seen.headers['content-type']).toBe('application/json')
    expect(seen.path).toBe('/api/v1/campaign/get')
    expect(seen.query).toBe('page=1')
  })

  it('drops the platform\'s set-cookie and never returns the platform token', async () => {
    const direct = await fetch(`${sandbox.url}/api/v1/campaign/get`, {
      method: 'POST',
      headers: { authorization: `Bearer ${platformToken}`, 'content-type': 'application/json' },
      body: '{"userId":101}',
    })
    // The sandbox does send a session cookie: the gateway is what drops it.
    expect(direct.headers.get('set-cookie')).toMatch(/^laravel_session=/)
    const res = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })
    expect(res.statusCode).toBe(200)
    expect(res.headers['set-cookie']).toBeUndefined()
    expect(res.body).toBe(await direct.text())
    expect(JSON.stringify(res.headers)).not.toContain(platformToken)
    expect(res.body).not.toContain(platformToken)
  })

  it('gives a redirect to the platform\'s own address as the gateway\'s path: a client that follows it stays on the gateway, with its key', async () => {
    const platform = new URL(sandbox.url)
    sandbox.setFailure({ kind: 'status', status: 302, headers: { location: `${sandbox.url}/api/v1/campaign/get?page=2`, 'content-location': `${platform.origin.toUpperCase()}/api/v1/campaign/list#top` }, body: { message: 'moved' }, times: 1 })
    const moved = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })
    expect(moved.statusCode).toBe(302)
    expect(moved.headers.location).toBe('/api/v1/campaign/get?page=2')
    expect(moved.headers['content-location']).toBe('/api/v1/campaign/list#top')
    expect(JSON.stringify(moved.headers)).not.toContain(platform.host)
    // Another origin, or a path already relative, is passed on as the platform sent it.
    sandbox.setFailure({ kind: 'status', status: 303, headers: { location: 'https://files.example/report.csv', 'content-location': '/api/v1/x' }, times: 1 })
    const elsewhere = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })
    expect(elsewhere.headers.location).toBe('https://files.example/report.csv')
    expect(elsewhere.headers['content-location']).toBe('/api/v1/x')
  })

  it('gives the platform\'s own address in a link or refresh header as the gateway\'s path: a client that follows rel=next keeps its key on the gateway', async () => {
    const platform = new URL(sandbox.url)
    const link = `<${sandbox.url}/api/v1/campaign/get?page=2>; rel="next", <${platform.origin.toUpperCase()}/api/v1/campaign/get?page=9>; rel=last, <https://docs.example/api?a=1,2>; rel=help, </api/v1/campaign/get?page=1>; rel=first`
    sandbox.setFailure({ kind: 'status', status: 200, headers: { link, refresh: `0; url=${sandbox.url}/api/v1/campaign/get?page=3` }, body: { data: [] }, times: 1 })
    const res = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })
    expect(res.statusCode).toBe(200)
    expect(res.headers.link).toBe('</api/v1/campaign/get?page=2>; rel="next", </api/v1/campaign/get?page=9>; rel=last, <https://docs.example/api?a=1,2>; rel=help, </api/v1/campaign/get?page=1>; rel=first')
    expect(res.headers.refresh).toBe('0; url=/api/v1/campaign/get?page=3')
    expect(JSON.stringify(res.headers)).not.toContain(platform.host)
    // Another origin's refresh is passed on as the platform sent it, in its quotes.
    sandbox.setFailure({ kind: 'status', status: 200, headers: { refresh: "5;URL='https://status.example/'" }, body: { data: [] }, times: 1 })
    const elsewhere = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })
    expect(elsewhere.headers.refresh).toBe("5;URL='https://status.example/'")
  })

  it("passes on no link a browser or a front server follows by itself (preload, preconnect, prefetch, dns-prefetch, modulepreload), whichever origin it names, in one link header or several", async () => {
    const hints = '<https://cdn.example/app.js>; rel=preload; as=script, <https://tracker.example>; rel=preconnect, </build/app.js>; rel=modulepreload'
    sandbox.setFailure({ kind: 'status', status: 200, headers: { link: `${hints}, <${sandbox.url}/api/v1/campaign/get?page=2>; rel=next` }, body: { data: [] }, times: 1 })
    const res = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })
    expect(res.headers.link).toBe('</api/v1/campaign/get?page=2>; rel=next')
  })

  it('puts every one of several link or content-location headers on the gateway as one would be: none passed as the platform wrote it', async () => {
    const platform = new URL(sandbox.url)
    const lines = [`link: <${sandbox.url}/api/v1/campaign/get?page=2>; rel=next`, 'link: <https://tracker.example>; rel="dns-prefetch"', `link: <${platform.origin}/api/v1/campaign/get?page=9>; rel=last`, `content-location: ${sandbox.url}/api/v1/campaign/get`, `content-location: ${sandbox.url}/api/v1/campaign/list`]
    sandbox.setFailure({ kind: 'raw', answer: `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n${lines.join('\r\n')}\r\ncontent-length: 11\r\n\r\n{"data":[]}`, times: 1 })
    const several = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })
    expect(several.statusCode).toBe(200)
    expect(several.body).toBe('{"data":[]}')
    expect([several.headers.link].flat().join(', ')).toBe('</api/v1/campaign/get?page=2>; rel=next, </api/v1/campaign/get?page=9>; rel=last')
    expect([several.headers['content-location']].flat().join(', ')).toBe('/api/v1/campaign/get, /api/v1/campaign/list')
    expect(JSON.stringify(several.headers)).not.toContain(platform.host)
  })

  it('passes a report read\'s platform redirect with its location, on the gateway as a proxied one is', async () => {
    const report = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-02'
    sandbox.setFailure({ kind: 'status', status: 301, headers: { location: `${sandbox.url}/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-03` }, times: 1 })
    const moved = await call('GET', report)
    expect(moved.statusCode).toBe(301)
    expect(moved.headers['x-cache']).toBe('BYPASS')
    expect(moved.headers.location).toBe('/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-03')
    sandbox.setFailure({ kind: 'status', status: 307, headers: { location: 'https://files.example/report.csv' }, times: 1 })
    const elsewhere = await call('GET', report.replace('03-02', '03-04'))
    expect(elsewhere.headers.location).toBe('https://files.example/report.csv')
    // A 4xx's location is none of the caller's business: only a redirect's is passed on.
    sandbox.setFailure({ kind: 'status', status: 404, headers: { location: `${sandbox.url}/x` }, times: 1 })
    const missing = await call('GET', report.replace('03-02', '03-05'))
    expect(missing.statusCode).toBe(404)
    expect(missing.headers.location).toBeUndefined()
  })

  it('keeps the headers the gateway writes to itself: a platform (or its CDN) saying x-cache: HIT is no cache hit of the gateway', async () => {
    const own = { 'x-cache': 'HIT', 'platform-usage': 'fill=99', 'report-settled-through': '2099-01-01', 'report-provisional-days': 'none', 'preference-applied': 'respond-async' }
    sandbox.setFailure({ kind: 'status', status: 200, headers: { ...own, 'x-served-by': 'cache-fra-1' }, body: { data: [] }, times: 1 })
    const res = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 }, headers: { 'x-request-id': 'platform-says-hit' } })
    expect(res.statusCode).toBe(200)
    for (const name of Object.keys(own)) expect(res.headers[name], name).toBeUndefined()
    expect(res.headers['x-served-by']).toBe('cache-fra-1')
    const line = gw.logs.records().find((r) => r.msg === 'request' && r.reqId === 'platform-says-hit')
    expect(line).toMatchObject({ route: 'proxy', status: 200, cache: null })
  })

  /** A campaign list the platform answers with `dropped` and `kept` headers: 200, and none of `dropped` reaches the caller. */
  const answeredWithout = async (dropped: Record<string, string>, kept: Record<string, string>, headers: Record<string, string> = {}) => {
    sandbox.setFailure({ kind: 'status', status: 200, headers: { ...dropped, ...kept }, body: { data: [] }, times: 1 })
    const res = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 }, headers })
    expect(res.statusCode).toBe(200)
    for (const name of Object.keys(dropped)) expect(res.headers[name], name).toBeUndefined()
    return res
  }

  it("passes on none of the platform's policies for its own origin: CORS, alt-svc, HSTS, clear-site-data, reporting endpoints", async () => {
    const origin = {
      'access-control-allow-origin': '*',
      'access-control-allow-credentials': 'true',
      'access-control-expose-headers': 'x-request-id',
      'timing-allow-origin': '*',
      'alt-svc': 'h3=":443"; ma=86400',
      'strict-transport-security': 'max-age=31536000; includeSubDomains',
      'clear-site-data': '"cache", "cookies", "storage"',
      nel: '{"report_to":"default","max_age":86400}',
      'report-to': '{"group":"default","max_age":86400,"endpoints":[{"url":"https://platform.example/reports"}]}',
      'reporting-endpoints': 'default="https://platform.example/reports"',
    }
    const res = await answeredWithout(origin, { 'x-served-by': 'cache-fra-1' }, { origin: 'https://elsewhere.example' })
    expect(res.headers['x-served-by']).toBe('cache-fra-1')
  })

  it('keeps a proxied answer private to the key that asked: no shared cache before the gateway gives it to another team', async () => {
    sandbox.setFailure({ kind: 'status', status: 200, headers: { 'cache-control': 'public, max-age=600, s-maxage=900, proxy-revalidate', vary: 'accept' }, body: { data: [] }, times: 1 })
    const shared = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })
    expect(shared.headers['cache-control']).toBe('max-age=600, private')
    expect(shared.headers.vary).toBe('accept, accept-encoding, authorization, x-api-key')
    // RFC 9111, 3.5: must-revalidate lets a shared cache keep an answer to a call with
    // authorization (a key sent as a bearer) as public does: it stays, and the answer is private.
    sandbox.setFailure({ kind: 'status', status: 200, headers: { 'cache-control': 'max-age=600, must-revalidate' }, body: { data: [] }, times: 1 })
    const revalidated = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 }, key: null, headers: { authorization: `Bearer ${KEYS.all}` } })
    expect(revalidated.headers['cache-control']).toBe('max-age=600, must-revalidate, private')
    // Laravel's own default is left as it is, but for the vary.
    const usual = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })
    expect(usual.headers['cache-control']).toBe('no-cache, private')
    expect(usual.headers.vary).toBe('accept-encoding, authorization, x-api-key')
  })

  it("passes on no cache directive meant for the platform's CDN (CDN-Cache-Control, its targeted kin, Surrogate-Control): no CDN before the gateway keeps one team's answer for another", async () => {
    // RFC 9213: a CDN obeys its targeted field in place of cache-control; Surrogate-Control
    // is Fastly's and Varnish's, Edge-Control Akamai's. Each lets a CDN keep what cache-control keeps private.
    const targeted = {
      'cdn-cache-control': 'public, max-age=900',
      'cloudflare-cdn-cache-control': 'max-age=900',
      'vercel-cdn-cache-control': 'max-age=900',
      'surrogate-control': 'max-age=900',
      'edge-control': 'cache-maxage=900s',
    }
    const res = await answeredWithout(targeted, { 'cache-control': 'no-cache, private' })
    expect(res.headers['cache-control']).toBe('no-cache, private')
  })

  it('passes on no instruction to a server before the gateway: nginx\'s X-Accel-*, Envoy\'s x-envoy-*, LiteSpeed\'s X-LiteSpeed-*, X-Sendfile and its kin, X-Reproxy-*', async () => {
    // nginx acts on X-Accel-Redirect (an internal redirect to any of its locations), X-Accel-Expires
    // (its cache's time, over cache-control) and the others from the server behind it; Apache's and
    // lighttpd's X-Sendfile serve a file of their own disk. The platform's are for its own front.
    const nginx = { 'x-accel-redirect': '/internal/admin/status', 'x-accel-expires': '600', 'x-accel-buffering': 'no', 'x-accel-limit-rate': '1', 'x-accel-charset': 'koi8-r' }
    // Envoy (an Istio sidecar, a gateway) takes a replica answering x-envoy-immediate-health-check-fail out of its pool.
    const envoy = { 'x-envoy-immediate-health-check-fail': 'true', 'x-envoy-degraded': 'true', 'x-envoy-ratelimited': 'true' }
    // LiteSpeed's internal redirect, and its cache's store, key, tags and purge, over cache-control.
    const litespeed = { 'x-litespeed-location': '/internal/admin/status', 'x-litespeed-cache-control': 'public, max-age=900', 'x-litespeed-vary': 'value=all', 'x-litespeed-tag': 'reports', 'x-litespeed-purge': '*' }
    // lighttpd's X-Sendfile2 (a file and a range), mod_xsendfile's X-Sendfile-Temporary (a file, deleted once sent),
    // H2O's and Perlbal's X-Reproxy-URL (a URL the front fetches and serves in the answer's place).
    const files = { 'x-sendfile': '/etc/passwd', 'x-lighttpd-send-file': '/etc/passwd', 'x-sendfile2': '/etc/passwd 0-', 'x-sendfile-temporary': '/etc/passwd' }
    const reproxy = { 'x-reproxy-url': 'http://169.254.169.254/latest/meta-data/', 'x-reproxy-file': '/etc/passwd' }
    await answeredWithout({ ...nginx, ...envoy, ...litespeed, ...files, ...reproxy }, { 'x-served-by': 'cache-fra-1' })
  })

  it("serves no platform page on the gateway's origin: every answer is nosniff and sandboxed, a platform's HTML (a Laravel error page, Ignition) runs no script there", async () => {
    // The platform's own policy would let its page run anything, framed anywhere.
    sandbox.setFailure({ kind: 'status', status: 404, headers: { 'content-security-policy': 'default-src *', 'x-content-type-options': 'none' }, body: '<script>fetch("/api/v1/campaign/get")</script>', times: 1 })
    const page = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })
    expect(page.statusCode).toBe(404)
    expect(page.headers['content-type']).toBe('text/html; charset=UTF-8')
    // A gateway's own answer too (a 401 a browser shows, an unknown path, a proxied JSON answer).
    const refused = await call('GET', '/api/v1/campaign/get', { key: null })
    const unknown = await call('GET', '/nothing-here')
    const json = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })
    for (const res of [page, refused, unknown, json]) {
      expect(res.headers['x-content-type-options']).toBe('nosniff')
      expect(res.headers['content-security-policy']).toBe(ANSWER_POLICY)
    }
  })

  it("passes on none of the platform's instructions to a browser for its origin: service workers' scope, client hints, isolation, permissions, sign-in state, speculation", async () => {
    const browser = {
      'service-worker-allowed': '/',
      'accept-ch': 'Sec-CH-UA-Full-Version-List, Sec-CH-UA-Platform-Version',
      'critical-ch': 'Sec-CH-UA-Full-Version-List',
      'permissions-policy': 'camera=*, geolocation=*',
      'origin-agent-cluster': '?0',
      'cross-origin-opener-policy': 'unsafe-none',
      'cross-origin-embedder-policy': 'unsafe-none',
      'cross-origin-resource-policy': 'cross-origin',
      'x-permitted-cross-domain-policies': 'all',
      'x-dns-prefetch-control': 'on',
      'speculation-rules': '"https://platform.example/rules.json"',
      'supports-loading-mode': 'credentialed-prerender',
      'set-login': 'logged-in',
      'activate-storage-access': 'retry; allowed-origin="*"',
      // One query's answer would serve another from the browser's cache: another advertiser's report.
      'no-vary-search': 'params',
    }
    await answeredWithout(browser, { 'x-served-by': 'cache-fra-1' })
  })

  it("passes on nothing of the platform's internals: its software and versions, its timings, its debug profiler's links", async () => {
    const internals = {
      server: 'nginx/1.18.0 (Ubuntu)',
      'x-powered-by': 'PHP/8.1.2-1ubuntu2.14',
      'server-timing': 'db;dur=53;desc="mysql primary 10.0.3.7", app;dur=120',
      // Symfony's profiler (Laravel with it): the link opens every request's headers, the platform token among them.
      'x-debug-token': '4f2b1c',
      'x-debug-token-link': 'https://platform.example/_profiler/4f2b1c',
      // Laravel Debugbar's and Clockwork's ids and paths.
      'phpdebugbar-id': '01HQ6Z',
      'x-clockwork-id': '1700000000-0001',
      'x-clockwork-path': '/__clockwork/',
      'x-clockwork-version': '5',
    }
    await answeredWithout(internals, { 'x-served-by': 'cache-fra-1' })
  })

  it("passes on no challenge or authentication info of the platform's: they are of the gateway's token (or the platform's proxy), never the caller's key", async () => {
    const challenges = {
      'www-authenticate': 'Bearer realm="platform", error="insufficient_scope", scope="campaigns:write"',
      'authentication-info': 'nextnonce="abc"',
      'proxy-authenticate': 'Basic realm="platform egress"',
      'proxy-authentication-info': 'nextnonce="def"',
    }
    await answeredWithout(challenges, { 'x-served-by': 'cache-fra-1' })
    sandbox.setFailure({ kind: 'status', status: 403, headers: challenges, body: { message: 'This action is unauthorized.' }, times: 1 })
    const refused = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })
    expect(refused.statusCode).toBe(403)
    for (const name of Object.keys(challenges)) expect(refused.headers[name], name).toBeUndefined()
  })

  it('fails an answer that holds the token in a charset the scan does not read it in (502 GW_UPSTREAM): named by its content-type, or told by a byte-order mark', async () => {
    const utf16 = (text: string): string => Buffer.from(text, 'utf16le').toString('latin1')
    const reflected = JSON.stringify({ headers: { authorization: `Bearer ${platformToken}` } })
    const answers: [string, string][] = [
      ['application/json; charset=utf-16le', utf16(reflected)],
      ['text/html; charset=UTF-8', `\xff\xfe${utf16(reflected)}`],
      ['text/json; charset=utf-7', `+${Buffer.from(reflected, 'utf16le').swap16().toString('base64').replace(/=+$/, '')}-`],
    ]
    for (const [type, bytes] of answers) {
      sandbox.setFailure({ kind: 'raw', answer: `HTTP/1.1 200 OK\r\ncontent-type: ${type}\r\ncontent-length: ${bytes.length}\r\n\r\n${bytes}`, times: 1 })
      const res = await call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })
      expect(res.statusCode, type).toBe(502)
      expect(res.json()).toMatchObject({ code: 'GW_UPSTREAM' })
    }
  })

  it('passes a given x-request-id on to the platform and back', async () => {
    const res = await call('POST', '/api/v1/campaign/get', { headers: { 'x-request-id': 'trace-abc.123:x' }, json: {} })
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-request-id']).toBe('trace-abc.123:x')
    expect(only().headers['x-request-id']).toBe('trace-abc.123:x')
  })

  it('makes an x-request-id when none (or an unusable one) is given', async () => {
    const made = await call('POST', '/api/v1/campaign/get', { json: {} })
    const replaced = await call('POST', '/api/v1/campaign/get', { headers: { 'x-request-id': 'has spaces <script>' }, json: {} })
    for (const res of [made, replaced]) expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
    expect(made.headers['x-request-id']).not.toBe(replaced.headers['x-request-id'])
    expect(sandbox.requests.map((r) => r.headers['x-request-id'])).toEqual([made.headers['x-request-id'], replaced.headers['x-request-id']])
  })

  it('never lets a caller write into the id space of the gateway\'s own calls (ownership-, token-probe-, job-, refresh-ahead-)', async () => {
    const spoofs = ['ownership-1', 'token-probe-2', 'OWNERSHIP-3', 'Token-Probe-4', 'job-00abc123000145XyZ', 'Job-5', 'refresh-ahead-1764500000000', 'REFRESH-AHEAD-6']
    const answers = []
    for (const id of spoofs) answers.push(await call('POST', '/api/v1/campaign/get', { headers: { 'x-request-id': id }, json: {} }))
    for (const res of answers) expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
    expect(sandbox.requests.map((r) => r.headers['x-request-id'])).toEqual(answers.map((r) => r.headers['x-request-id']))
  })

  it('returns x-request-id on gateway errors too', async () => {
    const res = await call('GET', '/api/v1/campaign/get?advertiserId=999', { key: KEYS.growth, headers: { 'x-request-id': 'err-1' } })
    expect(res.statusCode).toBe(403)
    expect(res.headers['x-request-id']).toBe('err-1')
  })

  it('names a request without a key the gateway knows by an id of its own: whether it took the caller\'s would answer a guess at a secret', async () => {
    const res = await call('GET', '/api/v1/campaign/get', { key: 'rgw_unknown', headers: { 'x-request-id': 'err-1' } })
    expect(res.statusCode).toBe(401)
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })
})

describe('team keys', () => {
  // What a refused form says is key-forms.test.ts's: here, that each is the 401 and calls nothing.
  const formRefused = (problem: string) => `missing, unknown or revoked API key: ${problem}; send the key as x-api-key: <key> or authorization: Bearer <key>`
  it.each([
    ['no key', {}, formRefused('none given')],
    ['an unknown x-api-key', { 'x-api-key': 'rgw_not_a_key' }, expect.stringMatching(/^missing, unknown or revoked API key: no team of this gateway holds it; /)],
    ['an unknown Bearer key', { authorization: 'Bearer rgw_not_a_key' }, expect.stringMatching(/^missing, unknown or revoked API key: no team of this gateway holds it; /)],
    ['a Basic authorization', { authorization: `Basic ${Buffer.from(`${KEYS.all}:`).toString('base64')}` }, formRefused('authorization: the Basic scheme is not read, only Bearer')],
    ['an empty Bearer', { authorization: 'Bearer ' }, formRefused('authorization: Bearer without the key')],
    ['a blank x-api-key', { 'x-api-key': '   ' }, formRefused('none given')],
  ])('answers 401 GW_UNAUTHORIZED to %s and calls nothing', async (_name, headers: Record<string, string>, message) => {
    const res = await gw.proxy.inject({ method: 'GET', url: '/api/v1/campaign/list', headers })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toEqual({ statusCode: 401, code: 'GW_UNAUTHORIZED', error: 'Unauthorized', message })
    expect(sandbox.requests).toHaveLength(0)
  })

  it('refuses the platform token presented as a team key', async () => {
    const res = await call('POST', '/api/v1/campaign/get', { key: null, headers: { authorization: `Bearer ${platformToken}` }, json: {} })
    expect(res.statusCode).toBe(401)
    expect(sandbox.requests).toHaveLength(0)
  })

  it('accepts a key as x-api-key and as authorization: Bearer', async () => {
    const a = await call('POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId: 101 } })
    const b = await call('POST', '/api/v1/campaign/get', { key: null, headers: { authorization: `Bearer ${KEYS.growth}` }, json: { userId: 101 } })
    expect([a.statusCode, b.statusCode]).toEqual([200, 200])
    expect(b.body).toBe(a.body)
    expect(sandbox.requests).toHaveLength(2)
  })
})

describe('paths outside /api/v1/ and the token request', () => {
  it.each([
    ['GET', '/'],
    ['GET', '/api'],
    ['GET', '/api/v1'],
    ['GET', '/api/v2/campaign/get'],
    ['POST', '/oauth/token'],
    ['GET', '/oauth/token'],
    ['POST', TOKEN_URL_PATH],
    ['POST', `${TOKEN_URL_PATH}/`],
    ['POST', `${TOKEN_URL_PATH}?x=1`],
    ['POST', '/API/V1/Auth/Token'],
    ['POST', '/api/v1/auth/t%6Fken'],
    ['POST', '/api/v1/%61uth/token'],
  ] as [Method, string][])('answers 404 GW_NOT_FOUND to %s %s, with or without a key, and calls nothing', async (method, url) => {
    // Outside /api/v1/ the words say what the proxy listener serves (the token request's
    // path as any other); the token request's path under it is a bare not found.
    const message = url.startsWith('/api/v1/') ? 'not found' : expect.stringMatching(/^not found: this is the proxy listener \(/)
    for (const key of [KEYS.all, KEYS.writer, null]) {
      const res = await call(method, url, { key, json: { grant_type: 'platform_dsp' } })
      expect(res.statusCode).toBe(404)
      expect(res.json()).toEqual({ statusCode: 404, code: 'GW_NOT_FOUND', error: 'Not Found', message })
    }
    expect(sandbox.requests).toHaveLength(0)
  })

  it('answers OPTIONS * (RFC 9110, 9.3.7: the server at large, whose options depend on the resource) 404 GW_NOT_FOUND, with or without a key, and calls nothing', async () => {
    for (const key of [KEYS.all, null]) {
      const res = await sendRaw(gw.port as number, rawHttp('OPTIONS', '*', { key }), 3000)
      expect(res.status).toBe(404)
      expect(JSON.parse(res.body)).toMatchObject({ code: 'GW_NOT_FOUND' })
      expect(res.headers.allow).toBeUndefined()
    }
    expect(sandbox.requests).toHaveLength(0)
  })
})

describe('write permission', () => {
  it('refuses a campaign creation from a team without write: 403, nothing sent', async () => {
    for (const key of [KEYS.all, KEYS.growth]) {
      const res = await call('POST', '/api/v1/campaign/banner/create', { key, json: CAMPAIGN_FIELDS })
      expect(res.statusCode).toBe(403)
      expect(res.json()).toMatchObject({ statusCode: 403, code: 'GW_FORBIDDEN', error: 'Forbidden' })
      expect(res.json().message).toMatch(/may not send writes \(POST \/api\/v1\/campaign\/banner\/create\)/)
    }
    expect(sandbox.requests).toHaveLength(0)
  })

  it.each([
    ['DELETE', '/api/v1/campaign/banner/delete/1'],
    ['PUT', '/api/v1/campaign/1'],
    ['PATCH', '/api/v1/campaign/1'],
    ['POST', '/api/v1/campaign/banner/create?then=/get'],
    ['POST', '/api/v1/campaign/getter'],
  ] as [Method, string][])('treats %s %s as a write', async (method, url) => {
    const res = await call(method, url, { key: KEYS.all })
    expect(res.statusCode).toBe(403)
    expect(res.json().code).toBe('GW_FORBIDDEN')
    expect(sandbox.requests).toHaveLength(0)
  })

  it('answers OPTIONS itself and refuses TRACE, for the writer team too: nothing sent', async () => {
    for (const key of [KEYS.all, KEYS.writer]) {
      const options = await call('OPTIONS', '/api/v1/campaign/get', { key })
      expect(options.statusCode).toBe(204)
      expect(options.headers.allow).toBe('GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS')
      const trace = await call('TRACE', '/api/v1/campaign/get?userId=101', { key })
      expect(trace.statusCode).toBe(405)
      expect(trace.headers.allow).toBe('GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS')
      expect(trace.json()).toMatchObject({ statusCode: 405, code: 'GW_METHOD_NOT_ALLOWED', error: 'Method Not Allowed' })
    }
    expect(sandbox.requests).toHaveLength(0)
  })

  it('lets the writer team create and delete a campaign', async () => {
    const created = await call('POST', '/api/v1/campaign/banner/create', { key: KEYS.writer, json: CAMPAIGN_FIELDS })
    expect(created.statusCode).toBe(201)
    const id = (created.json() as { data: { id: number; userId: number } }).data.id
    expect(created.json().data.userId).toBe(101)
    // A scoped team must name its account, even where the platform's path names only a campaign.
    const unnamed = await call('DELETE', `/api/v1/campaign/banner/delete/${id}`, { key: KEYS.writer })
    expect(unnamed.statusCode).toBe(403)
    expect(unnamed.json().code).toBe('GW_FORBIDDEN')
    const deleted = await call('DELETE', `/api/v1/campaign/banner/delete/${id}?userId=101`, { key: KEYS.writer })
    expect(deleted.statusCode).toBe(200)
    expect(deleted.json()).toEqual({ message: 'Deleted' })
    // The gateway learns the new campaign's owner from the platform's list before the delete.
    const ownCalls = sandbox.requests.filter((r) => !String(r.headers['x-request-id']).startsWith('ownership-'))
    expect(ownCalls.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /api/v1/campaign/banner/create', `DELETE /api/v1/campaign/banner/delete/${id}`])
    expect(ownCalls[1]?.query).toBe('userId=101')
    expect(sandbox.requests.every((r) => r.headers.authorization === `Bearer ${platformToken}`)).toBe(true)
  })

  it('lets a team without write read: POST .../get and GET', async () => {
    const post = await call('POST', '/api/v1/campaign/get', { key: KEYS.growth, json: { userId: 102 } })
    expect(post.statusCode).toBe(200)
    expect((post.json() as { data: { userId: number }[] }).data.every((c) => c.userId === 102)).toBe(true)
    const trailing = await call('POST', '/api/v1/campaign/get/', { key: KEYS.growth, json: { userId: 102 } })
    expect(trailing.statusCode).not.toBe(403)
    // A route the gateway knows no placement of: a scoped team may not call it (ownership.accountRoutes), an unrestricted reader may.
    expect((await call('GET', '/api/v1/campaign/unknown?advertiserId=101', { key: KEYS.growth })).statusCode).toBe(403)
    const get = await call('GET', '/api/v1/campaign/unknown?advertiserId=101', { key: KEYS.all })
    expect(get.statusCode).toBe(404)
    expect(get.json()).toEqual({ message: 'Not Found' })
    expect(sandbox.requests).toHaveLength(3)
  })
})

describe('advertiser scoping', () => {
  it('refuses a scoped team a call that names no account (the platform would fall back to the parent)', async () => {
    const res = await call('POST', '/api/v1/campaign/get', { key: KEYS.growth, json: {} })
    expect(res.statusCode).toBe(403)
    expect(res.json().code).toBe('GW_FORBIDDEN')
    expect(sandbox.requests).toHaveLength(0)
    const all = await call('POST', '/api/v1/campaign/get', { key: KEYS.all, json: {} })
    expect(all.statusCode).toBe(200)
  })

  it('says where the account is read when a call names none there: the route\'s own field, in the query or at the top of the body', async () => {
    const message = async (method: Method, url: string, json?: unknown) => {
      const res = await call(method, url, json === undefined ? { key: KEYS.writer } : { key: KEYS.writer, json })
      expect(res.statusCode).toBe(403)
      return res.json().message as string
    }
    // campaign/get reads userId at the top of its body: advertiserId there is not read.
    expect(await message('POST', '/api/v1/campaign/get', { advertiserId: 101 })).toBe('team writer is limited to some advertisers: name userId at the top of the body')
    expect(await message('POST', '/api/v1/campaign/get', { filter: { userId: 101 } })).toBe('team writer is limited to some advertisers: name userId at the top of the body')
    // A body-less call reads either name in its query.
    expect(await message('DELETE', '/api/v1/campaign/banner/delete/101001')).toBe('team writer is limited to some advertisers: name advertiserId or userId in the query')
    // The POST form of a report is placed by its campaigns.
    expect(await message('POST', '/api/v1/report/campaigns/get', { userId: 101, dateFrom: '2026-01-01', dateTo: '2026-01-07' })).toBe('team writer is limited to some advertisers: name the report\'s campaigns in campaignIds at the top of the body')
    expect(sandbox.requests).toHaveLength(0)
  })

  const refused: [string, { url: string; json?: unknown; form?: string }][] = [
    ['query advertiserId', { url: '/api/v1/campaign/get?advertiserId=200', json: { userId: 101 } }],
    ['a second query advertiserId', { url: '/api/v1/campaign/get?advertiserId=101&advertiserId=201', json: {} }],
    ['query advertiserId[]', { url: '/api/v1/campaign/get?advertiserId%5B%5D=201', json: {} }],
    ['JSON userId', { url: '/api/v1/campaign/get', json: { userId: 201 } }],
    ['JSON userId as a string', { url: '/api/v1/campaign/get', json: { userId: '103' } }],
    ['JSON advertiserId', { url: '/api/v1/campaign/get', json: { advertiserId: 200 } }],
    ['nested JSON userId', { url: '/api/v1/campaign/get', json: { filter: { userId: 200 } } }],
    ['a JSON array of userIds', { url: '/api/v1/campaign/get', json: { userId: [101, 201] } }],
    ['a userId that is not a number', { url: '/api/v1/campaign/get', json: { userId: '101 OR 1=1' } }],
    ['form userId', { url: '/api/v1/campaign/get', form: 'userId=201' }],
    ['form advertiserId after an allowed one', { url: '/api/v1/campaign/get', form: 'advertiserId=101&advertiserId=200' }],
  ]
  it.each(refused)('refuses %s outside the team\'s accounts: 403, nothing sent', async (_name, req) => {
    const res = await call('POST', req.url, { key: KEYS.growth, ...req })
    expect(res.statusCode).toBe(403)
    expect(res.json()).toMatchObject({ statusCode: 403, code: 'GW_FORBIDDEN' })
    expect(sandbox.requests).toHaveLength(0)
  })

  it.each([
    ['refuses a body type other than JSON or form from a scoped team: 400', 'text/plain', '{"userId":201}'],
    ['answers 400 to an unparseable JSON body of a scoped team, without calling the platform', 'application/json', '{"userId":201'],
  ])('%s', async (_name, contentType, payload) => {
    const res = await gw.proxy.inject({
      method: 'POST',
      url: '/api/v1/campaign/get',
      headers: { 'x-api-key': KEYS.growth, 'content-type': contentType },
      payload,
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().code).toBe('GW_BAD_REQUEST')
    expect(sandbox.requests).toHaveLength(0)
  })

  it('lets allowed accounts through: query, JSON and form', async () => {
    const q = await call('POST', '/api/v1/campaign/get?advertiserId=101', { key: KEYS.growth, json: { userId: 101 } })
    const form = await call('POST', '/api/v1/campaign/get', { key: KEYS.growth, form: 'userId=102' })
    expect([q.statusCode, form.statusCode]).toEqual([200, 200])
    expect((form.json() as { data: { userId: number }[] }).data.every((c) => c.userId === 102)).toBe(true)
    expect(sandbox.requests.map((r) => r.body)).toEqual(['{"userId":101}', 'userId=102'])
  })

  it('refuses a write of the writer team for an account it may not use', async () => {
    const res = await call('POST', '/api/v1/campaign/banner/create', { key: KEYS.writer, json: { ...CAMPAIGN_FIELDS, userId: 102 } })
    expect(res.statusCode).toBe(403)
    expect(sandbox.requests).toHaveLength(0)
  })
})

describe('the platform\'s own answers', () => {
  it('passes a 422 validation body through untouched', async () => {
    const direct = await fetch(`${sandbox.url}/api/v1/campaign/banner/create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${platformToken}`, 'content-type': 'application/json', accept: 'application/json' },
      body: '{"userId":101}',
    })
    const expected = await direct.text()
    expect(direct.status).toBe(422)
    const res = await call('POST', '/api/v1/campaign/banner/create', { key: KEYS.writer, json: { userId: 101 } })
    expect(res.statusCode).toBe(422)
    expect(res.headers['content-type']).toBe('application/json')
    expect(res.body).toBe(expected)
    expect(res.json().errors.name).toBeDefined()
  })

  it('passes the platform\'s 403 for an account outside the token\'s tree through (unscoped team)', async () => {
    const res = await call('POST', '/api/v1/campaign/get', { key: KEYS.all, json: { userId: 201 } })
    expect(res.statusCode).toBe(403)
    expect(res.body).toBe('{"message":"This action is unauthorized."}')
    expect(only().body).toBe('{"userId":201}')
  })

  it('passes the platform\'s 404 and 429 through', async () => {
    const notFound = await call('GET', '/api/v1/nothing/here')
    expect(notFound.statusCode).toBe(404)
    expect(notFound.body).toBe('{"message":"Not Found"}')
    sandbox.setFailure({ kind: 'status', status: 429, headers: { 'retry-after': '1' }, times: 1 })
    const limited = await call('POST', '/api/v1/campaign/get', { json: {} })
    expect(limited.statusCode).toBe(429)
    expect(limited.headers['retry-after']).toBe('1')
    expect(limited.body).toBe('{"message":"Too Many Attempts."}')
    // The 429 paused its route; the next tests need it back.
    expect(gw.governors.paused('default', '/api/v1/campaign/get')).toBe(true)
    await waitFor('the pause to end', () => !gw.governors.paused('default', '/api/v1/campaign/get'))
  })
})

describe("the platform's framing (docs/decisions/platform-answer-framing.md)", () => {
  const raw = (head: string, body = '') => sandbox.setFailure({ kind: 'raw', answer: `${head}\r\n\r\n${body}`, times: 1 })
  const list = () => call('POST', '/api/v1/campaign/get', { json: { userId: 101 } })

  it('gives the caller the final answer alone: no 103 before it, none of its links, no trailer', async () => {
    raw('HTTP/1.1 103 Early Hints\r\nlink: <https://cdn.example/app.js>; rel=preload; as=script\r\n\r\nHTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11', '{"data":[]}')
    const hinted = await list()
    expect(hinted.statusCode).toBe(200)
    expect(hinted.body).toBe('{"data":[]}')
    expect(hinted.headers.link).toBeUndefined()
    raw('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\ntrailer: x-debug-token', 'b\r\n{"data":[]}\r\n0\r\nx-debug-token: 4f2b1c\r\n\r\n')
    const trailed = await list()
    expect(trailed.statusCode).toBe(200)
    expect(trailed.body).toBe('{"data":[]}')
    expect(trailed.headers['content-length']).toBe('11')
    expect(trailed.headers.trailer).toBeUndefined()
    expect(trailed.headers['x-debug-token']).toBeUndefined()
    expect(trailed.trailers).toEqual({})
  })

  it('ends an answer where its framing says: a 204 or a HEAD answer has no body, bytes past a content-length are no one\'s, and the next call gets its own answer', async () => {
    raw('HTTP/1.1 204 No Content\r\ncontent-length: 0', '{"leak":"of the next answer"}')
    const none = await list()
    expect(none.statusCode).toBe(204)
    expect(none.body).toBe('')
    raw('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11', '{"data":[]}HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{"x":"y"}')
    const long = await list()
    expect(long.body).toBe('{"data":[]}')
    const next = await list()
    expect(next.statusCode).toBe(200)
    expect(next.json()).toHaveProperty('meta')
    raw('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11', '{"data":[]}')
    const head = await call('HEAD', '/api/v1/campaign/list')
    expect(head.statusCode).toBe(200)
    expect(head.body).toBe('')
  })

  it('fails an answer shorter than its content-length (502 GW_UPSTREAM): no part of it reaches the caller or the cache', async () => {
    raw('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 40', '{"data":[')
    const short = await list()
    expect(short.statusCode).toBe(502)
    expect(short.json()).toMatchObject({ code: 'GW_UPSTREAM' })
    const report = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-03-20&dateTo=2026-03-21'
    raw('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 40', '{"data":[')
    expect((await call('GET', report)).statusCode).toBe(502)
    expect((await call('GET', report)).headers['x-cache']).toBe('MISS')
  })
})

describe('platform failures on a non-report call', () => {
  // A read is sent again twice after a 502 or 503, never after a 500.
  it.each([
    [500, 1],
    [502, 3],
    [503, 3],
  ])('turns a platform %i into 502 GW_UPSTREAM after %i call(s)', async (status, calls) => {
    sandbox.setFailure({ kind: 'status', status, body: '<html>upstream trace at /var/www/app.php</html>', times: calls })
    const res = await call('POST', '/api/v1/campaign/get', { json: {} })
    expect(sandbox.requests).toHaveLength(calls)
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ statusCode: 502, code: 'GW_UPSTREAM', error: 'Bad Gateway' })
    expect(res.body).not.toContain('/var/www')
    expect(res.headers['set-cookie']).toBeUndefined()
    expect(res.headers['x-request-id']).toBeDefined()
  })

  it("turns a platform 407 (a proxy before the platform asking the gateway for credentials) into 502 GW_UPSTREAM: no proxy-authenticate reaches a caller, whose client or browser would offer its own proxy's", async () => {
    const proxyAsks = { 'proxy-authenticate': 'Basic realm="platform egress"', 'www-authenticate': 'Basic realm="platform"' }
    sandbox.setFailure({ kind: 'status', status: 407, headers: proxyAsks, body: { message: 'Proxy Authentication Required' }, times: 1 })
    const res = await call('POST', '/api/v1/campaign/get', { json: {} })
    expect(sandbox.requests).toHaveLength(1)
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ statusCode: 502, code: 'GW_UPSTREAM' })
    expect(res.headers['proxy-authenticate']).toBeUndefined()
    // A report read's too: no copy of it is made.
    const report = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-03-10&dateTo=2026-03-11'
    sandbox.setFailure({ kind: 'status', status: 407, headers: proxyAsks, body: { message: 'Proxy Authentication Required' }, times: 1 })
    const read = await call('GET', report)
    expect(read.statusCode).toBe(502)
    expect(read.json()).toMatchObject({ code: 'GW_UPSTREAM' })
    expect(read.headers['proxy-authenticate']).toBeUndefined()
    expect((await call('GET', report)).headers['x-cache']).toBe('MISS')
  })

  it('turns a connection reset into 502 GW_UPSTREAM', async () => {
    sandbox.setFailure({ kind: 'reset', times: 3 })
    const res = await call('POST', '/api/v1/campaign/get', { json: {} })
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ statusCode: 502, code: 'GW_UPSTREAM' })
  })

  it('serves normally again after a failure', async () => {
    // Every attempt is reset (the read and its two retries): 502.
    sandbox.setFailure({ kind: 'reset' })
    expect((await call('POST', '/api/v1/campaign/get', { json: {} })).statusCode).toBe(502)
    sandbox.setFailure({ kind: 'none' })
    const res = await call('POST', '/api/v1/campaign/get', { json: {} })
    expect(res.statusCode).toBe(200)
  })
})

describe('a token URL written with a run of `/`', () => {
  // Sent as written, it is the route the platform's router reads as /api/v1/auth/token (a
  // run of `/` is one to it): that path is the token request's, however a caller spells it.
  const runGw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: platformToken, PLATFORM_TOKEN_URL: '/api/v1//auth/token' }, SANDBOX_TEAMS_YAML))
  beforeAll(() => sandbox.clearRequests())

  it.each([TOKEN_URL_PATH, `${TOKEN_URL_PATH}/`, '/api/v1/auth/t%6Fken'])('answers 404 GW_NOT_FOUND to POST %s and calls nothing', async (url) => {
    const res = await call('POST', url, { json: { grant_type: 'platform_dsp' } }, runGw)
    expect(res.statusCode).toBe(404)
    expect(res.json()).toMatchObject({ code: 'GW_NOT_FOUND' })
    expect(sandbox.requests).toHaveLength(0)
  })
})

describe('a platform call that hangs', () => {
  const TIMEOUT_MS = 1500
  const quickGw = useGateway(() =>
    testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: platformToken, PLATFORM_TOKEN_URL: TOKEN_URL_PATH }, `${SANDBOX_TEAMS_YAML}\nplatform: { timeout: ${TIMEOUT_MS}ms }\n`),
  )

  it('is answered 504 GW_UPSTREAM_TIMEOUT after the platform timeout', async () => {
    sandbox.setFailure({ kind: 'hang', times: 1 })
    const started = Date.now()
    const res = await call('POST', '/api/v1/campaign/get', { json: {} }, quickGw)
    const took = Date.now() - started
    expect(res.statusCode).toBe(504)
    expect(res.json()).toEqual({ statusCode: 504, code: 'GW_UPSTREAM_TIMEOUT', error: 'Gateway Timeout', message: 'the platform did not answer in time' })
    // Not before the platform timeout; the hang never ends, so the answer is the timeout's.
    expect(took).toBeGreaterThanOrEqual(TIMEOUT_MS - 50)
  })
})

describe('rate limit', () => {
  // A team's window is the clock's minute: this gateway's clock stands still (on real timers),
  // so the four calls fall in one window however long a loaded machine takes over them.
  const still = Date.now()
  const limitedGw = useGateway(
    () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: platformToken, PLATFORM_TOKEN_URL: TOKEN_URL_PATH }, SANDBOX_TEAMS_YAML),
    { deps: { clock: onRealTimers(() => still) } },
  )
  // Its start's token probe is its own call.
  beforeAll(() => sandbox.clearRequests())
  const limitedCall = (key: string) => call('POST', '/api/v1/campaign/get', { key, json: {} }, limitedGw)

  it('answers 429 GW_RATE_LIMITED with retry-after once the team used its budget', async () => {
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) statuses.push((await limitedCall(KEYS.limited)).statusCode)
    expect(statuses).toEqual([200, 200, 200])
    const res = await limitedCall(KEYS.limited)
    expect(res.statusCode).toBe(429)
    expect(res.json()).toMatchObject({ statusCode: 429, code: 'GW_RATE_LIMITED', error: 'Too Many Requests' })
    const retryAfter = Number(res.headers['retry-after'])
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(res.json().message).toBe(`rate limit reached; retry in ${retryAfter} s`)
    expect(sandbox.requests).toHaveLength(3)
    // Other teams have their own budget.
    expect((await limitedCall(KEYS.all)).statusCode).toBe(200)
  })
})

describe('path-spelling attacks never reach the platform outside /api/v1/', () => {
  const attacks = [
    '/api/v1/../oauth/token',
    '/api/v1/%2e%2e/oauth/token',
    '/api/v1/%2E%2e/oauth/token',
    '/api/v1/.%2E/oauth/token',
    '/api/v1//oauth/token',
    '/api/v1/..%2foauth%2ftoken',
    '/api/v1/report%2F..%2F..%2Foauth%2Ftoken',
    '/api/v1/..\\oauth\\token',
    '/api/v1/..%5coauth%5ctoken',
    '/api/v1/%252e%252e/oauth/token',
    '/api/v1/./campaign/get',
    '/api/v1/campaign/../../oauth/token',
    '/api/v1/report%00/x',
    '/api/v1/auth/t%6Fken',
    '//api/v1/campaign/get',
    '/api/v1/campaign/get/..',
  ]

  function expectNothingOutsideApi(): void {
    for (const r of sandbox.requests) {
      expect(r.path.startsWith('/api/v1/')).toBe(true)
      expect(r.path).not.toMatch(/\/\.\.?(\/|$)|%2e|%2f|%5c|\\|\/\//i)
    }
  }

  // light-my-request resolves the URL the way fetch does (dot segments, %2e, backslashes),
  // so some of these arrive as a plain /api/v1/ path: that may reach the platform, whose
  // answer is a 404, or a 405 for a known path with another method (as Laravel's).
  it.each(attacks)('through inject: %s', async (url) => {
    const res = await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all } })
    expectNothingOutsideApi()
    if (sandbox.requests.length === 0) {
      expect(res.statusCode).toBe(404)
      expect(res.json().code).toBe('GW_NOT_FOUND')
    } else {
      expect([404, 405]).toContain(res.statusCode)
      expect(res.json().message).toMatch(/^(Not Found|The GET method is not supported)/)
    }
  })

  it.each([...attacks, '/api/v1/report\u0000/x', 'http://127.0.0.1/api/v1/../oauth/token'])('over a raw socket: %j', async (target) => {
    const res = await rawRequest(target)
    // 404 from the gateway, or 400 where Node's HTTP parser refuses the request line first.
    expect([400, 404]).toContain(res.status)
    expectNothingOutsideApi()
    expect(sandbox.requests).toHaveLength(0)
  })

  it('forwards a plain path over a raw socket, without the platform\'s hop-by-hop headers', async () => {
    // rawRequest resolves when the gateway closes the connection, as the caller's
    // `Connection: close` asks; a forwarded `connection: keep-alive` would hang it.
    const res = await rawRequest('/api/v1/campaign/unknown')
    expect(res.status).toBe(404)
    expect(res.text).toContain('{"message":"Not Found"}')
    expect(res.text.toLowerCase()).not.toMatch(/\r\nkeep-alive:|\r\nconnection: keep-alive/)
    expect(sandbox.requests.map((r) => r.path)).toEqual(['/api/v1/campaign/unknown'])
  })
})

describe('an absolute-form request target (RFC 9112, 3.2.2)', () => {
  it.each([
    ['http://evil.example/api/v1/campaign/unknown', '/api/v1/campaign/unknown'],
    ['HTTPS://user@evil.example:8443/api/v1/campaign/unknown?userId=101', '/api/v1/campaign/unknown?userId=101'],
  ])('is served as its path and query, whatever its authority: %s', async (target, forwarded) => {
    const res = await rawRequest(target)
    expect(res.status).toBe(404)
    expect(res.text).toContain('{"message":"Not Found"}')
    expect(sandbox.requests.map((r) => r.path + (r.query ? `?${r.query}` : ''))).toEqual([forwarded])
  })

  it('with no path is the root, answered by the gateway', async () => {
    const res = await rawRequest('http://evil.example')
    expect(res.status).toBe(404)
    expect(JSON.parse(res.body)).toMatchObject({ code: 'GW_NOT_FOUND' })
    expect(sandbox.requests).toHaveLength(0)
  })
})

describe('a path that is no percent-encoding', () => {
  it.each(['/api/v1/campaign/%zz', '/api/v1/report/campaigns/%E0%A4%A', '/api/v1/jobs/%', '/%zz'])('is 400 GW_BAD_REQUEST with a request id on the proxy listener, never a framework code: %s', async (target) => {
    const res = await rawRequest(target)
    expect(res.status).toBe(400)
    expect(JSON.parse(res.body)).toEqual({ statusCode: 400, code: 'GW_BAD_REQUEST', error: 'Bad Request', message: 'request target: the path is not valid percent-encoding' })
    expect(res.headers['x-request-id']).toBeTruthy()
    expect(sandbox.requests).toHaveLength(0)
  })

  it('is 400 GW_BAD_REQUEST on the admin listener too', async () => {
    const res = await gw.admin.inject({ method: 'GET', url: '/admin/%zz' })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ statusCode: 400, code: 'GW_BAD_REQUEST' })
    expect(res.headers['x-request-id']).toBeTruthy()
  })
})

describe('health on both listeners', () => {
  it.each(['proxy', 'admin'] as const)('%s answers /healthz and /readyz without a key', async (listener) => {
    const app = gw[listener]
    const health = await app.inject({ method: 'GET', url: '/healthz' })
    expect(health.statusCode).toBe(200)
    expect(health.json()).toEqual({ status: 'ok' })
    const ready = await app.inject({ method: 'GET', url: '/readyz' })
    expect(ready.statusCode).toBe(200)
    // The proxy listener answers anyone: its readiness names no credential nor Redis's state.
    expect(ready.json()).toEqual(listener === 'proxy' ? { status: 'ready' } : { status: 'ready', platformToken: { default: 'ok' }, redis: 'not configured', degraded: [] })
    expect(sandbox.requests).toHaveLength(0)
  })

  // Each tells this replica's state at the moment it is asked: a shared cache in front (a
  // CDN, a caching proxy) that kept one would answer a stale readiness or stale metrics.
  it.each([
    ['proxy', '/healthz'],
    ['proxy', '/readyz'],
    ['admin', '/healthz'],
    ['admin', '/readyz'],
    ['admin', '/metrics'],
  ] as const)('%s %s is answered cache-control: no-store', async (listener, url) => {
    const res = await gw[listener].inject({ method: 'GET', url })
    expect([res.statusCode, res.headers['cache-control']]).toEqual([200, 'no-store'])
  })

  it('answers /healthz over real HTTP on the proxy listener', async () => {
    const res = await fetch(new URL('/healthz', gw.url))
    expect(res.status).toBe(200)
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
  })
})
