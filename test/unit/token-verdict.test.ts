import { describe, expect, it } from 'vitest'
import type { TokenProvider } from '../../src/platform/tokens/token-provider.js'
import { MAX_REFUSING_ROUTES, REFUSING_ROUTE_MEMORY_MS, TokenVerdicts, VERDICT_TRUST_MS } from '../../src/platform/tokens/token-verdict.js'

// The probe call on the gateway's terms: at most once per interval per credential, never
// while its route is paused, and never again for a route known to refuse a good token.

const provider = (name = 'default') => ({ name }) as TokenProvider

function verdicts(status: number | null, opts: { paused?: () => boolean } = {}) {
  let now = 1_767_225_600_000
  const probed: string[] = []
  const v = new TokenVerdicts({
    probe: async (_p, token) => {
      probed.push(token)
      return status
    },
    now: () => now,
    ...(opts.paused ? { probePaused: opts.paused } : {}),
  })
  return { v, probed, advance: (ms: number) => (now += ms) }
}

describe('TokenVerdicts', () => {
  it.each<[number | null, string]>([
    [401, 'confirmed'],
    [403, 'confirmed'],
    [200, 'unconfirmed'],
    [429, 'unconfirmed'],
    [null, 'no_probe'],
  ])('reads a probe answering %s as %s', async (status, verdict) => {
    expect(await verdicts(status).v.judge(provider(), 't1')).toBe(verdict)
  })

  it('probes once per interval whatever the calls, and again after it', async () => {
    const { v, probed, advance } = verdicts(200)
    await Promise.all(Array.from({ length: 10 }, (_, i) => v.judge(provider(), 't1', `/r${i}`)))
    expect(probed).toEqual(['t1'])
    advance(VERDICT_TRUST_MS - 1)
    await v.judge(provider(), 't1', '/other')
    expect(probed).toHaveLength(1)
    advance(1)
    await v.judge(provider(), 't1', '/other2')
    expect(probed).toHaveLength(2)
  })

  it('probes no other token within the interval, unless the last verdict condemned its token', async () => {
    const kept = verdicts(200)
    await kept.v.judge(provider(), 't1')
    expect(await kept.v.judge(provider(), 't2')).toBe('probe_failed')
    expect(kept.probed).toEqual(['t1'])
    const condemned = verdicts(401)
    await condemned.v.judge(provider(), 't1')
    expect(await condemned.v.judge(provider(), 't2')).toBe('confirmed')
    expect(condemned.probed).toEqual(['t1', 't2'])
  })

  it('keeps credentials apart', async () => {
    const { v, probed } = verdicts(200)
    await v.judge(provider('a'), 't1')
    await v.judge(provider('b'), 't1')
    expect(probed).toHaveLength(2)
  })

  it('makes no probe while its route is paused: probe_failed, and the next judge after it probes', async () => {
    let paused = true
    const { v, probed } = verdicts(200, { paused: () => paused })
    expect(await v.judge(provider(), 't1')).toBe('probe_failed')
    expect(probed).toEqual([])
    paused = false
    expect(await v.judge(provider(), 't1')).toBe('unconfirmed')
    expect(probed).toEqual(['t1'])
  })

  it('remembers a route refusing a good token for a while, for that token', async () => {
    const { v, probed, advance } = verdicts(200)
    await v.judge(provider(), 't1', '/guarded')
    for (let i = 0; i < 5; i++) {
      advance(VERDICT_TRUST_MS)
      expect(await v.judge(provider(), 't1', '/guarded')).toBe('unconfirmed')
    }
    expect(probed).toHaveLength(1)
    // Another token is news.
    advance(VERDICT_TRUST_MS)
    await v.judge(provider(), 't2', '/guarded')
    expect(probed).toHaveLength(2)
    advance(REFUSING_ROUTE_MEMORY_MS)
    await v.judge(provider(), 't2', '/guarded')
    expect(probed).toHaveLength(3)
  })

  it('remembers at most MAX_REFUSING_ROUTES routes', async () => {
    const { v, probed, advance } = verdicts(200)
    for (let i = 0; i <= MAX_REFUSING_ROUTES; i++) await v.judge(provider(), 't1', `/r${i}`)
    expect(probed).toHaveLength(1)
    advance(VERDICT_TRUST_MS)
    // The first one was forgotten: it is probed again; the last one is still known.
    await v.judge(provider(), 't1', `/r${MAX_REFUSING_ROUTES}`)
    expect(probed).toHaveLength(1)
    await v.judge(provider(), 't1', '/r0')
    expect(probed).toHaveLength(2)
  })
})
