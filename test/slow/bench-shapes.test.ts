import { describe, expect, it } from 'vitest'
import { benchMisses, benchShape, describeBenchShape, scaleBenchShape } from '../sim/bench-shapes.js'
import { unexpected, type SeedFailure } from '../sim/sweep.js'

// The benchmarks' shapes the sweep does not draw (test/sim/bench-shapes.ts): the scale
// bench's crowded platform, on a gateway whose loop is its own or busy from its start, and
// the two-teams bench's dashboard that arrives beside year-long callers on a fresh gateway,
// on a platform on timers and a loop that waits a few ms for its core. Three rules of the
// limit are there for these shapes alone (docs/decisions/governor-model.md, "The benchmarks'
// shapes in the simulator"): without the start's levels (StartLevels) seeds 3, 8, 9, 13,
// 15, 20 and 32 break their refusals or throughput; without the workers' worth (`served`)
// 24 its throughput; without the probe seat's TIE 5 and 10 the
// newcomer's throughput (and 5 work-conserving). BENCH_SEED=<n> replays one, printing
// every check it breaks; BENCH_RECORD=1 prints the failing seeds as KNOWN_MISSES' rows.
//
// The known miss, a shape the model does not keep yet: a fresh gateway where the dashboard
// that arrives 5 s after the year's callers keeps less than 80 % of itself alone (23: the
// doubling 8 → 16 just before its first ask gives every seat to year calls for its first 5 s;
// docs/decisions/governor-model.md, "The start beside a team holding no seat, and calls that end together").
// Crowded 2 and 34 hold since the start's levels are read on the calls that took their last
// seat (docs/decisions/governor-model.md, "The capacity bench's start past the refusal").
const KNOWN_MISSES = new Map<number, readonly string[]>([
  [23, ['the newcomer']],
])

const only = process.env.BENCH_SEED === undefined ? null : Number(process.env.BENCH_SEED)
const SEEDS = only === null ? Array.from({ length: 40 }, (_, i) => i + 1) : [only]

describe('the benchmarks\' shapes, 40 seeded', () => {
  it('keeps every guarantee and the benches\' targets on every seed but the known misses, and those still miss', async () => {
    const failed: SeedFailure[] = []
    for (const seed of SEEDS) {
      const shape = benchShape(seed)
      const broken = await benchMisses(shape)
      if (only !== null) console.log(`${describeBenchShape(shape)}\n  ${broken.map((b) => `${b.guarantee}: ${b.detail}`).join('\n  ') || 'every guarantee kept'}`)
      if (broken.length > 0) failed.push({ seed, guarantees: broken.map((b) => b.guarantee), text: `${describeBenchShape(shape)}\n  ${broken.map((b) => `${b.guarantee}: ${b.detail}`).join('\n  ')}\n  replay: BENCH_SEED=${seed} npx vitest run test/slow/bench-shapes.test.ts` })
    }
    if (process.env.BENCH_RECORD === '1') console.log(failed.map((f) => `  [${f.seed}, [${f.guarantees.map((g) => `'${g}'`).join(', ')}]],`).join('\n'))
    const out = unexpected(SEEDS, failed, KNOWN_MISSES)
    expect(out, out.join('\n')).toEqual([])
  }, 120_000)
})

// The scale bench's own platform on a loop late 50 ms on average (half a call's cost: every
// answer read late), 10 seeds: the start doubles 32 → 64 on 2 and 7 with 15 of the 32 seats
// at the platform (the rest held answers come but not read), and 429s at 64 seats said
// the platform took 63, then 62, … (one seat a round of 4 to 9 × 429): the
// limit walked down to 49 and the probe seat there drew 429s for seconds (3.5 % and 1.8 % of
// the calls). Read late, a refusal takes the limit back to the level the doubling left
// (docs/governor.md, "Start"). Judged on the refusals alone: at this lateness a limit of 17
// or 18 gives under half the knee's answers a second on seeds 1, 3, 4, 9 and 10 (the loop's
// wakes hold every seat past its call's 100 ms).
describe('the scale bench\'s platform, every answer read late, 10 seeds', () => {
  it('draws 429 on under 1 % of the calls', async () => {
    const refused: string[] = []
    for (let seed = 1; seed <= 10; seed++) for (const b of await benchMisses(scaleBenchShape(seed, 50))) if (b.guarantee === 'refusals') refused.push(`seed ${seed}: ${b.detail}`)
    expect(refused, refused.join('\n')).toEqual([])
  }, 120_000)
})
