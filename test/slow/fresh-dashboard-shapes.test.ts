import { describe, it } from 'vitest'
import { expectKnownMisses } from '../sim/family.js'
import { freshDashboardMiss, freshDashboardShape } from '../sim/fresh-dashboard-shapes.js'

// The two-teams bench's fresh row as a family, 100 seeded shapes (test/sim/fresh-dashboard-shapes.ts):
// a fresh gateway, a team of long reports first, a dashboard that waits for all its answers a few
// seconds later, within its nominal share. 11 seeds miss (docs/governor.md, "What the simulator
// still finds"; decisions/governor-model.md, "A fresh gateway, long reports first, a dashboard
// after: a family"): the start doubled on the long calls alone before the dashboard came, past W,
// and the queue verdict waits on their answers (67: 9 workers, the limit 16 from 4.7 s to 17.8 s,
// the dashboard's calls queued at the platform behind calls of 4.2 s: 53 % of itself alone); on
// 47 and 48 workers the start steps by a seat or three a second beside the dashboard (38: 16 → 45
// from 10.4 s to 23.4 s), and 1, 38 and 42 idle workers past 2 % as well.
const KNOWN_MISSES = [1, 23, 38, 42, 45, 46, 53, 54, 67, 69, 86]

describe('a fresh gateway, long reports first, a dashboard after: 100 seeded shapes', () => {
  it('keeps the dashboard at 80 % of itself alone and every worker busy for a call waiting on every seed but the known misses, and those still miss', async () => {
    await expectKnownMisses(100, KNOWN_MISSES, (seed) => freshDashboardMiss(freshDashboardShape(seed)))
  }, 900_000)
})
