import { describe, expect, it } from 'vitest'
import { MAX_SCOPES, pauseLength, Pauses, scopeKey, scopeOfKey, throttleScope, type Pause, type PauseScope, type Throttle } from '../../src/platform/pauses/pauses.js'
import { routeTemplate } from '../../src/platform/route-template.js'
import { fakeClock } from '../helpers/clock.js'

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
    ['/api/v1/campaign/12/34/56', '/api/v1/campaign/{id}/{id}/{id}'],
    ['123/ads/4a/5', '{id}/ads/4a/{id}'],
  ])('%s → %s', (url, template) => {
    expect(routeTemplate(url)).toBe(template)
  })
})

describe('throttleScope: a 429 is charged to whoever drew it', () => {
  const t = (route: string, team: string, at: number): Throttle => ({ route, team, at })
  const own = (route: string, team: string, at: number): Throttle => ({ route, team, at, own: true })
  it.each<[string, Throttle[], Throttle, PauseScope]>([
    ['a first 429', [], t('/r1', 'a', 0), { kind: 'team-route', team: 'a', route: '/r1' }],
    ['the same route and team again', [t('/r1', 'a', 0)], t('/r1', 'a', 5000), { kind: 'team-route', team: 'a', route: '/r1' }],
    ['the same team on another route within the window', [t('/r1', 'a', 0)], t('/r2', 'a', 5000), { kind: 'team', team: 'a' }],
    ['another team on the same route within the window', [t('/r1', 'a', 0)], t('/r1', 'b', 10_000), { kind: 'route', route: '/r1' }],
    ['another team on another route within the window', [t('/r1', 'a', 0)], t('/r2', 'b', 9000), { kind: 'credential' }],
    ['two teams, the same route, and one of them elsewhere too', [t('/r1', 'a', 0), t('/r2', 'a', 1000)], t('/r1', 'b', 2000), { kind: 'credential' }],
    ['another team after the window', [t('/r1', 'a', 0)], t('/r2', 'b', 10_001), { kind: 'team-route', team: 'b', route: '/r2' }],
    // A route's own limiter (its 429 names a smaller limit than the token's count) refuses that route alone.
    ["a route's own, after the same team's own on another route", [own('/r1', 'a', 0)], own('/r2', 'a', 1000), { kind: 'team-route', team: 'a', route: '/r2' }],
    ["a route's own, another team's own on it and elsewhere before", [own('/r1', 'a', 0), own('/r2', 'a', 1000)], own('/r2', 'b', 2000), { kind: 'route', route: '/r2' }],
    ["a route's own, after another team's count 429 elsewhere", [t('/r1', 'a', 0)], own('/r2', 'b', 1000), { kind: 'team-route', team: 'b', route: '/r2' }],
    ["another team's 429 elsewhere, after routes' own ones", [own('/r1', 'a', 0), own('/r2', 'a', 1000)], t('/r3', 'b', 2000), { kind: 'team-route', team: 'b', route: '/r3' }],
  ])('%s → %j', (_name, recent, latest, scope) => {
    expect(throttleScope(recent, latest, 10_000)).toEqual(scope)
  })

  it('keys every scope apart, and reads each key back', () => {
    const scopes: PauseScope[] = [{ kind: 'credential' }, { kind: 'team', team: 'a' }, { kind: 'route', route: '/a' }, { kind: 'team-route', team: 'a', route: '/a' }]
    expect(new Set(scopes.map(scopeKey)).size).toBe(4)
    for (const scope of scopes) expect(scopeOfKey(scopeKey(scope))).toEqual(scope)
    for (const key of ['', 'team', 'team\n', 'team-route\na', 'credential\nx', 'nonsense\na', 'route\na\nb']) expect(scopeOfKey(key)).toBeNull()
  })
})

describe('pauseLength: one backoff rule', () => {
  it.each([
    [900_000, 0, 60_000, 60_000],
    [2000, 3, 60_000, 2000],
    [null, 0, 60_000, 1000],
    [null, 3, 60_000, 8000],
    [null, 10, 60_000, 60_000],
    [null, 10, 900_000, 900_000],
    [86_400_000, 0, 86_400_000, 15 * 60_000],
    [null, 1000, Infinity, 15 * 60_000],
  ])('retry-after %s ms, %s strikes, max %s → %s', (retryAfterMs, strikes, maxMs, ms) => {
    expect(pauseLength(retryAfterMs, strikes, maxMs)).toBe(ms)
  })
})

function home(maxPauseMs = 60_000) {
  const clock = fakeClock(1_000_000)
  const events: string[] = []
  const pauses = new Pauses({
    clock,
    maxPauseMs,
    onBegan: (p: Pause, source) => events.push(`began ${scopeKey(p.scope).replaceAll('\n', ' ')} ${source}`),
    onEnded: (p: Pause, source) => events.push(`ended ${scopeKey(p.scope).replaceAll('\n', ' ')} ${source}`),
  })
  return { clock, events, pauses }
}

describe('Pauses: one home for every scope', () => {
  it('pauses one team on one route, lets its trial through each probe interval, and ends at an answer', () => {
    const { clock, events, pauses } = home()
    pauses.throttled('a', '/r', 60_000)
    expect(pauses.admit('b', '/r')).toEqual({ kind: 'open' })
    expect(pauses.admit('a', '/other')).toEqual({ kind: 'open' })
    expect(pauses.admit('a', '/r')).toMatchObject({ kind: 'paused', waitMs: 60_000 })
    clock.advance(5000)
    const trial = pauses.admit('a', '/r')
    expect(trial).toMatchObject({ kind: 'trial', scope: 'team-route\na\n/r' })
    expect(pauses.admit('a', '/r')).toMatchObject({ kind: 'paused', waitMs: 55_000 })
    // The trial's 429 renews the pause it tested; its answer ends it.
    pauses.throttled('a', '/r', 60_000, { trial: trial.kind === 'trial' ? trial.scope : null })
    expect(pauses.admit('a', '/r')).toMatchObject({ kind: 'paused', waitMs: 60_000 })
    pauses.answered('a', '/r', { trial: 'team-route\na\n/r' })
    expect(pauses.admit('a', '/r')).toEqual({ kind: 'open' })
    expect(events).toEqual(['began team-route a /r platform', 'ended team-route a /r platform'])
  })

  it('pauses a team on every route once it is throttled on two, and no other team', () => {
    const { pauses } = home()
    pauses.throttled('a', '/r1', 30_000)
    pauses.throttled('a', '/r2', 30_000)
    expect(pauses.admit('a', '/r3')).toMatchObject({ kind: 'paused', pause: { scope: { kind: 'team', team: 'a' } } })
    expect(pauses.admit('b', '/r1')).toEqual({ kind: 'open' })
    expect(pauses.credentialUntil).toBe(0)
  })

  it('pauses the credential only when two teams are throttled on two routes, and a probe 429 keeps it paused', () => {
    const { clock, events, pauses } = home()
    pauses.throttled('a', '/r1', 30_000)
    pauses.throttled('b', '/r2', 30_000)
    expect(pauses.credentialUntil).toBe(clock.now() + 30_000)
    // The probe call: its 429 keeps the credential paused; its answer ends it.
    pauses.throttled('(gateway)', '/probe', 60_000, { probe: true })
    expect(pauses.credentialUntil).toBe(clock.now() + 60_000)
    expect(pauses.answered('(gateway)', '/probe', { probe: true })).toHaveLength(1)
    expect(pauses.credentialUntil).toBe(0)
    expect(events.filter((e) => e.includes('credential'))).toEqual(['began credential platform', 'ended credential platform'])
  })

  it('pauses only the probe\'s route for a 429 on the probe call while the credential is not paused', () => {
    const { pauses } = home()
    pauses.throttled('(gateway)', '/probe', 30_000, { probe: true })
    pauses.throttled('(gateway)', '/probe', 30_000, { probe: true })
    expect(pauses.credentialUntil).toBe(0)
    expect(pauses.covering('growth', '/probe')).toMatchObject({ scope: { kind: 'route', route: '/probe' } })
  })

  it('pauses 1 s, then 2 s, 4 s … up to maxPause for 429s without retry-after, and starts short again after an answer', () => {
    const { clock, pauses } = home()
    const lengths = Array.from({ length: 8 }, () => {
      const pause = pauses.throttled('a', '/r', null)
      const ms = (pause?.until ?? 0) - clock.now()
      clock.advance(ms)
      return ms
    })
    expect(lengths).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000])
    pauses.answered('a', '/r')
    expect((pauses.throttled('a', '/r', null)?.until ?? 0) - clock.now()).toBe(1000)
  })

  it('tells, before a 429 is charged, the pause it draws, on the scope it escalates to, changing nothing', () => {
    const { clock, pauses } = home()
    const drawnThenCharged = (team: string, route: string, retryAfterMs: number | null) => {
      const told = pauses.drawn(team, route, retryAfterMs)
      expect(pauses.drawn(team, route, retryAfterMs)).toBe(told)
      const pause = pauses.throttled(team, route, retryAfterMs)
      const ms = (pause?.until ?? 0) - clock.now()
      clock.advance(ms)
      return [told, ms]
    }
    // 1 s, then doubled; the same team on another route pauses the team, its strikes its own; a retry-after is taken, bounded.
    expect([drawnThenCharged('a', '/r', null), drawnThenCharged('a', '/r', null), drawnThenCharged('a', '/s', null), drawnThenCharged('a', '/s', null), drawnThenCharged('a', '/s', 90_000)])
      .toEqual([[1000, 1000], [2000, 2000], [1000, 1000], [2000, 2000], [60_000, 60_000]])
  })

  it('ends a pause whose time is up though its timer is late (a busy event loop)', () => {
    const { clock, events, pauses } = home()
    pauses.throttled('a', '/late', 1000)
    // The clock moves without running timers: a late expiry.
    const now = clock.now
    clock.now = () => now() + 1500
    expect(pauses.admit('a', '/late')).toEqual({ kind: 'open' })
    expect(events).toEqual(['began team-route a /late platform', 'ended team-route a /late expired'])
  })

  it('takes a peer\'s pause, counts its throttle toward escalation, and ends it at the peer\'s word', () => {
    const { clock, pauses } = home()
    pauses.adopt({ scope: { kind: 'team-route', team: 'a', route: '/r1' }, until: clock.now() + 30_000, team: 'a', route: '/r1' })
    expect(pauses.admit('a', '/r1')).toMatchObject({ kind: 'paused' })
    // Another team's 429 on another route here: two teams within the window, the credential.
    pauses.throttled('b', '/r2', 30_000)
    expect(pauses.credentialUntil).toBeGreaterThan(0)
    pauses.endFromPeer(scopeKey({ kind: 'team-route', team: 'a', route: '/r1' }))
    expect(pauses.covering('a', '/r1', false)).toBeNull()
  })

  it('takes a peer\'s pause of a route\'s own limiter as the route\'s alone: another team\'s 429 elsewhere is not widened by it', () => {
    const { clock, pauses } = home()
    pauses.adopt({ scope: { kind: 'team-route', team: 'a', route: '/r1' }, until: clock.now() + 30_000, team: 'a', route: '/r1', own: true })
    pauses.throttled('b', '/r2', 30_000)
    expect(pauses.credentialUntil).toBe(0)
    expect(pauses.covering('b', '/r2', false)?.scope).toEqual({ kind: 'team-route', team: 'b', route: '/r2' })
  })

  it('marks a pause begun by a route\'s own 429 as such, for the peers it is told to', () => {
    const { pauses } = home()
    expect(pauses.throttled('a', '/r1', 30_000, {}, true)).toMatchObject({ own: true })
    expect(pauses.throttled('b', '/r2', 30_000)).not.toHaveProperty('own')
  })

  it('keeps at most MAX_SCOPES pauses and strikes, whatever routes callers send', () => {
    const { pauses } = home()
    for (let i = 0; i < MAX_SCOPES + 10; i++) pauses.throttled(`team-${i}`, `/r${i}`, null)
    expect(pauses.all().length).toBeLessThanOrEqual(MAX_SCOPES)
  })
})
