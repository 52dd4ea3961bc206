import { describe, expect, it } from 'vitest'
import { KneeEstimator } from '../../src/platform/governor/knee-estimator.js'

type Call = { kind: 'cheap' | 'dear'; local: boolean; startedAt: number; load: number; window: number; left: number }

/**
 * The limit rule of one replica on a platform of `workers` taking calls in order (a cheap
 * kind and a dear one, each call's cost spread a little), its callers always with a call
 * to make: its seats are the rule's limit less the `remote` calls another replica keeps in
 * flight, which count in every call's load but whose ends are not seen here. Returns the
 * knee after `ms`.
 */
function learn(workers: number, remote: number, ms: number): number {
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  let seed = 7
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
  const costs = { cheap: 20, dear: 300 }
  let now = 0
  let nextTick = 100
  // Calls at the platform, in order of arrival: the first `workers` are in service.
  const platform: Call[] = []
  const send = (local: boolean) => {
    const kind = random() < 0.7 ? 'cheap' : 'dear'
    const load = platform.length + 1
    platform.push({ kind, local, startedAt: now, load, window: local ? rule.started(kind, load) : 0, left: costs[kind] * (0.9 + 0.2 * random()) })
  }
  while (now < ms) {
    while (platform.filter((c) => !c.local).length < remote) send(false)
    while (platform.length < rule.limit) send(true)
    rule.waited()
    const serving = platform.slice(0, workers)
    const first = serving.reduce((a, b) => (b.left < a.left ? b : a))
    const step = Math.min(first.left, nextTick - now)
    for (const c of serving) c.left -= step
    now += step
    if (first.left <= 1e-9) {
      platform.splice(platform.indexOf(first), 1)
      if (first.local) rule.ended({ startedAt: first.startedAt, at: now, team: 't', kind: first.kind, load: first.load, window: first.window, outcome: 'ok' })
    }
    if (now >= nextTick) {
      rule.tick(now, null)
      nextTick += 100
    }
  }
  return rule.knee
}

describe('KneeEstimator', () => {
  it('learns the workers of a platform that takes calls in order, alone', () => {
    expect(learn(12, 0, 60_000)).toBe(12)
  })

  it('learns them beside another replica whose calls it does not see end', () => {
    expect(learn(12, 4, 60_000)).toBe(12)
  })

  it('ends its start with the probe seat when only calls not known short wait beside short ones in flight', () => {
    // 8 calls at the limit, all answered together: room at 8, no queue below it.
    for (const [longMs, limit, phase] of [[4_420, 9, 'cruise'], [null, 16, 'start']] as const) {
      const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
      const windows = Array.from({ length: 8 }, () => rule.started('week', 8))
      rule.waited(longMs)
      for (const window of windows) rule.ended({ startedAt: 0, at: 100, team: 'b', kind: 'week', load: 8, window, outcome: 'ok' })
      rule.tick(1_500, null)
      expect([rule.limit, rule.knee, rule.phase], `longMs ${longMs}`).toEqual([limit, 8, phase])
    }
  })
})
