import { request, type Dispatcher } from 'undici'
import type { PasswordLogin } from '../../config.js'
import { TokenLoginError } from '../../errors.js'

export interface LoginResult {
  token: string
  expiresIn: unknown
}

export function tokenRequestUrl(baseUrl: string, tokenUrl: string): URL {
  return new URL(tokenUrl, `${baseUrl}/`)
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
    throw new TokenLoginError(`token request to ${url.origin}${url.pathname} failed (${(err as NodeJS.ErrnoException).code ?? (err as Error).name})`, { cause: err })
  }
  const text = await res.body.text()
  let reply: Record<string, unknown> = {}
  try {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed === 'object' && parsed !== null) reply = parsed as Record<string, unknown>
  } catch {
    // a non-JSON reply is reported by its status below
  }
  if (res.statusCode !== 200) {
    const code = typeof reply.error === 'string' ? reply.error : 'no error code'
    throw new TokenLoginError(`the platform answered ${res.statusCode} (${code.slice(0, 64)})`)
  }
  if (typeof reply.access_token !== 'string' || reply.access_token === '') {
    throw new TokenLoginError('the token reply has no access_token')
  }
  return { token: reply.access_token, expiresIn: reply.expires_in }
}
