import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, inject, it } from 'vitest'
import { knownFailuresSource, sweep, unexpected } from './sweep.js'
import { KNOWN_FAILURES } from './known-failures.js'
import { marginsReport, marginsText, parseMargins, type SweepMargins } from './margins.js'

// The governor's guarantees (docs/governor.md) on seeded random platforms and teams: the
// real governor on a simulated clock. SIM_RUNS sets how many seeds (from SIM_FIRST);
// SIM_SEED replays one, printing every check, and fails on any broken guarantee, known or
// not. test/slow/sim-sweep.test.ts runs 2,000 more. A seed in known-failures.ts must still
// break what it lists and nothing else; any other failure fails the sweep. SIM_RECORD=1
// writes the failures of the seeds run as the new list (SIM_RUNS=2200 covers both sweeps).
// SIM_MARGINS=<file> writes every seed's margins there (JSON) and their table beside it
// (<file>.md); with SIM_MARGINS_AGAINST=<an earlier such file>, how they moved from it.
//
// The seeds are shared out between the sweep's files in the run (sweep.test.ts and
// sweep-second-half.test.ts), each on a worker of its own: vitest.config.ts's sequencer
// provides the files it runs as `sweepFiles`. A file run alone runs every seed; a replay,
// a record or margins run whole in the first file, as each is written once.

declare module 'vitest' {
  export interface ProvidedContext {
    /** The sweep's files in this run, in the sequencer's order. */
    sweepFiles: string[]
  }
}

const REPLAY = 'npx vitest run test/sim/sweep.test.ts'

/** The part of `seeds` that file `index` of `count` runs: contiguous shares, sizes within one. */
export function shareOf<T>(seeds: readonly T[], index: number, count: number): T[] {
  return seeds.slice(Math.floor((index * seeds.length) / count), Math.floor(((index + 1) * seeds.length) / count))
}

/** The sweep's test, for the file at `fileUrl` (its `import.meta.url`). */
export function sweepSuite(fileUrl: string): void {
  const runs = Number(process.env.SIM_RUNS ?? 200)
  const first = Number(process.env.SIM_FIRST ?? 1)
  const only = process.env.SIM_SEED === undefined ? null : Number(process.env.SIM_SEED)
  const record = process.env.SIM_RECORD === '1'
  const marginsFile = process.env.SIM_MARGINS
  const against = process.env.SIM_MARGINS_AGAINST
  const file = fileURLToPath(fileUrl)
  const files = inject('sweepFiles') ?? [file]
  const index = Math.max(0, files.indexOf(file))
  const whole = only !== null || record || marginsFile !== undefined
  const all = only === null ? Array.from({ length: runs }, (_, i) => first + i) : [only]
  const seeds = whole ? (index === 0 ? all : []) : shareOf(all, index, files.length)
  // A guard against a hang, not a bound on speed: ten minutes, or four seconds a seed past
  // 150 seeds. A seed takes about 0.2 s of CPU (each half of npm test's 200 seeds about 21 s
  // in a quiet CI), so a file has about twenty times its CPU, room for a machine whose load
  // is ten times its cores (a 2,200-seed record ran 1.6 s a seed at load 12-25).
  const timeoutMs = Math.max(600_000, seeds.length * 4_000)
  const range = `${first}–${first + runs - 1}`
  const name = only !== null
    ? `keeps every guarantee in scenario ${only}`
    : seeds.length === 0
      ? `has none of seeds ${range} to run (a replay or a record runs whole in the first of the sweep's files)`
      : `keeps every guarantee over seeds ${seeds[0]}–${seeds.at(-1)} of ${range}, but for the known failures`

  describe('the governor on random platforms', () => {
    it.skipIf(seeds.length === 0)(name, async () => {
      const margins: SweepMargins = {}
      const failed = await sweep(seeds, REPLAY, only !== null, (seed, of) => {
        margins[seed] = of
      })
      if (marginsFile !== undefined) {
        writeFileSync(marginsFile, marginsText(margins))
        const report = marginsReport(margins, against === undefined ? undefined : parseMargins(readFileSync(against, 'utf8')))
        writeFileSync(`${marginsFile}.md`, `${report}\n`)
        console.log(report)
      }
      if (only !== null) expect(failed.map((f) => f.text)).toEqual([])
      if (record) writeFileSync(new URL('./known-failures.ts', import.meta.url), knownFailuresSource(failed))
      const wrong = unexpected(seeds, failed, KNOWN_FAILURES)
      expect(wrong, wrong.join('\n')).toEqual([])
    }, timeoutMs)
  })
}
