import { sweepSuite } from './sweep-suite.js'

// The simulator's sweep, second half (test/sim/sweep-suite.ts): npm test runs it beside
// sweep.test.ts, on the other worker.
sweepSuite(import.meta.url)
