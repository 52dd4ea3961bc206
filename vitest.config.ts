import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Suites start their own redis-server and sandbox; two cores run two files at once.
    maxWorkers: 2,
    // Tests skipped for a missing tool are named in the run's last line; with CI=true they fail it.
    globalSetup: ['test/helpers/missing-tools-setup.ts'],
    reporters: process.env.CI ? ['default'] : ['default'],
  },
})
