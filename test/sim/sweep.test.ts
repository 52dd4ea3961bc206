import { sweepSuite } from './sweep-suite.js'

// The simulator's sweep, first half (test/sim/sweep-suite.ts): the whole sweep when run
// alone, as in `SIM_SEED=<n> npx vitest run test/sim/sweep.test.ts`.
sweepSuite(import.meta.url)
