import { TestRunner, type RunnerTestCase } from 'vitest'

declare module 'vitest' {
  interface TaskMeta {
    /** When the running try of the test called its body (Date.now()); absent outside it. */
    bodyStartedAt?: number
  }
}

/**
 * Vitest's runner, stamping a test's meta with when its body started: the test's own
 * timeout counts from there, its beforeEach hooks having hookTimeout of their own.
 * testTimeLeft (wait.ts) counts from the stamp; during the hooks there is none.
 */
export default class BodyTimedRunner extends TestRunner {
  async runTask(test: RunnerTestCase): Promise<void> {
    const body = TestRunner.getTestFn(test)
    test.meta.bodyStartedAt = Date.now()
    try {
      await body()
    } finally {
      delete test.meta.bodyStartedAt
    }
  }
}
