import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { KEYS, listen, TEAMS_YAML, testConfig, UPLOADER_KEY, withUploader, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// The platform's count shared out across replicas (docs/governor.md, "The platform's count,
// shared out"): two replicas on one real redis-server, in front of one sandbox that counts
// 10 calls of the token a window and refuses past them, as Laravel's throttle:api does.
// Team `all` asks on one replica, team `uploader` (the same weight) on the other: each
// replica hears the other's record, and a team alone on its replica is held to its share.

const { available } = redisAvailability("the platform's count across replicas")
const PATH = '/api/v1/report/campaigns/get'
const LIMIT = 10

describe.skipIf(!available)("the platform's count of the credential's calls, shared out across replicas", () => {
  /** The sandbox's throttle time while it stands still (null: the wall clock's). */
  let still: number | null = null
  const sandbox = useSandbox({ throttleClock: () => still ?? Date.now() })
  const { server: redis, client } = useRedis()
  const gateways = useGateways()
  let day = 0

  /** A report of its own for each read: every read reaches the platform. */
  const miss = async (gw: { url: string }, key: string) => {
    const d = ++day
    const res = await fetch(`${gw.url}${PATH}?advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-${String(1 + Math.floor(d / 28)).padStart(2, '0')}-${String(1 + (d % 28)).padStart(2, '0')}`, { headers: { 'x-api-key': key } })
    return { status: res.status, body: await res.text() }
  }
  /** Misses of `key` on `gw` until one is not a 200 (at most `n`): the 200s and that answer. */
  const until = async (gw: { url: string }, key: string, n: number) => {
    let ok = 0
    for (let i = 0; i < n; i++) {
      const answer = await miss(gw, key)
      if (answer.status !== 200) return { ok, refusal: answer }
      ok += 1
    }
    return { ok, refusal: null }
  }
  /** Whose count the replicas share out: the token's, or PATH's own limiter's (the platform throttling that route on its own). */
  let route: string | undefined
  const countOf = (gw: TestGateway) => gw.governors.countOf('default', route)
  const metric = async (gw: TestGateway, line: string): Promise<number> => {
    const found = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body.split('\n').find((l) => l.startsWith(`${line} `))
    return found ? Number(found.slice(line.length + 1)) : 0
  }

  /**
   * Two replicas, each shown by the platform that it refuses past its count (a window of one second, spent on each), their records in Redis;
   * `own`: the count is PATH's own limiter's, the token's count (Laravel's default, 60) left unspent.
   */
  let config: ReturnType<typeof testConfig>
  async function replicas(own = false): Promise<[TestGateway & { url: string }, TestGateway & { url: string }]> {
    route = own ? PATH : undefined
    // The platform's time stands still until both replicas are refused: every call below falls in one window of its
    // count, however long a loaded machine takes over them (a second of the wall clock may end before the 11th call).
    still = Date.now()
    // The platform's count is LIMIT from the replicas' start: their start probes read it too.
    sandbox.setThrottle(own ? { refuse: true } : { limit: LIMIT, windowMs: 1000, refuse: true })
    if (own) sandbox.setRouteThrottle(PATH, { limit: LIMIT, windowMs: 1000 })
    config = testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url }, withUploader(TEAMS_YAML))
    const one = await listen(await gateways.build(config))
    const two = await listen(await gateways.build(config))
    await until(one, KEYS.all, LIMIT + 1)
    await until(two, UPLOADER_KEY, LIMIT + 1)
    // From here the window ends a second after it began, on the wall clock as on the replicas'.
    still = null
    await waitFor('both replicas to share the count out', () => countOf(one)?.enforced === true && countOf(two)?.enforced === true)
    await waitFor('the pauses and the refused window to end', () => one.governors.pausesOf('default').length === 0 && two.governors.pausesOf('default').length === 0)
    // The count's own hold ends with the refusal's retry-after as read by the count, a moment after the pause's: past it on
    // both replicas, and the refused window's calls no longer counted anywhere, a team's share of the next window is whole.
    const over = (gw: TestGateway) => (countOf(gw)?.heldUntil ?? 0) <= Date.now() && (countOf(gw)?.teams ?? []).every((t) => t.sent === 0 && t.sentElsewhere === 0)
    await waitFor("the refused window over on both replicas' counts", () => over(one) && over(two))
    const key = own ? `rgw:counts:{default}:route:${createHash('sha256').update(PATH).digest('base64url').slice(0, 16)}` : 'rgw:counts:{default}'
    await waitFor('the records in Redis', async () => (await client.hlen(key)) === 2)
    // A record tells the refusal left when it was written, and a replica that reads it late holds its calls that much past
    // the refusal's end: the hold is over for good once every record tells none left (`<stamp>|<seal>.<limit>|<window
    // age>|<refusal left>|…`) and each replica has written its record again since, reading the others' in the same script.
    const records = async () => Object.values(await client.hgetall(key)).map((value) => value.split('|')).map((f) => ({ at: Number(f[0]), left: Number(f[3]) }))
    let told = 0
    await waitFor('every record to tell no refusal left', async () => {
      const now = await records()
      told = Math.max(0, ...now.map((r) => r.at))
      return now.length === 2 && now.every((r) => r.left === 0)
    })
    await waitFor('each replica to have read them', async () => (await records()).every((r) => r.at > told))
    await waitFor("the refused window over on both replicas' counts, for good", () => over(one) && over(two))
    return [one, two]
  }

  it("holds a team alone on its replica to its share: the other replica's team is kept its own, and the gateway refuses, not the platform", async () => {
    const [one, two] = await replicas()

    // A window longer than the test: every call below is counted in it.
    sandbox.setThrottle({ limit: LIMIT, windowMs: 600_000, refuse: true })
    sandbox.clearRequests()
    const first = await miss(two, UPLOADER_KEY)
    expect(first.status, first.body).toBe(200)
    // Replica one hears that uploader asks on replica two: team all's share is half the count there.
    await waitFor("replica one to hear uploader's ask", () => countOf(one)?.teams.find((t) => t.team === 'all')?.share === LIMIT / 2)

    const all = await until(one, KEYS.all, LIMIT)
    expect(all.refusal?.status).toBe(503)
    expect(JSON.parse(all.refusal?.body ?? '{}')).toMatchObject({ code: 'GW_OVERLOADED', message: expect.stringContaining("team all has used its share of the platform's call count") })
    expect(all.ok).toBeLessThanOrEqual(LIMIT / 2)
    // Uploader's share on replica two is whole, and every call the gateway sent is within the platform's count: it refused none.
    const uploader = await until(two, UPLOADER_KEY, LIMIT / 2 - 1)
    expect(uploader).toEqual({ ok: LIMIT / 2 - 1, refusal: null })
    expect(sandbox.requests.filter((r) => r.path === PATH).length).toBeLessThanOrEqual(LIMIT)
  })

  // A route throttled on its own (Laravel's `throttle:10,10` on PATH) is shared out across the
  // replicas as the token's count is, in a hash of its own.
  it("holds a team alone on its replica to its share of a route's own limit, and the other routes go on", async () => {
    const [one, two] = await replicas(true)
    sandbox.setRouteThrottle(PATH, { limit: LIMIT, windowMs: 600_000 })
    sandbox.clearRequests()
    expect((await miss(two, UPLOADER_KEY)).status).toBe(200)
    await waitFor("replica one to hear uploader's ask", () => countOf(one)?.teams.find((t) => t.team === 'all')?.share === LIMIT / 2)
    const all = await until(one, KEYS.all, LIMIT)
    expect(all.refusal?.status).toBe(503)
    expect(JSON.parse(all.refusal?.body ?? '{}')).toMatchObject({ code: 'GW_OVERLOADED', message: expect.stringContaining(`team all has used its share of the platform's call count for credential default on route ${PATH}`) })
    expect(all.ok).toBeLessThanOrEqual(LIMIT / 2)
    expect(await until(two, UPLOADER_KEY, LIMIT / 2 - 1)).toEqual({ ok: LIMIT / 2 - 1, refusal: null })
    expect(sandbox.requests.filter((r) => r.path === PATH).length).toBeLessThanOrEqual(LIMIT)
    // The token's count binds nothing: team all's calls of another route go through.
    const list = await fetch(`${one.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: '{"userId":101}' })
    expect(list.status).toBe(200)
  })

  // Redis is shared, not trusted: a record planted in the hash, without the seal of
  // GATEWAY_SECRET, telling of a team that spent the count and of a refusal of ten minutes,
  // is not heard: counted, and the teams go on as before.
  it("hears no record without this gateway's seal", async () => {
    const [one] = await replicas()
    sandbox.setThrottle({ limit: LIMIT, windowMs: 600_000, refuse: true })
    // Planted again at each look, stamped with Redis' time: a record lapses a second after it was written.
    const plant = async () => {
      const [seconds, micros] = await client.time()
      await client.hset('rgw:counts:{default}', 'planted', `${Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)}|0|600000|0|all,${LIMIT},${LIMIT},${LIMIT},0;uploader,0,1,-,0`)
    }
    await waitFor('the planted record read and refused', async () => {
      await plant()
      return (await metric(one, 'gateway_redis_unverified_total{what="count"}')) >= 1
    })
    expect((await miss(one, KEYS.all)).status).toBe(200)
    expect(countOf(one)?.teams.find((t) => t.team === 'all')).toMatchObject({ sentElsewhere: 0, share: LIMIT / 2 })
  })

  // Records lapse a second after their last write: with Redis gone, a replica shares out what
  // it reads among its own teams, as one without Redis does, and hears the others again when
  // Redis is back.
  it('shares the count out among its own teams while Redis is unreachable, and across replicas again after', async () => {
    const [one, two] = await replicas()
    sandbox.setThrottle({ limit: LIMIT, windowMs: 600_000, refuse: true })
    const first = await miss(two, UPLOADER_KEY)
    expect(first.status, first.body).toBe(200)
    const allsShare = () => countOf(one)?.teams.find((t) => t.team === 'all')?.share
    await waitFor("replica one to hear uploader's ask", () => allsShare() === LIMIT / 2)
    await redis.stop()
    try {
      await waitFor('replica one to share the count among its own teams', () => allsShare() === LIMIT)
    } finally {
      await redis.restart()
    }
    await waitFor("replica one to hear uploader's ask again", () => allsShare() === LIMIT / 2)
  })

  // A replica started while the others share the count out (a rolling deploy, a crash) looks
  // at their records before its first call: it shares the count out from it, not from a 429.
  it('a replica started while the others share the count out shares it out from its first call', async () => {
    const [one, two] = await replicas()
    sandbox.setThrottle({ limit: LIMIT, windowMs: 600_000, refuse: true })
    sandbox.clearRequests()
    expect((await miss(one, KEYS.all)).status).toBe(200)
    await two.close()
    const three = await listen(await gateways.build(config))
    expect(countOf(three)).toMatchObject({ limit: LIMIT, enforced: true })
    await waitFor("the new replica to hear team all's ask", () => countOf(three)?.teams.find((t) => t.team === 'all')?.share === LIMIT / 2)
    const uploader = await until(three, UPLOADER_KEY, LIMIT)
    expect(uploader.refusal?.status).toBe(503)
    expect(JSON.parse(uploader.refusal?.body ?? '{}')).toMatchObject({ code: 'GW_OVERLOADED', message: expect.stringContaining("team uploader has used its share of the platform's call count") })
    expect(uploader.ok).toBeLessThanOrEqual(LIMIT / 2)
    expect(sandbox.requests.filter((r) => r.path === PATH).length).toBeLessThanOrEqual(LIMIT)
  })
})
