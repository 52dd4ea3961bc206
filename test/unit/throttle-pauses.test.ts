import { afterEach, describe, expect, it } from 'vitest'
import { MAX_STRUCK_ROUTES, pauseLength, pauseScope, RoutePauses, routeTemplate, type Throttle } from '../../src/platform/governor/throttle-pauses.js'
import { onRealTimers } from '../helpers/clock.js'

describe('routeTemplate', () => {
  it.each([
    ['/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2025-01-01', '/api/v1/report/campaigns/get'],
    ['/api/v1/campaign/123/ads', '/api/v1/campaign/{id}/ads'],
    ['/api/v1/campaign/123/ads/456?x=1', '/api/v1/campaign/{id}/ads/{id}'],
    ['/api/v1/campaign/12a/ads', '/api/v1/campaign/12a/ads'],
    ['/api/v1/campaign/get#frag', '/api/v1/campaign/get'],
    ['?q=1', '/'],
    ['/', '/'],
    ['/api/v1/report/campaigns/get/?advertiserId=101', '/api/v1/report/campaigns/get'],
    ['/api/v1/report//c%61mpaigns/g%65t//', '/api/v1/report/campaigns/get'],
    ['/api/v1/campaign/%31%32/ads/', '/api/v1/campaign/{id}/ads'],
  ])('%s → %s', (url, template) => {
    expect(routeTemplate(url)).toBe(template)
  })
})

describe('pauseScope', () => {
  const t = (route: string, team: string, at: number): Throttle => ({ route, team, at })
  it.each<[string, Throttle[], Throttle, 'route' | 'credential']>([
    ['a first 429', [], t('/r1', 'a', 0), 'route'],
    ['the same route and team again', [t('/r1', 'a', 0)], t('/r1', 'a', 5000), 'route'],
    ['another route within the window', [t('/r1', 'a', 0)], t('/r2', 'a', 5000), 'credential'],
    ['another team within the window', [t('/r1', 'a', 0)], t('/r1', 'b', 10_000), 'credential'],
    ['another route after the window', [t('/r1', 'a', 0)], t('/r2', 'b', 10_001), 'route'],
  ])('%s → %s', (_name, recent, latest, scope) => {
    expect(pauseScope(recent, latest, 10_000)).toBe(scope)
  })

  it("judges a call of the gateway's own (an ownership lookup) by its route and team as any team's", () => {
    expect(pauseScope([], t('/api/v1/campaign/get', '(gateway)', 0), 10_000)).toBe('route')
  })
})

describe('pauseLength', () => {
  it.each([
    [900_000, 0, 60_000, 60_000],
    [2000, 3, 60_000, 2000],
    [null, 0, 60_000, 1000],
    [null, 3, 60_000, 8000],
    [null, 10, 60_000, 60_000],
    [null, 10, 900_000, 900_000],
  ])('retry-after %s ms, %s strikes, max %s → %s', (retryAfterMs, strikes, maxMs, ms) => {
    expect(pauseLength(retryAfterMs, strikes, maxMs)).toBe(ms)
  })
})

describe('RoutePauses', () => {
  let now = 1_000_000
  const expired: string[] = []
  const pauses = new RoutePauses({ clock: onRealTimers(() => now), onExpired: (route, team) => expired.push(`${route} ${team}`) })
  afterEach(() => pauses.clear())

  it('refuses a paused route, lets one trial through per probe interval, and resumes', () => {
    expect(pauses.pause('/r', 60_000, 'a')).toBe(true)
    expect(pauses.admit('/other')).toEqual({ kind: 'open' })
    expect(pauses.admit('/r')).toEqual({ kind: 'paused', waitMs: 60_000 })
    now += 5000
    expect(pauses.admit('/r')).toEqual({ kind: 'trial' })
    expect(pauses.admit('/r')).toEqual({ kind: 'paused', waitMs: 55_000 })
    // The trial's 429 renews the pause; a pause under way does not begin again.
    expect(pauses.pause('/r', 60_000, 'a')).toBe(false)
    expect(pauses.leftOf('/r')).toBe(60_000)
    expect(pauses.resume('/r')).toBe('a')
    expect(pauses.admit('/r')).toEqual({ kind: 'open' })
    expect(pauses.resume('/r')).toBeNull()
  })

  it('opens a route whose pause has run out though its timer is late (a busy event loop), as leftOf says', () => {
    expired.length = 0
    pauses.pause('/late', 1000, 'a')
    now += 1500
    expect(pauses.leftOf('/late')).toBe(0)
    expect(pauses.admit('/late')).toEqual({ kind: 'open' })
    expect(expired).toEqual(['/late a'])
    expect(pauses.admit('/late')).toEqual({ kind: 'open' })
    expect(expired).toHaveLength(1)
  })

  it('counts strikes of 429s without retry-after per route until it resumes', () => {
    expect([1, 2, 3].map(() => pauses.lengthFor('/r', null, 60_000))).toEqual([1000, 2000, 4000])
    expect(pauses.lengthFor('/s', null, 60_000)).toBe(1000)
    pauses.resume('/r')
    expect(pauses.lengthFor('/r', null, 60_000)).toBe(1000)
  })

  it('keeps strikes of at most MAX_STRUCK_ROUTES routes, whatever paths callers send', () => {
    const fresh = new RoutePauses({ clock: onRealTimers(() => now), onExpired: () => undefined })
    expect([1, 2].map(() => fresh.lengthFor('/first', null, 60_000))).toEqual([1000, 2000])
    for (let i = 0; i < MAX_STRUCK_ROUTES; i++) fresh.lengthFor(`/unique-${i}`, null, 60_000)
    // Its strikes were dropped with the others: the map started over rather than grew.
    expect(fresh.lengthFor('/first', null, 60_000)).toBe(1000)
  })
})
