import type { AddressInfo } from 'node:net'
import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, WEEK_BY_DATE, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'

// README, "Calling it": a key is sent as `x-api-key: <key>` or `authorization: Bearer <key>`,
// an admin token as `authorization: Bearer <admin token>`. A caller's slip in that form (the
// scheme of the 401's own challenge, ApiKey; curl -u's Basic; the key in quotes; a shell
// variable written in single quotes; the README's placeholder) is told, over HTTP as fetch()
// sends it, what is wrong and what to send, whatever the key, in a message that repeats no
// value; an unknown key in the right form is told what to do, the same words for every key. Nothing reaches the platform.

const ADMIN_TOKEN = 'key-forms-admin-token-0123456789'
// An unknown key in the right form (one mistyped, a demo run's key after a restart, a key
// revoked): what to do, and nothing of the key. It was `missing, unknown or revoked API key` alone.
const UNKNOWN_KEY = "missing, unknown or revoked API key: no team of this gateway holds it; send the key your team was given, whole (a demo mode key lasts one run of the gateway), or ask the gateway's operators for one"
const sandbox = useSandbox()
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }), { listen: true })
let adminUrl = ''
beforeAll(async () => {
  await gw.admin.listen({ host: '127.0.0.1', port: 0 })
  adminUrl = `http://127.0.0.1:${(gw.admin.server.address() as AddressInfo).port}`
  sandbox.clearRequests()
})

const KEY_FORMS = 'send the key as x-api-key: <key> or authorization: Bearer <key>'
const TEAM_KEYS_ELSEWHERE = 'team API keys are for the proxy listener (/api/v1/*), not the admin listener'

describe('a team key in a form the gateway does not read', () => {
  it.each([
    ['no key', {}, 'none given'],
    ['the key under the ApiKey scheme, as the 401 challenge names it', { authorization: `ApiKey ${KEYS.all}` }, 'authorization: the ApiKey scheme is not read, only Bearer'],
    ['curl -u <key>:', { authorization: `Basic ${Buffer.from(`${KEYS.all}:`).toString('base64')}` }, 'authorization: the Basic scheme is not read, only Bearer'],
    ['the key alone in authorization', { authorization: KEYS.all }, 'authorization: no scheme before the key'],
    ['another scheme, not repeated', { authorization: `Hunter2 ${KEYS.all}` }, 'authorization: not a Bearer credential'],
    ['Bearer without the key (an empty variable)', { authorization: 'Bearer ' }, 'authorization: Bearer without the key'],
    ['Bearer before the key in x-api-key', { 'x-api-key': `Bearer ${KEYS.all}` }, 'x-api-key: holds Bearer before the key; x-api-key takes the key alone'],
    ['the key in quotes', { 'x-api-key': `"${KEYS.all}"` }, 'x-api-key: the key is in quotes; send it without them'],
    ['the key in quotes after Bearer', { authorization: `Bearer '${KEYS.all}'` }, 'authorization: the key is in quotes; send it without them'],
    ['a shell variable in single quotes', { 'x-api-key': '$KEY' }, "x-api-key: holds a shell variable's name ($…), not its value; write the header in double quotes"],
    ['a client given an unset variable (apiKey: process.env.KEY!)', { 'x-api-key': 'undefined' }, 'x-api-key: holds undefined, a variable with no value, not a key'],
    ['the README\'s placeholder <key>', { authorization: 'Bearer <key>' }, 'authorization: holds a placeholder (<key>, rgw_…), not a key'],
    // curl sends the README's rgw_… in UTF-8, which a header reads byte by byte.
    ['the README\'s placeholder rgw_…', { 'x-api-key': Buffer.from('rgw_…').toString('latin1') }, 'x-api-key: holds a placeholder (<key>, rgw_…), not a key'],
  ])('%s: 401 GW_UNAUTHORIZED saying what is wrong and what to send', async (_name, headers: Record<string, string>, problem) => {
    const res = await fetch(`${gw.url}${REPORT_PATH}?${WEEK_BY_DATE}`, { headers })
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toBe('ApiKey realm="report-gateway"')
    const body = (await res.json()) as { message: string }
    expect(body).toEqual({ statusCode: 401, code: 'GW_UNAUTHORIZED', error: 'Unauthorized', message: `missing, unknown or revoked API key: ${problem}; ${KEY_FORMS}` })
    expect(body.message).not.toContain(KEYS.all.slice(4))
    expect(sandbox.requests).toHaveLength(0)
  })

  it.each([
    ['an unknown key in x-api-key', { 'x-api-key': 'rgw_not_a_key_of_any_team_000000000' }],
    ['an unknown key after Bearer', { authorization: 'Bearer rgw_not_a_key_of_any_team_000000000' }],
  ])('%s: the 401 says what to do, the same words whatever the key', async (_name, headers: Record<string, string>) => {
    const res = await fetch(`${gw.url}${REPORT_PATH}?${WEEK_BY_DATE}`, { headers })
    expect(res.status).toBe(401)
    expect(await res.json()).toEqual({ statusCode: 401, code: 'GW_UNAUTHORIZED', error: 'Unauthorized', message: UNKNOWN_KEY })
  })
})

describe('an admin token in a form the admin listener does not read', () => {
  it.each([
    ['no token', {}, 'none given'],
    ['the token as a team key', { 'x-api-key': ADMIN_TOKEN }, `x-api-key is not read by the admin listener (${TEAM_KEYS_ELSEWHERE})`],
    ['the token alone in authorization', { authorization: ADMIN_TOKEN }, 'authorization: no scheme before the admin token'],
    ['the token under the Token scheme', { authorization: `Token ${ADMIN_TOKEN}` }, 'authorization: the Token scheme is not read, only Bearer'],
  ])('%s: 401 GW_UNAUTHORIZED saying what is wrong and what to send', async (_name, headers: Record<string, string>, problem) => {
    const res = await fetch(`${adminUrl}/admin/whoami`, { headers })
    expect(res.status).toBe(401)
    const body = (await res.json()) as { message: string }
    expect(body).toEqual({ statusCode: 401, code: 'GW_UNAUTHORIZED', error: 'Unauthorized', message: `missing or wrong admin token: ${problem}; send authorization: Bearer <admin token>` })
    expect(body.message).not.toContain(ADMIN_TOKEN)
  })

  // A team key sent to the admin listener (the console's token field given a team's key, a
  // curl of an admin call with the key a user holds) is told that team keys are for the proxy
  // listener, in the same words for a team's key and for any other token: a wrong token is
  // told nothing of what it is, and the admin listener confirms no team key.
  it.each([
    ['a wrong token after Bearer', { authorization: 'Bearer not-the-admin-token-0123456789' }],
    ["a team's key after Bearer", { authorization: `Bearer ${KEYS.all}` }],
    ['an unknown key after Bearer', { authorization: 'Bearer rgw_not_a_key_of_any_team_000000000' }],
  ])('%s: the 401 says team keys are for the proxy listener, the same words whatever the token', async (_name, headers: Record<string, string>) => {
    const res = await fetch(`${adminUrl}/admin/whoami`, { headers })
    expect(res.status).toBe(401)
    expect(await res.json()).toEqual({ statusCode: 401, code: 'GW_UNAUTHORIZED', error: 'Unauthorized', message: `missing or wrong admin token: it is none of this gateway's admin tokens; ${TEAM_KEYS_ELSEWHERE}` })
  })

  it.each([
    ["a team's key", KEYS.all],
    ['an unknown key', 'rgw_not_a_key_of_any_team_000000000'],
  ])('%s in x-api-key: the 401 says team keys are for the proxy listener, the same words whatever the key', async (_name, key) => {
    const res = await fetch(`${adminUrl}/admin/whoami`, { headers: { 'x-api-key': key } })
    expect(await res.json()).toEqual({ statusCode: 401, code: 'GW_UNAUTHORIZED', error: 'Unauthorized', message: `missing or wrong admin token: x-api-key is not read by the admin listener (${TEAM_KEYS_ELSEWHERE}); send authorization: Bearer <admin token>` })
  })
})
