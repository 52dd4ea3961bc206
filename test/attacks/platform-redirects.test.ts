import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { itLoggedNoSecret, REPORT_DATES, useAttackGateway } from './attack-gateway.js'

// A URL the platform hands back (location, content-location, link, refresh) is put on
// the gateway when it names the platform's own address, so that a client that follows
// it (curl -L, fetch) comes back to the gateway with its team key. The platform may name
// its host in another spelling than PLATFORM_BASE_URL: as a network-path reference
// (`//host:port/…`, or `/\host/…`, which URL parsers read alike), or with another scheme
// or port. Laravel's default public/.htaccess (laravel/laravel) redirects a path with a
// trailing slash (`RewriteRule ^(.*)/$ /$1 [L,R=301]`), which Apache writes with its own
// scheme, and Laravel's URL generator (a paginator's links) uses the request's: `http`
// behind a load balancer that ends TLS, where PLATFORM_BASE_URL says `https`. A client
// that followed such a location sent its team key to the platform's host, in the clear.

const sg = useAttackGateway()

async function redirected(location: string): Promise<Response> {
  sg.sandbox.setFailure({ kind: 'status', status: 301, headers: { location, link: `<${location}>; rel="next"` }, body: { message: 'moved' }, times: 1 })
  return fetch(`${sg.url}/api/v1/campaign/get`, { method: 'POST', redirect: 'manual', headers: { 'x-api-key': KEYS.writer, 'content-type': 'application/json' }, body: '{"userId":101}' })
}

describe('a platform redirect naming the platform\'s host in another spelling', () => {
  it('is put on the gateway: a network-path reference, another scheme, another port', async () => {
    const platform = new URL(sg.sandbox.url)
    const spellings = [
      `//${platform.host}/api/v1/campaign/get?page=2`,
      `/\\${platform.host}/api/v1/campaign/get?page=2`,
      `https://${platform.host}/api/v1/campaign/get?page=2`,
      `http://${platform.hostname}/api/v1/campaign/get?page=2`,
      `http://${platform.hostname}:1/api/v1/campaign/get?page=2`,
    ]
    for (const location of spellings) {
      const res = await redirected(location)
      expect(res.status, location).toBe(301)
      expect(res.headers.get('location'), location).toBe('/api/v1/campaign/get?page=2')
      expect(res.headers.get('link'), location).toBe('</api/v1/campaign/get?page=2>; rel="next"')
      // Followed from the gateway's own URL, it stays there.
      expect(new URL(res.headers.get('location') ?? '', sg.url).host).toBe(new URL(sg.url).host)
    }
  })

  it('another host\'s, and a path of the gateway\'s, are passed on as the platform sent them', async () => {
    for (const location of ['//files.example/report.csv', 'https://files.example/report.csv', '/api/v1/campaign/get?page=2', 'get?page=2']) {
      const res = await redirected(location)
      expect(res.headers.get('location'), location).toBe(location)
    }
  })
})

// A platform redirect's content names where it leads in the platform's own address: Laravel's
// `redirect()` is Symfony's RedirectResponse, whose page names its URL three times (a signed
// URL's query escaped, `&amp;`), and Apache's trailing-slash 301 (Laravel's public/.htaccess)
// writes its own page. The gateway puts `location` on its own path; the page it does not
// rewrite, and a caller gets none of it: no content, `content-length: 0`, no content-type.
describe('a platform redirect\'s content', () => {
  const signed = (host: string) => `http://${host}/api/v1/campaign/get?page=2&expires=1900000000&signature=5f0c2a`
  const apachePage = (url: string) => `<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n<title>301 Moved Permanently</title>\n</head><body>\n<h1>Moved Permanently</h1>\n<p>The document has moved <a href="${url}">here</a>.</p>\n</body></html>\n`
  const seen = async (res: Response) => ({
    status: res.status,
    location: res.headers.get('location'),
    type: res.headers.get('content-type'),
    length: res.headers.get('content-length'),
    body: await res.text(),
  })

  it('the sandbox writes Symfony\'s RedirectResponse: its page names the URL, escaped as htmlspecialchars does', async () => {
    const platform = new URL(sg.sandbox.url)
    sg.sandbox.setFailure({ kind: 'redirect', location: signed(platform.host), times: 1 })
    const res = await fetch(`${sg.sandbox.url}/api/v1/campaign/get`, { method: 'POST', redirect: 'manual', headers: { authorization: `Bearer ${sg.sandbox.issueToken()}`, 'content-type': 'application/json' }, body: '{"userId":101}' })
    expect([res.status, res.headers.get('location'), res.headers.get('content-type')]).toEqual([302, signed(platform.host), 'text/html; charset=utf-8'])
    const escaped = signed(platform.host).replaceAll('&', '&amp;')
    expect(await res.text()).toBe(`<!DOCTYPE html>\n<html>\n    <head>\n        <meta charset="UTF-8" />\n        <meta http-equiv="refresh" content="0;url='${escaped}'" />\n\n        <title>Redirecting to ${escaped}</title>\n    </head>\n    <body>\n        Redirecting to <a href="${escaped}">${escaped}</a>.\n    </body>\n</html>`)
  })

  it('reaches a proxied call\'s caller as no content, its location on the gateway: Symfony\'s page, Apache\'s, asked with GET, POST or HEAD', async () => {
    const platform = new URL(sg.sandbox.url)
    const asks: [string, string, string | undefined][] = [['POST', '/api/v1/campaign/get', '{"userId":101}'], ['GET', '/api/v1/campaign/get?userId=101', undefined], ['HEAD', '/api/v1/campaign/get?userId=101', undefined]]
    for (const [method, path, body] of asks) {
      for (const answer of ['symfony', 'apache'] as const) {
        if (answer === 'symfony') sg.sandbox.setFailure({ kind: 'redirect', status: 301, location: signed(platform.host), times: 1 })
        else sg.sandbox.setFailure({ kind: 'status', status: 301, headers: { location: signed(platform.host) }, body: apachePage(signed(platform.host)), times: 1 })
        const res = await fetch(`${sg.url}${path}`, { method, redirect: 'manual', headers: { 'x-api-key': KEYS.writer, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body }) })
        expect(await seen(res), `${method} ${answer}`).toEqual({ status: 301, location: '/api/v1/campaign/get?page=2&expires=1900000000&signature=5f0c2a', type: null, length: '0', body: '' })
      }
    }
  })

  it('reaches a report read\'s caller as no content (x-cache: BYPASS), GET or HEAD, and the next read is the platform\'s again', async () => {
    const platform = new URL(sg.sandbox.url)
    const report = `/api/v1/report/campaigns/get?advertiserId=101&${REPORT_DATES}`
    for (const method of ['GET', 'HEAD']) {
      sg.sandbox.setFailure({ kind: 'redirect', location: `http://${platform.host}${report}&page=2`, times: 1 })
      const res = await fetch(`${sg.url}${report}`, { method, redirect: 'manual', headers: { 'x-api-key': KEYS.all } })
      expect([res.headers.get('x-cache'), await seen(res)], method).toEqual(['BYPASS', { status: 302, location: `${report}&page=2`, type: null, length: '0', body: '' }])
    }
    const after = await fetch(`${sg.url}${report}`, { headers: { 'x-api-key': KEYS.all } })
    expect([after.status, after.headers.get('x-cache')]).toEqual([200, 'MISS'])
  })
})

// A redirect holds no report and no page: none of the headers that speak of a content's
// figures or its version reaches the caller. A report read's redirect still says what its
// platform call cost (`platform-usage`: the call was made, and counts in the team's day),
// not which of a report's figures may change (`report-settled-through`,
// `report-provisional-days`: it has none); a platform's validators (`last-modified`,
// `etag`) name the page or resource the caller does not get, and a client that kept them
// would send them back (`if-modified-since`) for a report they never dated.
describe('what a platform redirect says besides its location', () => {
  const dated = { 'last-modified': 'Wed, 21 Oct 2015 07:28:00 GMT', etag: '"moved-page"' }
  const told = (res: Response) => Object.fromEntries(['location', 'platform-usage', 'report-settled-through', 'report-provisional-days', 'last-modified', 'etag'].map((h) => [h, res.headers.get(h)]))

  it('a report read\'s: what its call cost, no finality and no validator, GET or HEAD', async () => {
    for (const [i, method] of ['GET', 'HEAD'].entries()) {
      const report = `/api/v1/report/campaigns/get?advertiserId=102&dateFrom=2026-01-0${i + 1}&dateTo=2026-01-09`
      sg.sandbox.setFailure({ kind: 'redirect', location: '/elsewhere', headers: dated, times: 1 })
      const res = await fetch(`${sg.url}${report}`, { method, redirect: 'manual', headers: { 'x-api-key': KEYS.all } })
      expect([res.status, res.headers.get('x-cache')], method).toEqual([302, 'BYPASS'])
      expect(told(res), method).toEqual({ location: '/elsewhere', 'platform-usage': expect.stringMatching(/^fill=\d+\.\d{3}, minute=/), 'report-settled-through': null, 'report-provisional-days': null, 'last-modified': null, etag: null })
    }
    // A report's own answer says its finality, as ever.
    const report = await fetch(`${sg.url}/api/v1/report/campaigns/get?advertiserId=102&dateFrom=2026-01-01&dateTo=2026-01-09`, { headers: { 'x-api-key': KEYS.all } })
    expect([report.status, report.headers.get('report-settled-through'), report.headers.get('report-provisional-days')]).toEqual([200, expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/), expect.any(String)])
  })

  it('a proxied call\'s: no validator, its caching as the platform said it and private to the key, GET, POST or HEAD', async () => {
    const asks: [string, string, string | undefined][] = [['POST', '/api/v1/campaign/get', '{"userId":101}'], ['GET', '/api/v1/campaign/get?userId=101', undefined], ['HEAD', '/api/v1/campaign/get?userId=101', undefined]]
    for (const [method, path, body] of asks) {
      sg.sandbox.setFailure({ kind: 'redirect', status: 301, location: '/elsewhere', headers: { ...dated, 'cache-control': 'max-age=60', expires: 'Wed, 21 Oct 2037 07:28:00 GMT' }, times: 1 })
      const res = await fetch(`${sg.url}${path}`, { method, redirect: 'manual', headers: { 'x-api-key': KEYS.writer, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body }) })
      expect([res.status, res.headers.get('cache-control'), res.headers.get('expires')], method).toEqual([301, 'max-age=60, private', 'Wed, 21 Oct 2037 07:28:00 GMT'])
      expect(told(res), method).toEqual({ location: '/elsewhere', 'platform-usage': null, 'report-settled-through': null, 'report-provisional-days': null, 'last-modified': null, etag: null })
    }
  })
})

// Laravel answers a failed validation with a 302 back to the previous URL (the referer, else
// the app's root, `http://<platform host>`, its body Symfony's page naming it) unless the
// request expects JSON (Illuminate\Http\Concerns\InteractsWithContentTypes::expectsJson:
// `X-Requested-With: XMLHttpRequest` with an `Accept` of any type, or an `Accept` whose first
// type is JSON). The gateway sends `accept: application/json` on every call, whatever the
// caller's `Accept` (which alone decides it: no `X-Requested-With` is needed), and no
// referer: a caller gets the platform's 422 naming the fields, never a redirect to the
// platform's root.
describe('a platform validation error', () => {
  const invalid = JSON.stringify({ userId: 101 })
  it('the sandbox answers as Laravel does: a 302 to its root unless the request expects JSON', async () => {
    const platform = new URL(sg.sandbox.url)
    const ask = (headers: Record<string, string>) => fetch(`${sg.sandbox.url}/api/v1/campaign/banner/create`, {
      method: 'POST', redirect: 'manual', body: invalid, headers: { authorization: `Bearer ${sg.sandbox.issueToken()}`, 'content-type': 'application/json', ...headers },
    })
    const redirected: Record<string, string>[] = [{}, { accept: '*/*' }, { accept: 'text/html' }, { accept: 'text/html', 'x-requested-with': 'XMLHttpRequest' }, { accept: 'application/json;q=0.5, text/html' }]
    for (const headers of redirected) {
      const res = await ask(headers)
      expect([res.status, res.headers.get('location'), res.headers.get('content-type')], JSON.stringify(headers)).toEqual([302, `http://${platform.host}`, 'text/html; charset=utf-8'])
      expect(await res.text()).toContain(`Redirecting to <a href="http://${platform.host}">`)
    }
    const back = await ask({ referer: 'https://app.example/form' })
    expect([back.status, back.headers.get('location')]).toEqual([302, 'https://app.example/form'])
    const answeredJson: Record<string, string>[] = [{ accept: 'application/json' }, { accept: 'application/vnd.api+json, text/html' }, { 'x-requested-with': 'XMLHttpRequest' }, { accept: '*/*', 'x-requested-with': 'XMLHttpRequest' }]
    for (const headers of answeredJson) {
      const res = await ask(headers)
      expect([res.status, res.headers.get('content-type')], JSON.stringify(headers)).toEqual([422, 'application/json'])
    }
  })

  it.each([
    ['no accept', {}],
    ['accept: */*', { accept: '*/*' }],
    ['accept: text/html', { accept: 'text/html,application/xhtml+xml' }],
    ['a referer', { accept: 'text/html', referer: 'https://app.example/form' }],
  ])('with %s from the caller: the platform\'s 422 naming the fields, never a redirect', async (_what, headers) => {
    const res = await fetch(`${sg.url}/api/v1/campaign/banner/create`, {
      method: 'POST', redirect: 'manual', body: invalid, headers: { 'x-api-key': KEYS.writer, 'content-type': 'application/json', ...headers },
    })
    expect([res.status, res.headers.get('location'), res.headers.get('content-type')]).toEqual([422, null, 'application/json'])
    expect(((await res.json()) as { errors: Record<string, unknown> }).errors.name).toBeDefined()
    const [seen] = sg.sandbox.requests
    expect([seen?.headers.accept, seen?.headers.referer]).toEqual(['application/json', undefined])
  })
})

itLoggedNoSecret(sg)
