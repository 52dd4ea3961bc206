import { request, type Dispatcher } from 'undici'
import type { PasswordLogin } from '../../config.js'
import { tokenFault } from '../../config/sources.js'
import { TokenLoginError } from '../../errors.js'
import { canonicalEscapes, canonicalPath } from '../canonical-path.js'
import { connectionFailure } from '../client/connection-failure.js'
import { transient } from '../client/transient.js'

export interface LoginResult {
  token: string
  expiresIn: unknown
}

export function tokenRequestUrl(baseUrl: string, tokenUrl: string): URL {
  return new URL(tokenUrl, `${baseUrl}/`)
}

/**
 * The token endpoint as configurations are told apart by it (TokenProvider.configuredBase):
 * the URL a login is sent to, as WHATWG's parser writes it (scheme and host in lower case,
 * the default port dropped, dot segments resolved), without its fragment (never sent), its
 * path in its one spelling (canonicalPath: the platform's router, Laravel's, decodes
 * `/oauth/%74oken` and matches `/oauth/token/` as `/oauth/token`), and the percent-escapes
 * of its path and query in theirs (`%2f` is `%2F`, RFC 3986 6.2.2.1). On the base URL's
 * origin it is its path and query, as the default `/oauth/token` is written, so that a
 * configuration written so keeps its digest; on another origin, or with userinfo, the
 * whole URL. A path with no base URL to resolve it on stays as written.
 */
export function comparableTokenUrl(baseUrl: string | null, tokenUrl: string): string {
  const base = baseUrl === null ? undefined : `${baseUrl}/`
  if (!URL.canParse(tokenUrl, base)) return tokenUrl
  const url = new URL(tokenUrl, base)
  url.hash = ''
  url.pathname = canonicalPath(url.pathname)
  // Set only with an escape to spell: setting it would drop the `?` of an empty query.
  if (url.search.includes('%')) url.search = canonicalEscapes(url.search)
  const own = base !== undefined && url.origin === new URL(base).origin && url.username === '' && url.password === ''
  return own ? `${url.pathname}${url.search}` : url.href
}

/**
 * The platform's password grant (platform-api.md): a JSON body with five fields,
 * `access_token` in the reply. Failures carry the platform's error code, never a secret.
 */
export async function passwordLogin(baseUrl: string, login: PasswordLogin, dispatcher: Dispatcher, timeoutMs: number): Promise<LoginResult> {
  const url = tokenRequestUrl(baseUrl, login.tokenUrl)
  let res: Dispatcher.ResponseData
  try {
    res = await request(url, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({
        grant_type: login.grantType,
        username: login.username,
        password: login.password,
        client_id: login.clientId,
        client_secret: login.clientSecret,
      }),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    })
  } catch (err) {
    throw noAnswer(url, err, timeoutMs)
  }
  let text: string
  try {
    text = await res.body.text()
  } catch (err) {
    throw noAnswer(url, err, timeoutMs)
  }
  let reply: Record<string, unknown> = {}
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed === 'object' && parsed !== null) reply = parsed as Record<string, unknown>
  } catch {
    // a non-JSON reply is reported by its status below
  }
  if (res.statusCode !== 200) {
    const error = new TokenLoginError(`the platform answered ${res.statusCode} (${errorCode(reply.error, login)})`)
    // A 5xx is the platform down, which a later login may not meet; a 429 the platform up
    // and busy (its throttle), until its retry-after; any other 4xx refused the login itself.
    if (res.statusCode === 429) throw Object.assign(error, { throttled: { retryAfter: res.headers['retry-after'] } })
    if (res.statusCode >= 500) throw transient(error)
    throw res.statusCode >= 400 ? Object.assign(error, { refused: { status: res.statusCode } }) : error
  }
  if (typeof reply.access_token !== 'string' || reply.access_token === '') {
    throw new TokenLoginError('the token reply has no access_token')
  }
  // A token no authorization header can carry would fail every call before it is sent,
  // and no 401 would ever come back to replace it: refused as PLATFORM_TOKEN refuses it.
  const fault = tokenFault(reply.access_token)
  if (fault !== null) throw new TokenLoginError(`the token reply's access_token ${fault}`)
  // Every answer is searched for the token, which it must never carry back: a token of a few
  // characters is in the text of most answers, and every call would be 502. The platform
  // issues JWTs of hundreds.
  if (reply.access_token.length < MIN_LOGIN_TOKEN) throw new TokenLoginError(`the token reply's access_token is ${reply.access_token.length} characters, fewer than ${MIN_LOGIN_TOKEN}: the platform issues no such token`)
  return { token: reply.access_token, expiresIn: reply.expires_in }
}

/** The fewest characters of a token a login reply gives: a token shorter is refused. */
const MIN_LOGIN_TOKEN = 16

/** The `retry-after` of a login the platform answered 429 (its throttle), as it was sent; null: `err` is no such login's. */
export function loginThrottle(err: unknown): { retryAfter: string | string[] | undefined } | null {
  return (err as { throttled?: { retryAfter: string | string[] | undefined } } | null)?.throttled ?? null
}

/** The status of a login the platform refused itself (a 4xx but 429: a wrong password, username or client); null: `err` is no such login's. */
export function loginRefusal(err: unknown): number | null {
  return (err as { refused?: { status: number } } | null)?.refused?.status ?? null
}

const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT'])

/**
 * A login that got no answer (no connection, the reply cut off, `platform.timeout`): the
 * platform down, which a later login may not meet. Said in words, as a platform call's
 * failure is: no framework code (UND_ERR_*) reaches a caller (contract, "Errors").
 */
function noAnswer(url: URL, err: unknown, timeoutMs: number): Error {
  const why = TIMEOUTS.has((err as { code?: string }).code ?? '') ? `no answer within platform.timeout, ${timeoutMs} ms` : connectionFailure(err)
  return transient(new TokenLoginError(`token request to ${url.origin}${url.pathname} failed (${why})`, { cause: err }))
}

// An OAuth error code (RFC 6749, 5.2: `invalid_grant`, `invalid_client`…).
const ERROR_CODE = /^[A-Za-z_.-]{1,64}$/

/**
 * The reply's `error` as the gateway's message may name it (an admin's answer, a caller's
 * GW_PLATFORM_AUTH, a log line): a plain code, and none that holds a value of the login,
 * which an endpoint that quotes its input would hand back.
 */
function errorCode(error: unknown, login: PasswordLogin): string {
  if (typeof error !== 'string') return 'no error code'
  const echoes = [login.username, login.password, login.clientSecret].some((value) => value !== '' && error.includes(value))
  return ERROR_CODE.test(error) && !echoes ? error : 'an error code not shown: not a plain code, or it holds the login'
}
