import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

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
