import { expect } from 'vitest'
import type { SandboxRequestRecord } from '../../src/sandbox/sandbox.js'
import { KEYS, type TestGateway } from './build-gateway.js'

// Calls on a test gateway and looks into it, as the token suites make them.

/** A proxied read (the platform's POST .../get convention) by the all-advertisers team; never cached. */
export function campaignList(gw: TestGateway, userId = 101) {
  return gw.proxy.inject({ method: 'POST', url: '/api/v1/campaign/get', headers: { 'x-api-key': KEYS.all }, payload: { userId } })
}

/** The platform token the gateway holds now for a credential. */
export function tokenOf(gw: TestGateway, credential = 'default'): string | undefined {
  return gw.ctx.tokens.get(credential).current()?.token
}

/** The platform token a request the sandbox received carried. */
export function bearerOf(r: SandboxRequestRecord | undefined): string | undefined {
  const h = r?.headers.authorization
  return typeof h === 'string' ? h.replace(/^Bearer /, '') : undefined
}

/** No secret value shows up in any of the texts (log lines, response bodies). */
export function expectNoSecrets(texts: string[], secrets: string[]): void {
  for (const text of texts) {
    for (const secret of secrets) expect(text.includes(secret), `a secret leaked into: ${text.slice(0, 300)}`).toBe(false)
  }
}
