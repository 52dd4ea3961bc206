import { describe, expect, it } from 'vitest'
import { KneeEstimator } from '../../src/platform/governor/knee-estimator.js'

/** How the gateway read an answer (answer-timing.ts): `first` whether it is the first of the answers that ended together. */
type Reading = (first: boolean) => { timed: boolean; bunched?: boolean }

/**
 * The start of the limit rule of one replica whose callers hold every seat of the limit and
 * wait for more, on the scale bench's platform (no queue: 100 ms a call up to 24 in flight,
 * 40 ms more for each call past them), each answer read as `read` says (calls started
 * together end together: a bunch). Returns the highest limit in force over `ms`.
 */
function startOnCrowdedPlatform(read: Reading, ms: number): number {
  const [knee, costMs, slopeMs] = [24, 100, 40]
  const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
  const inFlight: { startedAt: number; load: number; window: number; endsAt: number }[] = []
  let [highest, nextTick, lastEnd] = [rule.limit, 100, -1]
  for (let now = 0; now < ms; ) {
    while (inFlight.length < rule.limit) {
      const load = inFlight.length + 1
      inFlight.push({ startedAt: now, load, window: rule.started('report', load), endsAt: now + costMs + slopeMs * Math.max(0, load - knee) })
      inFlight.sort((a, b) => a.endsAt - b.endsAt)
    }
    if (inFlight[0]!.endsAt <= nextTick) {
      const call = inFlight.shift()!
      const first = call.endsAt !== lastEnd
      now = lastEnd = call.endsAt
      rule.ended({ startedAt: call.startedAt, at: now, team: 't', kind: 'report', load: call.load, window: call.window, outcome: 'ok', ...read(first) })
      continue
    }
    now = nextTick
    nextTick += 100
    rule.waited()
    rule.tick(now, null)
    highest = Math.max(highest, rule.limit)
  }
  return highest
}

describe('KneeEstimator: the start on answers it cannot time', () => {
  it('doubles while calls wait on answers it learned from', () => {
    expect(startOnCrowdedPlatform(() => ({ timed: true }), 20_000)).toBeGreaterThan(8)
  })

  // 50 replicas in one process (the scale bench's host): few answers timed, and the start
  // doubled 8 → 16 → 32 → 64 on the calls that waited, past the platform's refusal at 48.
  it('does not double on answers it cannot time: none timed, the limit stays where it began', () => {
    expect(startOnCrowdedPlatform(() => ({ timed: false }), 20_000)).toBe(8)
  })

  // A dashboard's view: its answers end together, the first read in a wake of the loop timed,
  // the others read after it (bunched). The bunch counts whole: the start doubles as on answers
  // all timed, where counting the first alone it waits for MIN_CALLS bunches a doubling.
  it('doubles on bunches whose first answer is timed as on answers all timed', () => {
    const ms = 1_500
    const all = startOnCrowdedPlatform(() => ({ timed: true }), ms)
    expect(startOnCrowdedPlatform((first) => ({ timed: first, bunched: !first }), ms)).toBe(all)
    expect(startOnCrowdedPlatform((first) => ({ timed: first }), ms)).toBeLessThan(all)
  })

  // The two-teams bench on a fresh gateway: year-long calls' first bunch read over some ms, a
  // tick after 7 of its 8 answers (and an untimed call of the gateway's own), the 8th 6 ms later.
  it('a doubling short of evidence by a bunch\'s last answers waits for them: the decision is not spent', () => {
    const rule = new KneeEstimator({ initial: 8, min: 2, max: 64 })
    const t0 = 1_000_000
    const own = rule.started('own', 1)
    const calls = Array.from({ length: 8 }, (_, i) => rule.started('year', i + 2))
    const end = (window: number, at: number, kind: string, read: { timed: boolean; bunched?: boolean }) =>
      rule.ended({ startedAt: t0, at, team: 't', kind, load: 1, window, outcome: 'ok', ...read })
    end(own, t0 + 50, 'own', { timed: false })
    calls.slice(0, 7).forEach((w, i) => end(w, t0 + 4_400 + i, 'year', { timed: i === 0, bunched: i > 0 }))
    rule.waited()
    expect(rule.tick(t0 + 4_410, null)).toBeNull()
    end(calls[7]!, t0 + 4_416, 'year', { timed: false, bunched: true })
    rule.waited()
    expect(rule.tick(t0 + 4_420, null)?.limit).toBe(16)
  })
})
