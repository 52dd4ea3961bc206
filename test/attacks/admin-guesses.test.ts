import type { AddressInfo } from 'node:net'
import { beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_TOKEN, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// Guessing the admin token over HTTP, as an outsider who reached the admin listener would:
// each wrong token is the one 401, and past a bound (ADMIN_GUESSES, admin-guesses.ts) of them
// from one address within a minute that address's wrong tokens are 429. A right token from
// that address still passes: operators behind one NAT or balancer share the guesser's
// address, and a lock of every token would let anyone there lock them all out. What keeps
// guessing from reaching a token is its length (docs/decisions/admin-guess-bound.md).

describe('the admin token guessed from one address', () => {
  const VIEWER_TOKEN = 'guesses-viewer-token-0123456789abcdef'
  const sg = useAttackGateway({ env: { ADMIN_VIEWER_TOKEN: VIEWER_TOKEN } })
  let adminUrl = ''
  beforeAll(async () => {
    await sg.gw.admin.listen({ host: '127.0.0.1', port: 0 })
    adminUrl = `http://127.0.0.1:${(sg.gw.admin.server.address() as AddressInfo).port}`
  })
  const whoami = (token: string) => fetch(`${adminUrl}/admin/whoami`, { headers: { authorization: `Bearer ${token}` } })

  it('is 401 for each wrong guess up to a bound, then 429 GW_RATE_LIMITED with retry-after for every wrong token, while the right token from the same address passes', async () => {
    expect((await whoami(ADMIN_TOKEN)).status).toBe(200)
    // Guessed until the answer changes; a hundred guesses a minute from one address is far past any operator's mistyping.
    const statuses: number[] = []
    for (let i = 0; i < 300 && statuses.at(-1) !== 429; i++) statuses.push((await whoami(`guess-${i}-${'x'.repeat(20)}`)).status)
    expect(statuses.at(-1)).toBe(429)
    expect(new Set(statuses.slice(0, -1))).toEqual(new Set([401]))
    // An operator behind the same address is not locked out by another's wrong tokens.
    expect((await whoami(ADMIN_TOKEN)).status).toBe(200)
    expect((await whoami(VIEWER_TOKEN)).status).toBe(200)
    const locked = await whoami(`guess-again-${'x'.repeat(20)}`)
    expect(locked.status).toBe(429)
    const retryAfter = Number(locked.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(locked.headers.get('cache-control')).toBe('no-store')
    const body = (await locked.json()) as { code: string; message: string }
    expect(body.code).toBe('GW_RATE_LIMITED')
    expect(body.message).toMatch(/admin tokens refused/)
    // Another wrong guess is refused alike: the answer tells no guess from another.
    const guess = await whoami(`guess-late-${'x'.repeat(20)}`)
    expect(guess.status).toBe(429)
    // The listener's pages without a token still answer.
    expect((await fetch(`${adminUrl}/healthz`)).status).toBe(200)
  })

  itLoggedNoSecret(sg)
})
