import { request } from 'undici'
import { beforeAll, describe, expect, it } from 'vitest'
import { KEYS, listen, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { newCampaign } from '../helpers/sandbox-gateway.js'
import { waitFor } from '../helpers/wait.js'
import { seatsOf } from '../helpers/governors.js'
import { LENDING_HORIZON_MS } from '../../src/platform/governor/dispatch-order.js'

// A team that games the work estimate (docs/governor.md, "The dispatch rule" 2): its cheap
// calls of a route keep the route's estimate short, then its costly calls of the same route
// (a page of hundreds of rows, where the cheap ones asked one) are lent the seats owed to
// another team as short calls, and that team, back within its nominal share, waits for them
// a costly call's time, not the lending horizon (*isolation*). The sandbox works on each row
// a list call answers (Capacity's perRowMs), as the platform's paginate() does.

const sandbox = useSandbox()
const gateways = useGateways()
useRedis()

const ROWS = 200
const PER_ROW_MS = 15
const LIST = '/api/v1/campaign/get'
// Account 103, which team `all` reads: it gets ROWS campaigns more than its generated few.
const ACCOUNT = 103

function report(n: number): string {
  const day = (offset: number) => new Date(Date.UTC(2021, 0, 1 + offset)).toISOString().slice(0, 10)
  return `/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=${day(n)}&dateTo=${day(n + 6)}`
}

describe('a team priming a route\'s estimate with cheap calls', () => {
  beforeAll(async () => {
    const token = sandbox.issueToken()
    for (let i = 0; i < ROWS; i += 20) {
      await Promise.all(Array.from({ length: 20 }, async () => {
        const res = await fetch(`${sandbox.url}/api/v1/campaign/banner/create`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(newCampaign(ACCOUNT)) })
        expect(res.status).toBe(201)
      }))
    }
  })

  /** Team `all` primes the route with `cheap` pages of `account` (a few ms each), then sends pages of ROWS rows of ACCOUNT; what team `growth`'s view waits for a seat then. */
  async function attack(cheap: string, account: number): Promise<void> {
    const token = sandbox.issueToken()
    sandbox.setCapacity({ workers: 4, perRowMs: PER_ROW_MS })
    // The limit held at the workers; no token probe, whose team would be owed a seat too.
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token }, `${TEAMS_YAML}\nplatform: { adaptive: false, maxConcurrent: 4, probe: null }`)))
    const seats = seatsOf(gw)
    const list = async (query: string, userId = ACCOUNT): Promise<number> => {
      const res = await request(`${gw.url}${LIST}?${query}`, { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: JSON.stringify({ userId }) })
      await res.body.dump()
      return res.statusCode
    }
    let n = 0
    // Team `growth`, a dashboard: two reports at once (its nominal share of 4 seats beside one other team), the time until both are answered.
    const view = async (): Promise<number> => {
      const started = performance.now()
      const answers = await Promise.all([n++, n++].map(async (i) => {
        const res = await request(`${gw.url}${report(i * 10)}`, { headers: { 'x-api-key': KEYS.growth } })
        await res.body.dump()
        return res.statusCode
      }))
      expect(answers).toEqual([200, 200])
      return performance.now() - started
    }

    await view()
    // Team `all` primes the route with cheap pages, answered in a few ms.
    for (let i = 0; i < 3; i++) expect(await list(cheap, account)).toBe(200)
    // Then pages of ROWS rows (3 s of work each), from 8 callers: more than its share.
    let stopped = false
    const statuses: number[] = []
    const costly = Array.from({ length: 8 }, async () => {
      while (!stopped) statuses.push(await list(`per_page=${ROWS + 100}`))
    })
    try {
      await waitFor('the costly pages holding their seats, more of them waiting', () => seats.running('all') >= 2 && (seats.waiting().get('all') ?? 0) > 0)
      // The dashboard back, within its linger: its seats were not lent to calls that take 3 s.
      const waited = await view()
      expect(waited).toBeLessThan(LENDING_HORIZON_MS + 500)
    } finally {
      stopped = true
      await Promise.all(costly)
    }
    expect(statuses.length).toBeGreaterThan(0)
    expect(statuses.every((s) => s === 200)).toBe(true)
  }

  // Pages of one row; pages past the last (no rows); then pages of every row.
  it.each([['per_page=1'], [`per_page=${ROWS + 100}&page=9`]])('(%s) is lent no seat owed to another team for its costly calls of the route: the other, back within its share, waits for a seat within the lending horizon', (cheap) => attack(cheap, ACCOUNT), 60_000)

  // A known miss (decisions/work-class-pages.md): the class does not hold the account, so
  // full pages of an account of a few rows (101's 3 to 6) prime the class of full pages of
  // one of hundreds, as a report of a small advertiser primes one of a large advertiser.
  it.fails('(full pages of a small account) is lent no seat owed to another team for full pages of a large one', () => attack(`per_page=${ROWS + 100}`, 101), 60_000)
})
