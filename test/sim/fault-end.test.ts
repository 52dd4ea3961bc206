import { describe, expect, it } from 'vitest'
import { Random } from './random.js'
import { simulate, type Scenario } from './simulate.js'
import { checkGuarantees } from './checks.js'
import { newGovernor } from './new-governor.js'

// A fault ends on an answer of any replica's (docs/governor.md, "Faults"). The shapes: two
// replicas; on r0, the learner (its calls answer most), a team of short calls that stops
// as the platform goes down and one of long calls, longer than *recovery*'s 10 s; on r1, a
// team of calls of 30 to 300 ms, enough of them to keep every worker busy. After the
// outage the limit is at its minimum, r0's seat holds a long call, and every answer for
// that long is r1's: a learner that ended its fault on its own answers alone held the
// limit there until its long call answered.
const STREAM = 0xfe_0000
const SHAPES = 6

function learnerLeftWithLongCalls(seed: number): { scenario: Scenario; longMs: number } {
  const r = new Random(STREAM + seed)
  const outage = { from: 30_000, to: 30_000 + r.int(3_000, 10_000) }
  const durationMs = outage.to + 25_000
  const callers = (n: number, costMs: number, name: string) => ({ kind: 'callers' as const, callers: n, reports: [{ name, costMs }], thinkMs: [0, 10] as [number, number] })
  const workers = r.int(8, 32)
  const spread = r.uniform(0.05, 0.3)
  const short = callers(r.int(24, 48), r.int(20, 60), 'k0')
  const longMs = r.int(11_000, 25_000)
  const scenario: Scenario = {
    seed, durationMs, workers, spread, slowness: [], stalls: [], outages: [outage], shedding: [], storeStalls: [], replicas: 2,
    teams: [
      { name: 'short', weight: 3, behaviour: short, replicas: [0], from: 0, until: outage.from },
      { name: 'long', weight: 1, behaviour: callers(8, longMs, 'k1'), replicas: [0], from: 0, until: durationMs },
      { name: 'other', weight: 1, behaviour: callers(2 * workers, r.int(30, 300), 'k2'), replicas: [1], from: 0, until: durationMs },
    ],
  }
  return { scenario, longMs }
}

describe('a fault across replicas', () => {
  // A shape a test: each simulates about 1 minute of platform time, and the shapes are many seconds of CPU together.
  it.each(Array.from({ length: SHAPES }, (_, i) => i + 1))('shape %i: ends on the other replica\'s answers where the learner\'s seat holds a call longer than recovery allows', async (seed) => {
    const failed: string[] = []
    const { scenario, longMs } = learnerLeftWithLongCalls(seed)
    const verdicts = checkGuarantees(await simulate(scenario, newGovernor))
    if (!verdicts.some((v) => v.guarantee === 'recovery')) failed.push(`shape ${seed}: recovery not judged`)
    for (const v of verdicts) if (!v.ok) failed.push(`shape ${seed} (${scenario.workers} workers, long calls ${longMs} ms): ${v.guarantee}: ${v.detail}`)
    expect(failed).toEqual([])
  })
})
