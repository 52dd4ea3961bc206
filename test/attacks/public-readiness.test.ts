import { describe, expect, it } from 'vitest'
import { credentialTeams, listen, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'

// The proxy listener's /readyz answers anyone, keyless, wherever the proxy is reachable
// (an Ingress, a cloud balancer). Its status code is what a balancer reads; the names of
// the platform credentials (often a partner's or an agency's), whether the platform
// refuses each one's token, and Redis's state are the operator's: the admin listener's
// /readyz (behind its host check) and GET /admin/status tell them.

describe('readiness on the proxy listener', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()

  it('names no credential, no token\'s state and no Redis state to a caller without a key; the admin listener\'s /readyz still does', async () => {
    // The partner credential's token is one the platform refuses: degraded, as an operator sees it.
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), CREDENTIAL_PARTNER_TOKEN: 'refused-partner-token-0123456789' }
    const gw = await listen(await gateways.build(testConfig(env, credentialTeams('partner'))))
    const publicReady = await fetch(`${gw.url}/readyz`)
    expect(publicReady.status).toBe(200)
    expect(publicReady.headers.get('cache-control')).toBe('no-store')
    const text = await publicReady.text()
    expect(JSON.parse(text)).toEqual({ status: 'ready' })
    for (const word of ['partner', 'default', 'platformToken', 'redis', 'rejected']) expect(text).not.toContain(word)
    const adminReady = await gw.admin.inject({ method: 'GET', url: '/readyz' })
    expect(adminReady.json()).toMatchObject({ status: 'ready', platformToken: { default: 'ok', partner: expect.stringMatching(/rejected|missing/) }, redis: 'not configured' })
  })
})
