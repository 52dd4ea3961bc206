import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Suites start their own redis-server and sandbox; two cores run two files at once.
    maxWorkers: 2,
    reporters: process.env.CI ? ['default'] : ['default'],
  },
})
