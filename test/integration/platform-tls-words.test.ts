import { describe, expect, it } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateway, useSandbox } from '../helpers/fixtures.js'

// PLATFORM_BASE_URL written https:// for a platform that speaks plain HTTP (the sandbox here):
// each TLS handshake is answered in plain HTTP. The caller's 502 and the start's warn line say
// so in words, not in OpenSSL's code alone.
const sandbox = useSandbox()
const gw = useGateway(() => testConfig({ PLATFORM_BASE_URL: sandbox.url.replace('http://', 'https://'), PLATFORM_TOKEN: sandbox.issueToken() }))
const WORDS = 'ERR_SSL_WRONG_VERSION_NUMBER (TLS failed: the platform\'s address answers in plain HTTP, not TLS)'

describe('an https:// platform address of a server that speaks plain HTTP', () => {
  it("answers a read 502 GW_UPSTREAM saying the platform's address answers in plain HTTP", async () => {
    const res = await gw.proxy.inject({ method: 'GET', url: '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-05-01&dateTo=2026-05-02', headers: { 'x-api-key': KEYS.all } })
    expect(res.statusCode).toBe(502)
    expect(res.json()).toMatchObject({ code: 'GW_UPSTREAM', message: `the platform failed: ${WORDS}` })
  })

  it("logs the start's unchecked token with the same words", () => {
    const unchecked = gw.logs.records().find((r) => r.msg === 'platform token not checked at start: the probe call failed')
    expect(unchecked).toMatchObject({ credential: 'default', cause: WORDS })
  })
})
