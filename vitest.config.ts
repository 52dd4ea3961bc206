import { BaseSequencer, type TestSpecification } from 'vitest/node'
import { configDefaults, defineConfig } from 'vitest/config'

/**
 * Vitest's order (failed first, then longest, else largest file), but the simulator's
 * sweeps first of all: each is one long test, and started last it would run alone at the end.
 * The files of npm test's sweep in the run are provided to them as `sweepFiles`: they share
 * the seeds out (test/sim/sweep-suite.ts), one file a worker.
 */
class SweepFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    const sweep = (f: TestSpecification) => f.moduleId.endsWith('sweep.test.ts') || SWEEP_FILES.some((name) => f.moduleId.endsWith(`/${name}`))
    const parts = SWEEP_FILES.flatMap((name) => sorted.filter((f) => f.moduleId.endsWith(`/${name}`)))
    for (const project of new Set(parts.map((f) => f.project))) project.provide('sweepFiles', parts.map((f) => f.moduleId))
    return [...sorted.filter(sweep), ...sorted.filter((f) => !sweep(f))]
  }
}

/** npm test's sweep, in the order its files share the seeds out. */
const SWEEP_FILES = ['test/sim/sweep.test.ts', 'test/sim/sweep-second-half.test.ts']

const UNIT = 'test/unit/**/*.test.ts'
// npm test's suites: servers, Redis and the simulator, each file closing what it starts;
// npm run test:slow's folders apart.
const SLOW = ['test/faults/**/*.test.ts', 'test/slow/**/*.test.ts', 'test/console/**/*.test.ts']
const SUITES = ['test/!(unit|faults|slow|console)/**/*.test.ts']
// Files that read the process's own state (the event loop's idle time, Node's timer
// lists, the heap), which other files leave changed in a shared worker
// (docs/decisions/test-isolation.md): each in a process of its own.
const OWN_PROCESS = [
  'test/unit/answer-timing.test.ts',
  'test/unit/answer-timing-probe.test.ts',
  'test/unit/stepped-timers.test.ts',
  'test/integration/cache-store.test.ts',
]

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Suites start their own redis-server and sandbox; two cores run two files at once.
    maxWorkers: 2,
    // Vitest's runner, stamping when each test's body starts: its timeout counts from there.
    runner: './test/helpers/body-timed-runner.ts',
    sequence: { sequencer: SweepFirst },
    // Tests skipped for a missing tool are named in the run's last line; with CI=true they fail it.
    globalSetup: ['test/helpers/missing-tools-setup.ts'],
    projects: [
      // Pure functions: their files share a worker's modules rather than each importing
      // them again (test/unit in about half the time on two cores). No unit file writes
      // module-level state, and faked timers are restored after each test.
      { extends: true, test: { name: 'unit', include: [UNIT], exclude: [...configDefaults.exclude, ...OWN_PROCESS], isolate: false } },
      // Servers, Redis and the simulator: their files share a worker's modules too
      // (docs/decisions/test-isolation.md). Each closes what it starts.
      { extends: true, test: { name: 'suites', include: SUITES, exclude: [...configDefaults.exclude, ...OWN_PROCESS], isolate: false } },
      // npm run test:slow's folders (processes killed, Redis frozen, browsers) and the files above, isolated.
      { extends: true, test: { name: 'own-process', include: [...SLOW, ...OWN_PROCESS] } },
    ],
  },
})
