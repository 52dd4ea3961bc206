import { expect, it } from 'vitest'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { MAX_KINDS } from '../../src/platform/governor/work-estimates.js'
import { call, itLoggedNoSecret, useAttackGateway } from '../attacks/attack-gateway.js'

// The governor keeps MAX_KINDS work estimates (team × work class) and as many kinds for the
// limit rule. One team's misses of MAX_KINDS distinct report shapes (a page size and a page,
// each its own class: access/page-class.ts) would push out, least recently seen first,
// another team's own estimates were room made from any team's: its jobs' `expectedSeconds`
// (learned from its own calls only, the contract says) would read null again, and its calls
// be judged by other teams' figures. Room is made from the team holding the most kinds.

const sg = useAttackGateway()
const REPORT = '/api/v1/report/campaigns/get'
const SHAPE = 'advertiserId=102&byDate=1&dateFrom=2026-11-01'
const ASYNC = { prefer: 'respond-async' }

/** growth's job of its report's shape (a day of November: another copy, the same work class), and its `expectedSeconds`. */
async function growthExpects(day: number): Promise<number | null> {
  const asked = await call(sg, 'GET', `${REPORT}?${SHAPE}&dateTo=2026-11-${String(day).padStart(2, '0')}`, { key: KEYS.growth, headers: ASYNC })
  expect(asked.status).toBe(202)
  const job = await call(sg, 'GET', `/api/v1/jobs/${String(asked.json.id)}`, { key: KEYS.growth })
  return job.json.expectedSeconds as number | null
}

it("one team's many report shapes leave another team's own work estimates", async () => {
  // A month and a week of November fall in the same range class (⌈log2(days + 1)⌉ = 5).
  expect((await call(sg, 'GET', `${REPORT}?${SHAPE}&dateTo=2026-11-30`, { key: KEYS.growth })).status).toBe(200)
  expect(await growthExpects(20)).not.toBeNull()
  // all: a shape of its own per page size × page (2^i rows, page 2^j), every one a miss answered.
  let shapes = 0
  for (let i = 0; shapes < MAX_KINDS + 8; i++) {
    for (let j = 0; j < 24 && shapes < MAX_KINDS + 8; j++, shapes++) {
      const res = await call(sg, 'GET', `${REPORT}?advertiserId=101&dateFrom=2026-11-01&dateTo=2026-11-07&per_page=${2 ** i}&page=${2 ** j}`)
      expect(res.status).toBe(200)
    }
  }
  expect(await growthExpects(21)).not.toBeNull()
}, 120_000)

itLoggedNoSecret(sg)
