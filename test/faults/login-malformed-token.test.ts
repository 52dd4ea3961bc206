import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Agent } from 'undici'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { passwordLogin } from '../../src/platform/tokens/password-login.js'

// A token endpoint that answers 200 with an access_token no authorization header can
// carry (a line break inside, a space, non-ASCII, "Bearer …") must fail the login, as
// PLATFORM_TOKEN, the token file and PUT /admin/token refuse the same (tokenFault). It
// was installed as "usable": every platform call then failed before it was sent (502
// GW_UPSTREAM "connection error", cause "invalid authorization header"), no 401 ever came
// back to condemn it, and the credential stayed wedged after the platform behaved again
// (the token lives a year) while the good token it replaced was gone.

const LOGIN = { username: 'ops@example.com', password: 'hunter2-Pa55word', clientId: 7, clientSecret: 'client-secret-0123456789', tokenUrl: '/oauth/token', grantType: 'platform_dsp' }
let accessToken: unknown = ''
const server = createServer((req, res) => {
  req.resume()
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token_type: 'Bearer', expires_in: 31536000, access_token: accessToken })))
})
const dispatcher = new Agent()
let base = ''

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await dispatcher.close()
  await new Promise((resolve) => server.close(resolve))
})

it.each([
  ['a line break', 'abc\r\nx-evil: 1'],
  ['a space', 'abc def'],
  ['non-ASCII', 'tökén-value'],
  ['a header value pasted', 'Bearer abc.def.ghi'],
])('refuses a token reply whose access_token holds %s', async (_what, token) => {
  accessToken = token
  const refusal = (await passwordLogin(base, LOGIN, dispatcher, 2000).catch((err: unknown) => err)) as Error
  expect(refusal).toMatchObject({ code: 'GW_PLATFORM_AUTH' })
  expect(refusal.message).toContain('access_token')
  expect(refusal.message).not.toContain(token)
})

it.each([['one character', 'a'], ['15 characters', 'abcdefghijklmno']])('refuses a token reply whose access_token is %s: shorter than a token is, it is in the text of answers and every call would be 502', async (_what, token) => {
  accessToken = token
  const refusal = (await passwordLogin(base, LOGIN, dispatcher, 2000).catch((err: unknown) => err)) as Error
  expect(refusal).toMatchObject({ code: 'GW_PLATFORM_AUTH', message: `platform login failed: the token reply's access_token is ${token.length} characters, fewer than 16: the platform issues no such token` })
})

it('takes a well-formed access_token', async () => {
  accessToken = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl'
  await expect(passwordLogin(base, LOGIN, dispatcher, 2000)).resolves.toMatchObject({ token: accessToken })
})
