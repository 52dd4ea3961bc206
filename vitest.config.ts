import { BaseSequencer, type TestSpecification } from 'vitest/node'
import { defineConfig } from 'vitest/config'

/**
 * Vitest's order (failed first, then longest, else largest file), but the simulator's
 * sweep first of all: it is one long test, and started last it would run alone at the end.
 */
class SweepFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    const sweep = (f: TestSpecification) => f.moduleId.endsWith('sweep.test.ts')
    return [...sorted.filter(sweep), ...sorted.filter((f) => !sweep(f))]
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Suites start their own redis-server and sandbox; two cores run two files at once.
    maxWorkers: 2,
    sequence: { sequencer: SweepFirst },
    // Tests skipped for a missing tool are named in the run's last line; with CI=true they fail it.
    globalSetup: ['test/helpers/missing-tools-setup.ts'],
  },
})
