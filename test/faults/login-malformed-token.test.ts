import { expect, it } from 'vitest'
import { passwordLogin } from '../../src/platform/tokens/password-login.js'
import { LOGIN, tokenEndpoint } from '../helpers/token-endpoint.js'

// A token endpoint that answers 200 with an access_token no authorization header can
// carry (a line break inside, a space, non-ASCII, "Bearer …") must fail the login, as
// PLATFORM_TOKEN, the token file and PUT /admin/token refuse the same (tokenFault). It
// was installed as "usable": every platform call then failed before it was sent (502
// GW_UPSTREAM "connection error", cause "invalid authorization header"), no 401 ever came
// back to condemn it, and the credential stayed wedged after the platform behaved again
// (the token lives a year) while the good token it replaced was gone.

let accessToken: unknown = ''
const { base, dispatcher } = tokenEndpoint(200, () => ({ token_type: 'Bearer', expires_in: 31536000, access_token: accessToken }))

it.each([
  ['a line break', 'abc\r\nx-evil: 1'],
  ['a space', 'abc def'],
  ['non-ASCII', 'tökén-value'],
  ['a header value pasted', 'Bearer abc.def.ghi'],
])('refuses a token reply whose access_token holds %s', async (_what, token) => {
  accessToken = token
  const refusal = (await passwordLogin(base(), LOGIN, dispatcher, 2000).catch((err: unknown) => err)) as Error
  expect(refusal).toMatchObject({ code: 'GW_PLATFORM_AUTH' })
  expect(refusal.message).toContain('access_token')
  expect(refusal.message).not.toContain(token)
})

it.each([['one character', 'a'], ['15 characters', 'abcdefghijklmno']])('refuses a token reply whose access_token is %s: shorter than a token is, it is in the text of answers and every call would be 502', async (_what, token) => {
  accessToken = token
  const refusal = (await passwordLogin(base(), LOGIN, dispatcher, 2000).catch((err: unknown) => err)) as Error
  expect(refusal).toMatchObject({ code: 'GW_PLATFORM_AUTH', message: `platform login failed: the token reply's access_token is ${token.length} characters, fewer than 16: the platform issues no such token` })
})

it('takes a well-formed access_token', async () => {
  accessToken = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl'
  await expect(passwordLogin(base(), LOGIN, dispatcher, 2000)).resolves.toMatchObject({ token: accessToken })
})
