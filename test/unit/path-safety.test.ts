import { describe, expect, it } from 'vitest'
import { isSafeApiPath, isTokenPath, pathOf, tokenPaths } from '../../src/access/path-safety.js'
import { checkTarget } from '../../src/access/request-target.js'
import { tokenRequestUrl } from '../../src/platform/tokens/password-login.js'

// Contract, "Calling it": only /api/v1/* is forwarded, and the token request is not
// reachable. A path is refused when any decoding or normalization on the way (the
// proxy's URL handling, a front proxy, the platform's router) could turn it into
// something outside /api/v1/.

describe('isSafeApiPath', () => {
  const attacks: [string, string][] = [
    ['dot-dot segment', '/api/v1/../oauth/token'],
    ['dot-dot at the end', '/api/v1/report/..'],
    ['dot-dot deeper', '/api/v1/report/../../oauth/token'],
    ['dot segment', '/api/v1/./x'],
    ['dot segment at the end', '/api/v1/report/.'],
    ['encoded dot-dot', '/api/v1/%2e%2e/oauth/token'],
    ['encoded dot-dot, mixed case', '/api/v1/%2E%2e/oauth/token'],
    ['encoded dot-dot, upper case', '/api/v1/%2E%2E/oauth/token'],
    ['half-encoded dot-dot', '/api/v1/.%2e/oauth/token'],
    ['encoded dot', '/api/v1/%2e/x'],
    ['double slash', '/api/v1//oauth/token'],
    ['double slash in the middle', '/api/v1/report//x'],
    ['encoded slash', '/api/v1/..%2foauth%2ftoken'],
    ['encoded slash, upper case', '/api/v1/report%2F..%2F..%2Foauth%2Ftoken'],
    ['backslash', '/api/v1/..\\oauth\\token'],
    ['backslash alone', '/api/v1\\..\\oauth/token'],
    ['encoded backslash', '/api/v1/..%5coauth%5ctoken'],
    ['encoded backslash, upper case', '/api/v1/..%5Coauth'],
    ['double-encoded dot', '/api/v1/%252e%252e/oauth/token'],
    ['double-encoded slash', '/api/v1/..%252foauth'],
    ['NUL', '/api/v1/report\u0000/x'],
    ['encoded NUL', '/api/v1/report%00/x'],
    ['newline', '/api/v1/report\n/x'],
    ['a raw tab', '/api/v1/report\t/x'],
    ['DEL', '/api/v1/report\u007f'],
    ['outside /api/v1/', '/oauth/token'],
    ['the prefix without its slash', '/api/v1'],
    ['a look-alike prefix', '/api/v10/report'],
    ['another version', '/api/v2/report/x'],
    ['upper case prefix', '/API/V1/report/x'],
    ['leading double slash', '//api/v1/report/x'],
    ['absolute-form URL', 'http://evil.example/api/v1/report/x'],
    ['empty', ''],
  ]
  it.each(attacks)('refuses %s: %j', (_name, path) => {
    expect(isSafeApiPath(path)).toBe(false)
  })

  const legit: [string, string][] = [
    ['a report', '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07'],
    ['campaign list', '/api/v1/campaign/get'],
    ['delete with an id', '/api/v1/campaign/banner/delete/123'],
    ['the prefix itself', '/api/v1/'],
    ['a trailing slash', '/api/v1/campaign/get/'],
    ['dots inside a segment', '/api/v1/files/report.v2.csv'],
    ['three dots', '/api/v1/x/...'],
    ['a dotted segment name', '/api/v1/.well-known'],
    ['an encoded space', '/api/v1/search/a%20b'],
    ['dot-dot and slashes in the query only', '/api/v1/report/x?next=../../oauth/token&p=a//b&q=%2e%2e%2f'],
  ]
  it.each(legit)('accepts %s: %s', (_name, path) => {
    expect(isSafeApiPath(path)).toBe(true)
  })
})

describe('pathOf', () => {
  it('drops the query string only', () => {
    expect(pathOf('/api/v1/x?a=1?b')).toBe('/api/v1/x')
    expect(pathOf('/api/v1/x')).toBe('/api/v1/x')
  })
})

describe('token paths', () => {
  const base = 'https://platform.example.com'

  it('always include /oauth/token, and the configured paths on the base address', () => {
    expect(tokenPaths(base, ['/api/v1/auth/token', `${base}/api/v1/Login/`, 'https://sso.example.com/token'])).toEqual(new Set(['/oauth/token', '/api/v1/auth/token', '/api/v1/login']))
  })

  // A token URL on another host than every base address the proxy sends to is no path of
  // the platform's: the platform's route of that path is passed on (docs/decisions/token-url-under-the-api.md).
  it('leave out a token URL on a host no proxied call goes to; keep one on any credential\'s base host, whatever its scheme or port', () => {
    const other = 'https://platform-b.example.com'
    const urls = [`https://sso.example.com/api/v1/sso/token`, `${other}/api/v1/b/token`, `HTTPS://PLATFORM.example.com:443/api/v1/a/token`, 'http://platform.example.com:8080/api/v1/c/token']
    expect(tokenPaths(base, urls)).toEqual(new Set(['/oauth/token', '/api/v1/a/token', '/api/v1/c/token']))
    expect(tokenPaths([base, other], urls)).toEqual(new Set(['/oauth/token', '/api/v1/b/token', '/api/v1/a/token', '/api/v1/c/token']))
    expect(isTokenPath('/api/v1/sso/token', tokenPaths([base, other], urls))).toBe(false)
  })

  const blocked = tokenPaths(base, ['/api/v1/auth/token'])
  const spellings: [string, string][] = [
    ['as configured', '/api/v1/auth/token'],
    ['with a trailing slash', '/api/v1/auth/token/'],
    ['with a query', '/api/v1/auth/token?grant_type=x'],
    ['in other case', '/API/v1/Auth/TOKEN'],
    ['with a percent-encoded letter', '/api/v1/auth/t%6Fken'],
    ['with percent-encoded upper-case letters', '/api/v1/%41uth/%54oken'],
    ['with a whole segment encoded', '/api/v1/%61%75%74%68/token'],
  ]
  it.each(spellings)('match the token path %s: %s', (_name, path) => {
    expect(isTokenPath(path, blocked)).toBe(true)
  })

  it('do not match other paths', () => {
    expect(isTokenPath('/api/v1/auth/tokens', blocked)).toBe(false)
    expect(isTokenPath('/api/v1/auth', blocked)).toBe(false)
    expect(isTokenPath('/api/v1/report/x', blocked)).toBe(false)
    // A malformed escape is not decodable; it is compared as sent, not thrown on.
    expect(isTokenPath('/api/v1/auth/%zz', blocked)).toBe(false)
  })

  // However the token URL is written, the path its login is sent to (password-login.ts,
  // resolved as the platform's router reads it: trailing slashes trimmed) is refused as a
  // caller's target, as is its spelling with a trailing slash.
  const configured: [string, string][] = [
    ['a trailing slash', '/api/v1/auth/token/'],
    ['two trailing slashes', '/api/v1/auth/token//'],
    ['a dot-dot segment', '/api/v1/x/../auth/token'],
    ['a dot segment', '/api/v1/auth/./token'],
    ['an encoded dot-dot segment', '/api/v1/x/%2e%2E/auth/token'],
    ['a dot-dot segment after the token segment', '/api/v1/auth/token/../token/'],
    ['backslashes', '/api/v1\\auth\\token'],
    ['a tab', '/api/v1/auth/to\tken'],
    ['an encoded letter', '/api/v1/auth/%74oken'],
    ['a query', '/api/v1/auth/token?scope=x'],
    ['the whole URL, host in upper case, default port, trailing slash', 'https://PLATFORM.example.com:443/api/v1/auth/token/'],
  ]
  it.each(configured)('refuse the path the login is sent to, the token URL written with %s: %j', (_name, tokenUrl) => {
    const paths = tokenPaths(base, [tokenUrl])
    const sent = tokenRequestUrl(base, tokenUrl).pathname.replace(/\/+$/, '')
    expect(decodeURIComponent(sent)).toBe('/api/v1/auth/token')
    for (const spelled of [sent, `${sent}/`]) expect(isTokenPath(checkTarget(spelled, 10).path, paths), spelled).toBe(true)
  })

  // The platform's router reads a run of `/` as one (canonical-path.ts): a token URL written
  // with one is sent to the token path as the router reads it, which a caller spells
  // without the run (a caller's `//` is refused 404 before this rule).
  const doubled: [string, string][] = [
    ['a doubled slash inside', '/api/v1//auth/token'],
    ['a tripled slash inside', '/api/v1/auth///token'],
    ['a doubled slash in the whole URL', `${base}/api//v1/auth/token`],
    ['a doubled slash and an escaped letter', '/api/v1//auth/t%6Fken'],
  ]
  it.each(doubled)('refuse the path the platform reads, the token URL written with %s: %j', (_name, tokenUrl) => {
    const paths = tokenPaths(base, [tokenUrl])
    for (const spelled of ['/api/v1/auth/token', '/api/v1/auth/token/', '/api/v1/auth/t%6Fken', '/api/v1/Auth/TOKEN']) expect(isTokenPath(checkTarget(spelled, 10).path, paths), spelled).toBe(true)
    expect(isTokenPath(checkTarget('/api/v1/auth/tokens', 10).path, paths)).toBe(false)
  })
})
