import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH as PATH, teamsYamlWith, testConfig, WEEK_BY_DATE as QUERY } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'

// What one team makes the gateway write into the Redis every team shares is bounded by
// what lives there: a team that asks report after report (a parameter the platform
// ignores, a new date range each time) fills entries that expire or are evicted, and
// nothing of them is kept past them. What never expires (report jobs' results) is bounded
// per team, by jobs.resultBytesPerTeam and by the team's even part of half of Redis'
// maxmemory: one team's results fill its part, never the Redis every team's copies, seats
// and jobs need (without the part, this test's year-long jobs of one team, more than its
// 3 MiB Redis has free, make it refuse writes: the jobs no longer end, an ask preferring
// respond-async is answered 200, as a read).

const { available } = redisAvailability()

const SECRET = 'redis-footprint-test-secret-000000000000'
// Reports of recent days live a second, so that the test sees them go; settled ones an hour.
const YAML = teamsYamlWith({
  cache: { ttl: { recent: '1s', settled: '1h' }, staleWhileRevalidate: '0s', staleIfError: '0s', refreshAhead: false },
})
const READS = 20
const TODAY = new Date().toISOString().slice(0, 10)

describe.skipIf(!available)("an advertiser's index in Redis", () => {
  const sandbox = useSandbox()
  const { server, client } = useRedis()
  const gateways = useGateways()

  /** The report keys an advertiser's index lists, whatever Redis type holds it. */
  async function listed(advertiserId: number): Promise<string[]> {
    const keys = (await client.keys(`rgw:adv*:${advertiserId}`)).filter((key) => !key.includes(':report:'))
    const members: string[] = []
    for (const key of keys) {
      const type = await client.type(key)
      members.push(...(type === 'zset' ? await client.zrange(key, 0, -1) : type === 'set' ? await client.smembers(key) : []))
    }
    return members
  }

  it('lists the entries that live, not every entry ever written of the advertiser', async () => {
    // The index drops an entry by the gateway's clock (its score is its expiry), Redis by its
    // own: the gateway's time stands still while the reads are written, however slow they are,
    // and moves past the recent entries' second once Redis has let them go.
    const clock = fakeClock()
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, GATEWAY_SECRET: SECRET }, YAML), { clock: onRealTimers(clock.now) })
    const read = async (query: string) => {
      const res = await gw.proxy.inject({ method: 'GET', url: `${PATH}?${query}`, headers: { 'x-api-key': KEYS.all } })
      expect(res.headers['x-cache']).toBe('MISS')
    }
    // A settled report keeps the advertiser's index alive while the team asks report after report.
    await read(QUERY)
    for (let i = 0; i < READS; i++) await read(`advertiserId=101&dateFrom=${TODAY}&dateTo=${TODAY}&bust=${i}`)
    expect(await listed(101)).toHaveLength(READS + 1)
    await waitFor('the recent reports to expire in Redis', async () => (await client.keys('rgw:report:*')).length === 1, testTimeLeft(), 100)
    clock.advance(1_001)

    await read(`${QUERY}&bust=settled`)
    const live = await client.keys('rgw:report:*')
    expect(live).toHaveLength(2)
    expect((await listed(101)).sort()).toEqual(live.sort())
  })
})

describe.skipIf(!available)("the teams' job results beside Redis' maxmemory", () => {
  const sandbox = useSandbox()
  const { server, client } = useRedis()
  const gateways = useGateways()
  const ASYNC = { prefer: 'respond-async' }
  // A settled year of advertiser 101 by date and campaign: each a result of tens of KB (gzip).
  const YEAR = 'advertiserId=101&byDate=1&byCampaign=1&dateFrom=2025-01-01&dateTo=2025-12-31'
  const ENDED = ['done', 'failed', 'expired']
  // A 3 MiB Redis holds its own ~1 MiB and the gateway's ~0.5 MiB; each team's part is a
  // quarter of half of it, under 20 results. The team asks batch after batch until its
  // results are more than Redis had free once the gateway started, so that without the part
  // they fill it: each result is a job's work (the platform's year, its copy, gzip), so the
  // team asks what fills Redis (about 70), not a count sized with room to spare. A Redis
  // only 1.25 MiB above what it holds refuses the team's writes beside a busy core even with
  // the part (what Redis holds beside the keys grows under load): the Redis is 3 MiB.
  const MAXMEMORY = 3 * 1024 * 1024
  const BATCH = 10

  interface JobStatus {
    id: string
    state: string
    error: { code: string; message: string; statusCode?: number } | null
  }

  async function build(yaml: string) {
    return gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, GATEWAY_SECRET: SECRET }, yaml))
  }

  async function startWith(maxmemory: string, resultBytesPerTeam: string) {
    await client.config('SET', 'maxmemory', maxmemory)
    try {
      return await build(teamsYamlWith({ jobs: { resultBytesPerTeam } }))
    } finally {
      await client.config('SET', 'maxmemory', '0')
    }
  }

  type Gateway = Awaited<ReturnType<typeof build>>

  async function usedMemory(): Promise<number> {
    return Number(/^used_memory:(\d+)\r?$/m.exec(await client.info('memory'))?.[1])
  }

  /** Asks `query` as a job of the team of `key`: its status once asked (202). */
  async function ask(gw: Gateway, query: string, key: string): Promise<JobStatus> {
    const res = await gw.proxy.inject({ method: 'GET', url: `${PATH}?${query}`, headers: { 'x-api-key': key, ...ASYNC } })
    expect(res.statusCode).toBe(202)
    return res.json<JobStatus>()
  }

  async function status(gw: Gateway, id: string, key: string): Promise<JobStatus> {
    const res = await gw.proxy.inject({ method: 'GET', url: `/api/v1/jobs/${id}`, headers: { 'x-api-key': key } })
    expect(res.statusCode).toBe(200)
    return res.json<JobStatus>()
  }

  /**
   * Each job of `ids` once it ended (waits for all of them). Each look asks the jobs in
   * order up to the first still running, not every job still running: a look costs a
   * status call or two however many jobs wait, so a slow machine's longer wait adds looks,
   * not a batch's worth of calls to each.
   */
  async function ended(gw: Gateway, ids: string[], key: string): Promise<JobStatus[]> {
    const done: JobStatus[] = []
    await waitFor(
      () => `${ids.length - done.length} of ${ids.length} jobs to end`,
      async () => {
        while (done.length < ids.length) {
          const next = await status(gw, ids[done.length] as string, key)
          if (!ENDED.includes(next.state)) return false
          done.push(next)
        }
        return true
      },
      testTimeLeft(),
      50,
    )
    return done
  }

  it("bounds one team's results by its part of half of Redis' maxmemory: the other teams' copies, seats and jobs go on, and its job past the bound fails 413 naming it", async () => {
    // The replicas guide's policy, on a Redis one team's 256MiB of results could fill many times over.
    await client.config('SET', 'maxmemory-policy', 'volatile-lru')
    await client.config('SET', 'maxmemory', String(MAXMEMORY))
    try {
      const gw = await build(teamsYamlWith({ jobs: { resultBytesPerTeam: '256MiB' } }))
      // Team all asks a new year's report as a job, batch after batch, until it has asked
      // more than Redis has free.
      const free = MAXMEMORY - (await usedMemory())
      const failures: JobStatus[] = []
      let [asked, resultBytes] = [0, 0]
      while (asked * resultBytes <= free) {
        const ids: string[] = []
        for (let i = 0; i < BATCH; i++) ids.push((await ask(gw, `${YEAR}&bust=${asked++}`, KEYS.all)).id)
        failures.push(...(await ended(gw, ids, KEYS.all)).filter((s) => s.state !== 'done'))
        const [result] = await client.keys('rgw:{jobs}:result:*')
        // A batch within the part leaves its results in Redis: with none, the loop would never end.
        expect(result, 'a result of the batch held in Redis').toBeDefined()
        resultBytes = Number(await client.memory('USAGE', result as string))
      }
      // Its jobs past its part fail as a job past jobs.resultBytesPerTeam does, naming why.
      expect(failures.length).toBeGreaterThan(0)
      for (const failed of failures) {
        expect(failed.error).toMatchObject({ code: 'GW_JOB_RESULT_TOO_LARGE', statusCode: 413 })
        expect(failed.error?.message).toMatch(/maxmemory/)
      }
      // Another team reads a report (its copy stored in Redis, its seat leased there) and
      // asks a job, which runs and ends: Redis still takes writes. (The flood's own copies
      // expire, so Redis evicts among them and the other keys that expire, seats included,
      // which the replica asks for again: misses, as docs/decisions/redis-footprint.md says.)
      const before = new Set(await client.keys('rgw:report:*'))
      const read = await gw.proxy.inject({ method: 'GET', url: `${PATH}?${QUERY}`, headers: { 'x-api-key': KEYS.growth } })
      expect([read.statusCode, read.headers['x-cache']]).toEqual([200, 'MISS'])
      expect((await client.keys('rgw:report:*')).filter((key) => !before.has(key))).toHaveLength(1)
      const job = await ask(gw, `${YEAR}&bust=growth`, KEYS.growth)
      expect((await ended(gw, [job.id], KEYS.growth))[0]).toMatchObject({ state: 'done' })
      expect(gw.logs.text()).not.toContain('ending a report job failed')
    } finally {
      await client.config('SET', 'maxmemory', '0')
      await client.config('SET', 'maxmemory-policy', 'noeviction')
    }
  })

  it("says each team's bound once at start when its part of half of maxmemory is the smaller, naming both", async () => {
    const gw = await startWith('64mb', '256MiB')
    const said = gw.logs.records().filter((r) => String(r.msg).startsWith("report jobs' results: each team's bound is"))
    expect(said).toHaveLength(1)
    const teams = said[0]?.teams as number
    expect(teams).toBeGreaterThan(0)
    expect(said[0]).toMatchObject({ level: 30, resultBytesPerTeam: 256 * 1024 * 1024, roomBytes: 32 * 1024 * 1024, boundBytes: Math.floor((32 * 1024 * 1024) / teams), maxmemory: 64 * 1024 * 1024 })
  })

  it('says nothing when jobs.resultBytesPerTeam fits in its part, or Redis has no maxmemory', async () => {
    const fits = await startWith('1gb', '1MiB')
    expect(fits.logs.text()).not.toContain("report jobs' results")
    const unlimited = await startWith('0', '256MiB')
    expect(unlimited.logs.text()).not.toContain("report jobs' results")
  })
})
