import { describe, expect, it } from 'vitest'
import { buildGateway, closeAfterTest, testConfig } from '../helpers/build-gateway.js'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// What an admin answer repeats of the request: a parameter's name the call does not take
// (a 400 of the route's schema; only a short name or a near spelling of one it takes, so
// that the echo answers no guess: secret-oracle.test.ts) and a team named in the path of a
// suspension's lift. A secret of the gateway's or a team key pasted there is never in the answer, as in
// every other admin message that quotes the caller (GET /admin/usage?team=…): "tokens
// themselves never appear in logs or answers".

const VIEWER_TOKEN = 'echo-viewer-token-0123456789abcdef'
const sg = useAttackGateway({ env: { ADMIN_VIEWER_TOKEN: VIEWER_TOKEN } })
const SECRETS = [ADMIN_TOKEN, VIEWER_TOKEN, KEYS.all]

const UNNAMED = 'a parameter not of this call (it takes none); its name is not repeated: of 6 characters or more and no other spelling of one the call takes, it may be a secret'

describe('a parameter the call does not take, named by a secret', () => {
  it.each(SECRETS)('is 400 not naming it: %#', async (secret) => {
    const res = await sg.gw.admin.inject({ method: 'GET', url: `/admin/whoami?${encodeURIComponent(secret)}=1`, headers: { authorization: `Bearer ${VIEWER_TOKEN}` } })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: UNNAMED })
    expect(res.body).not.toContain(secret)
  })
})

describe('a parameter the call does not take, named by a secret longer than a refusal writes of a caller\'s text (64 characters)', () => {
  it('is 400 not naming it, no head of it shown', async () => {
    const long = `echo-long-admin-token-${'0123456789abcdef'.repeat(6)}`
    const gw = await buildGateway(testConfig({ PLATFORM_BASE_URL: sg.sandbox.url, PLATFORM_TOKEN: sg.sandbox.issueToken(), ADMIN_TOKEN: long }))
    try {
      const res = await gw.admin.inject({ method: 'GET', url: `/admin/whoami?${long}=1`, headers: { authorization: `Bearer ${long}` } })
      expect(res.statusCode).toBe(400)
      expect(res.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: UNNAMED })
      expect(res.body).not.toContain(long.slice(0, 16))
    } finally {
      await closeAfterTest(gw)
    }
  })
})

describe('a suspension lifted for a team named by a secret', () => {
  it.each(SECRETS)('answers the team [REDACTED]: %#', async (secret) => {
    const res = await sg.gw.admin.inject({ method: 'DELETE', url: `/admin/suspensions/${encodeURIComponent(secret)}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ team: '[REDACTED]', lifted: false })
    expect(res.body).not.toContain(secret)
  })
})

itLoggedNoSecret(sg, [VIEWER_TOKEN])
