import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { CredentialConfig } from '../../src/config.js'
import { jwtSubject } from '../../src/platform/tokens/token-expiry.js'
import { TokenProvider, type TokenOrigin, type TokenProviderDeps, type TokenState } from '../../src/platform/tokens/token-provider.js'

// The account a credential's calls act for, which a report copy's key holds: a token of
// another account under the same credential name reads none of the first account's copies,
// and a rotation within one account keeps them where the token says whose it is.

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url')
/** A Passport-shaped JWT (sub: the user), its signature junk: the gateway never verifies it. */
const jwt = (claims: Record<string, unknown>): string => `${b64({ typ: 'JWT', alg: 'RS256' })}.${b64(claims)}.c2ln`

const BASE = 'http://platform.test'
const LOGIN = { username: 'ops@acme.test', password: 'pw', clientId: 2, clientSecret: 'cs', tokenUrl: `${BASE}/oauth/token`, grantType: 'platform_dsp' }

/** The account of a credential not started yet: its configured token's (or login's). */
function accountOf(credential: Partial<CredentialConfig>): string {
  // `account` reads the credential and the token alone: no dependency is used before start().
  return new TokenProvider({ name: 'default', baseUrl: BASE, token: null, tokenFile: null, login: null, ...credential }, {} as TokenProviderDeps).account
}

describe('jwtSubject', () => {
  it.each([
    ['a string sub', jwt({ sub: '100', exp: 1 }), '100'],
    ['a number sub', jwt({ sub: 100 }), '100'],
    ['no sub', jwt({ exp: 1 }), null],
    ['an empty sub', jwt({ sub: '' }), null],
    ['an opaque token', 'f3a9c2d1e0b87a6554433221100ffeeddccbbaa9', null],
    ['a payload that is not JSON', `${b64({ alg: 'RS256' })}.bm90IGpzb24.sig`, null],
  ])('%s', (_label, token, want) => {
    expect(jwtSubject(token)).toBe(want)
  })
})

describe('TokenProvider.account', () => {
  it('is a JWT\'s sub on the base URL: another token of the same user is the same account, another user another', () => {
    const acme = accountOf({ token: jwt({ sub: '100', jti: 'a' }) })
    expect(accountOf({ token: jwt({ sub: '100', jti: 'b', exp: 2 }) })).toBe(acme)
    expect(accountOf({ token: jwt({ sub: '200', jti: 'a' }) })).not.toBe(acme)
    expect(accountOf({ token: jwt({ sub: '100', jti: 'a' }), baseUrl: 'http://other-brand.test' })).not.toBe(acme)
  })

  it('is the token itself, by digest, for a token that names no user', () => {
    const one = accountOf({ token: 'opaque-token-one-0123456789' })
    expect(one).not.toContain('opaque-token-one')
    expect(accountOf({ token: 'opaque-token-two-0123456789' })).not.toBe(one)
    expect(accountOf({ token: 'opaque-token-one-0123456789' })).toBe(one)
  })

  it('is this process\'s own while no token is known (a token file not read yet): no other start shares it', () => {
    const file = { tokenFile: '/run/secrets/platform-token' }
    expect(accountOf(file)).not.toBe(accountOf(file))
  })

  it('is a password login\'s login, whatever token it holds: another username is another account', () => {
    const login = accountOf({ login: LOGIN })
    expect(accountOf({ login: LOGIN, token: jwt({ sub: '100' }) })).toBe(login)
    expect(accountOf({ login: { ...LOGIN, username: 'ops@northwind.test' } })).not.toBe(login)
    expect(login).not.toContain(LOGIN.username)
  })

  it('is, for a token an operator put on a password login\'s credential, that token\'s own; the login\'s tokens stay the login\'s', () => {
    const provider = new TokenProvider({ name: 'default', baseUrl: BASE, token: null, tokenFile: null, login: LOGIN }, {} as TokenProviderDeps)
    const state = (token: string, reason: TokenOrigin['reason']): TokenState => ({ token, source: 'shared', fingerprint: 'f', obtainedAt: 0, expiresAt: 1, version: 1, basis: 1, origin: { reason, actor: null, replica: null } })
    const login = provider.account
    const put = jwt({ sub: '200' })
    expect(provider.accountOf(state(put, 'admin'))).toBe(accountOf({ token: put }))
    expect(provider.accountOf(state('opaque-token-put-0123456789', 'admin'))).toBe(accountOf({ token: 'opaque-token-put-0123456789' }))
    for (const reason of ['login', 'relogin', 'refresh', null] as const) expect(provider.accountOf(state(jwt({ sub: '100' }), reason))).toBe(login)
  })
})

describe('a password login\'s token endpoint, however it is spelled', () => {
  const withTokenUrl = (tokenUrl: string) => accountOf({ login: { ...LOGIN, tokenUrl } })
  const path = withTokenUrl('/oauth/token')

  it.each([
    ['the whole URL', `${BASE}/oauth/token`],
    ['the host in capitals', 'http://PLATFORM.test/oauth/token'],
    ['the default port', 'http://platform.test:80/oauth/token'],
    ['a trailing slash', '/oauth/token/'],
    ['the whole URL with a trailing slash', `${BASE}/oauth/token/`],
    ['a dot segment', '/api/../oauth/./token'],
    ['a fragment', `${BASE}/oauth/token#x`],
    // The router decodes the path before it matches it (UriValidator: rawurldecode).
    ['an escaped letter', '/oauth/%74oken'],
    ['the whole URL with escaped letters in either case and a trailing slash', `${BASE}/%6Fauth/tok%65n/`],
  ])('%s is the path\'s login (one account, one configuration)', (_label, tokenUrl) => {
    expect(withTokenUrl(tokenUrl)).toBe(path)
  })

  it.each([
    ['another path', '/oauth/token2'],
    ['another host', 'http://auth.platform.test/oauth/token'],
    ['another port', 'http://platform.test:8080/oauth/token'],
    ['https', 'https://platform.test/oauth/token'],
    ['a query', '/oauth/token?tenant=2'],
    ['userinfo', 'http://user@platform.test/oauth/token'],
  ])('%s is another login', (_label, tokenUrl) => {
    expect(withTokenUrl(tokenUrl)).not.toBe(path)
  })

  it('keeps, for the path as written by default, the digest records stored before were made with', () => {
    // An upgrade leaves such a login's stored token and report copies where they are.
    const digest = createHash('sha256').update(JSON.stringify([BASE, '/oauth/token', LOGIN.grantType, LOGIN.username, String(LOGIN.clientId)])).digest('hex').slice(0, 12)
    expect(path).toBe(`login:${digest}`)
  })

  it('is one endpoint on another origin however its host is written', () => {
    expect(withTokenUrl('https://Auth.Example:443/oauth/token')).toBe(withTokenUrl('https://auth.example/oauth/token'))
  })

  // RFC 3986, 6.2.2.1: a percent-escape's hex digits in either case are one octet.
  it.each([
    ['an escaped / in the path', '/oauth%2ftoken', '/oauth%2Ftoken'],
    ['an escaped / in the whole URL', `${BASE}/oauth%2ftoken`, '/oauth%2Ftoken'],
    ['an escape in the query', '/oauth/token?realm=a%2fb', '/oauth/token?realm=a%2Fb'],
    ['an escape on another origin', 'https://auth.example/realms/a%2fb/token?x=%c3%a9', 'https://auth.example/realms/a%2Fb/token?x=%C3%A9'],
    ['an escaped letter in the query', '/oauth/token?realm=%61', '/oauth/token?realm=a'],
  ])('%s is one login in either case of its hex digits', (_label, lower, upper) => {
    expect(withTokenUrl(lower)).toBe(withTokenUrl(upper))
  })

  it('keeps an escaped / another endpoint than the / itself', () => {
    expect(withTokenUrl('/oauth%2Ftoken')).not.toBe(path)
  })
})
