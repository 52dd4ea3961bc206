import { defineConfig } from 'vitest/config'

// A run of one file that skips for a missing tool, with the suite's global set-up: what
// test/unit/missing-tools.test.ts runs to see the run's last line and exit code.
export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: ['skips.fixture.ts'],
    globalSetup: ['../missing-tools-setup.ts'],
  },
})
