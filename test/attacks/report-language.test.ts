import { describe, expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, itLoggedNoSecret, useAttackGateway } from './attack-gateway.js'

// One team's language in the report copy every team reads. The platform here is localized
// (it writes its labels in the caller's `accept-language` and says `Vary: Accept-Language`),
// the copy is shared by every team of the credential: a fill must ask in no team's
// language, and an answer the platform says varies on what the gateway cannot hold
// constant (`*`, the call's own id) is no copy at all.

const sg = useAttackGateway({ sandbox: { localized: true } })
const PLACEMENTS = '/api/v1/report/adPlacementPositions/get'
const CAMPAIGNS = '/api/v1/report/campaigns/get'
const ENGLISH = ['Above the fold', 'Below the fold', 'Full screen', 'Unknown']

interface Read {
  status: number
  cache: string | null
  body: { data?: { position?: string }[] }
}

async function read(key: string, target: string, headers: Record<string, string> = {}): Promise<Read> {
  const res = await fetch(`${sg.url}${target}`, { headers: { 'x-api-key': key, ...headers } })
  return { status: res.status, cache: res.headers.get('x-cache'), body: (await res.json()) as Read['body'] }
}

const positions = (r: Read): string[] => [...new Set((r.body.data ?? []).map((row) => row.position ?? ''))].sort()
const reportCalls = (path: string) => sg.callerRequests().filter((r) => r.path === path)

async function bypassed(): Promise<number> {
  const text = (await sg.gw.admin.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).body
  const line = text.split('\n').find((l) => l.startsWith('gateway_cache_requests_total{result="BYPASS",tier="platform"}'))
  return line === undefined ? 0 : Number(line.split(' ').pop())
}

/** Runs `check` while the platform answers every campaigns report `200` with this `vary`. */
async function withVary(vary: string, check: () => Promise<void>): Promise<void> {
  sg.sandbox.setRouteFailure(CAMPAIGNS, { kind: 'status', status: 200, body: { data: [] }, headers: { vary } })
  try {
    await check()
  } finally {
    sg.sandbox.clearRouteFailures()
  }
}

describe('a report filled by a team that asks in German', () => {
  it('is the copy in no team\'s language: the platform is asked in none, and every team reads the same labels', async () => {
    const target = `${PLACEMENTS}?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-07`
    // The platform localizes: asked in German, it answers in German and says it varies on the language.
    const direct = await fetch(`${sg.sandbox.url}${target}`, { headers: { authorization: `Bearer ${sg.sandbox.issueToken()}`, 'accept-language': 'de-DE, de;q=0.9, en;q=0.5' } })
    expect(direct.headers.get('vary')).toBe('Accept-Language')
    expect(direct.headers.get('content-language')).toBe('de')
    expect(JSON.stringify(await direct.json())).toContain('Vollbild')
    sg.sandbox.clearRequests()

    const filled = await read(KEYS.growth, target, { 'accept-language': 'de-DE, de;q=0.9, en;q=0.5' })
    expect(filled.status).toBe(200)
    expect(filled.cache).toBe('MISS')
    const copy = await read(KEYS.all, target, { 'accept-language': 'en-GB' })
    expect(copy.cache).toBe('HIT')
    expect(positions(copy)).toEqual(ENGLISH)
    expect(positions(filled)).toEqual(ENGLISH)
    const calls = reportCalls(PLACEMENTS)
    expect(calls).toHaveLength(1)
    expect(calls[0]?.headers['accept-language']).toBeUndefined()
  })
})

describe('a report answer whose Vary the gateway cannot match on a later fill', () => {
  it.each([
    ['*', '2026-04-01'],
    ['X-Request-Id', '2026-04-02'],
    ['Accept, traceparent', '2026-04-03'],
  ])('`vary: %s` is passed on uncached (BYPASS), each read its own platform call, counted as bypassed', async (vary, day) => {
    await withVary(vary, async () => {
      const target = `${CAMPAIGNS}?advertiserId=101&dateFrom=${day}&dateTo=${day}`
      const before = await bypassed()
      const first = await read(KEYS.growth, target)
      const second = await read(KEYS.all, target)
      expect([first.status, second.status]).toEqual([200, 200])
      expect([first.cache, second.cache]).toEqual(['BYPASS', 'BYPASS'])
      expect(reportCalls(CAMPAIGNS)).toHaveLength(2)
      expect(await bypassed()).toBe(before + 2)
    })
  })

  it.each([
    ['Accept-Language', '2026-05-01'],
    ['Origin, Accept-Encoding', '2026-05-02'],
    ['Authorization', '2026-05-03'],
  ])('`vary: %s` names what every fill of the report sends alike: the copy is kept and shared', async (vary, day) => {
    await withVary(vary, async () => {
      const target = `${CAMPAIGNS}?advertiserId=101&dateFrom=${day}&dateTo=${day}`
      expect((await read(KEYS.growth, target, { 'accept-language': 'de', origin: 'https://a.example' })).cache).toBe('MISS')
      expect((await read(KEYS.all, target, { 'accept-language': 'fr', origin: 'https://b.example' })).cache).toBe('HIT')
      expect(reportCalls(CAMPAIGNS)).toHaveLength(1)
    })
  })
})

describe('a report filled by a team that names its call (x-request-id)', () => {
  // The id comes back to its caller, and names the call in the gateway's log; the platform
  // call is the copy's, which every team of the credential reads: a platform that writes
  // the id it was asked with into its answer (a `meta.requestId`) would put one team's text
  // in every team's copy, so the fill carries an id of the gateway's own.
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
  it.each([
    ['GET', `${CAMPAIGNS}?advertiserId=101&dateFrom=2026-06-01&dateTo=2026-06-01`, undefined],
    ['POST', CAMPAIGNS, JSON.stringify({ campaignIds: [101001], dateFrom: '2026-06-02', dateTo: '2026-06-02' })],
  ])('%s: the caller\'s id comes back to it and never reaches the platform', async (method, target, body) => {
    const res = await fetch(`${sg.url}${target}`, { method, headers: { 'x-api-key': KEYS.growth, 'x-request-id': 'growth.chosen:id-1', ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body } : {}) })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-cache')).toBe('MISS')
    expect(res.headers.get('x-request-id')).toBe('growth.chosen:id-1')
    const calls = reportCalls(CAMPAIGNS)
    expect(calls).toHaveLength(1)
    expect(calls[0]?.headers['x-request-id']).toMatch(UUID)
  })

  it('a read that names no id: the fill carries the id its answer names, as before', async () => {
    const res = await fetch(`${sg.url}${CAMPAIGNS}?advertiserId=101&dateFrom=2026-06-03&dateTo=2026-06-03`, { headers: { 'x-api-key': KEYS.growth } })
    expect(res.headers.get('x-cache')).toBe('MISS')
    expect(reportCalls(CAMPAIGNS).map((r) => r.headers['x-request-id'])).toEqual([res.headers.get('x-request-id')])
  })
})

itLoggedNoSecret(sg)
