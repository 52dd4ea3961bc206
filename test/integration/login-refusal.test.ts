import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect, it } from 'vitest'
import { loginRefusal, passwordLogin } from '../../src/platform/tokens/password-login.js'
import { LOGIN, tokenEndpoint } from '../helpers/token-endpoint.js'

// A token endpoint's refusal names its error code in the gateway's message (an admin's
// 502, the log's lines; a caller's GW_PLATFORM_AUTH names no login's words), never what the
// endpoint may have echoed of the login in it: an endpoint that quotes its input hands back
// the password or the client secret.

let error = ''
const { base, dispatcher } = tokenEndpoint(400, () => ({ error }))

it('names a plain OAuth error code', async () => {
  error = 'invalid_grant'
  await expect(passwordLogin(base(), LOGIN, dispatcher, 2000)).rejects.toMatchObject({ code: 'GW_PLATFORM_AUTH', message: expect.stringContaining('(invalid_grant)') })
})

it('carries the status of the refusal, the one word of it a caller is told', async () => {
  error = 'invalid_grant'
  const refusal = await passwordLogin(base(), LOGIN, dispatcher, 2000).catch((err: unknown) => err)
  expect(loginRefusal(refusal)).toBe(400)
  expect(loginRefusal(new Error('no login'))).toBeNull()
})

it.each([
  ['the password', `bad_password_${LOGIN.password}`],
  ['the client secret', LOGIN.clientSecret],
  ['the user, in a sentence', `no user ${LOGIN.username}`],
])('does not repeat an error code that holds %s', async (_what, echoed) => {
  error = echoed
  const refusal = (await passwordLogin(base(), LOGIN, dispatcher, 2000).catch((err: unknown) => err)) as Error
  expect(refusal).toMatchObject({ code: 'GW_PLATFORM_AUTH' })
  for (const secret of [LOGIN.password, LOGIN.clientSecret, LOGIN.username]) expect(refusal.message).not.toContain(secret)
})

// A login that got no answer is said in words, as a platform call's is: no framework code
// (UND_ERR_*) reaches a caller (contract, "Errors"), an admin's 502 included.
it.each([
  ['a reset connection', (socket: import('node:net').Socket) => socket.destroy(), 'connection reset'],
  ['no answer in time', () => undefined, 'no answer within'],
])('says %s in words, with no framework code', async (_what, answer, words) => {
  const silent = createServer()
  silent.on('connection', answer)
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  try {
    const refusal = (await passwordLogin(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`, LOGIN, dispatcher, 300).catch((err: unknown) => err)) as Error
    expect(refusal).toMatchObject({ code: 'GW_PLATFORM_AUTH' })
    expect(refusal.message).toContain(words)
    expect(refusal.message).not.toMatch(/UND_ERR|FST_/)
  } finally {
    silent.closeAllConnections()
    await new Promise((resolve) => silent.close(resolve))
  }
})
