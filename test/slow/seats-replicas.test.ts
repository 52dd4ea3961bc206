import { pino } from 'pino'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { credentialGovernor, type CredentialGovernor } from '../../src/platform/governor/credential-governor.js'
import { RedisLeaseStore } from '../../src/platform/governor/redis-lease-store.js'
import { fairShares } from '../../src/platform/governor/shares.js'
import type { Seat } from '../../src/platform/governor/seat.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisBus } from '../../src/redis/bus.js'
import { redisKey } from '../../src/redis/keys.js'
import type { TestGateway } from '../helpers/build-gateway.js'
import { KEYS, REPORT_PATH, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { distinctReport, proxyGet } from '../helpers/gateway-calls.js'
import { spawnGateway, timedRequest, type GatewayProcess } from '../helpers/gateway-process.js'
import { seatsOf } from '../helpers/governors.js'
import { fillRedisUp, redisAvailability } from '../helpers/start-redis.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'

// Seats leased across replicas (docs/governor.md, "Across replicas"): each replica leases
// its part of the limit from one Redis hash per credential (RedisLeaseStore, its one
// script), sized by what its teams hold, wait for and linger on (LeasedSeats,
// lease-plan.ts), against a real redis-server; then whole gateways sharing one Redis
// against the sandbox over loopback HTTP.

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const log = pino({ level: 'silent' })
const KEY = redisKey.seats('test:', 'default')

describe.skipIf(!available)('seats leased across replicas (LeasedSeats over RedisLeaseStore)', () => {
  const redis = useRedis()
  const open: { g: CredentialGovernor; client: Redis; bus: RedisBus }[] = []
  afterEach(async () => {
    for (const r of open.splice(0)) {
      r.g.leased?.stop()
      await r.bus.close()
      r.client.disconnect()
    }
  })

  interface ReplicaOptions {
    weightOf?: (team: string) => number
    cap?: (team: string) => number | null
    onLost?: (count: number) => void
    perReplica?: number | null
    leaseMs?: number
  }

  /** A replica: one credential's governor at a fixed limit, with its own Redis connection, bus and lease (600 ms unless told). */
  async function replica(limit: number, opts: ReplicaOptions = {}) {
    const client = new Redis(redis.server.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: true })
    client.on('error', () => undefined)
    await client.connect()
    const bus = new RedisBus(client, 'test:bus:', log)
    const g = credentialGovernor({
      credential: 'default',
      settings: { adaptive: false, initialConcurrent: limit, minConcurrent: 1, maxConcurrent: limit, maxConcurrentPerReplica: opts.perReplica ?? null, seatLeaseMs: opts.leaseMs ?? 600, queue: 100, queueTimeoutMs: 20_000, maxPauseMs: 60_000, timeoutMs: 1000 },
      store: new RedisLeaseStore({ redis: client, breaker: new RedisBreaker({ cooldownMs: 200, log }), bus, key: KEY, credential: 'default' }),
      replica: 'r',
      seal: null,
      key: KEY,
      log,
      ...(opts.weightOf ? { weightOf: opts.weightOf } : {}),
      limitsOf: (team) => ({ maxConcurrent: opts.cap?.(team) ?? null, queue: null }),
      ...(opts.onLost ? { onLost: opts.onLost } : {}),
    })
    await g.leased?.start()
    open.push({ g, client, bus })
    const seats = g.seats
    const leased = g.leased!
    const held: Seat[] = []
    /** `n` calls of `team`, each kept in `held` once it has its seat. */
    const calls = (team: string, n: number) => {
      for (let i = 0; i < n; i++) void seats.ask({ team, workClass: 'w', deadline: Infinity }).then((seat) => held.push(seat), () => undefined)
    }
    /** The oldest call held gets its answer. */
    const answer = () => held.shift()?.end({ kind: 'answer', status: 200, latencyMs: 5 })
    return { g, seats, leased, client, held, calls, answer }
  }
  type Replica = Awaited<ReturnType<typeof replica>>
  const inFlight = (rs: Replica[]) => rs.reduce((sum, r) => sum + r.seats.inFlight, 0)

  /** Each live run's lease and calls in flight, as Redis holds them (`<expiry>|<lease>|<in flight>|...`). */
  async function records(): Promise<{ lease: number; inFlight: number }[]> {
    const all = await redis.client.hgetall(KEY)
    return Object.entries(all)
      .filter(([field]) => field !== 'limit')
      .map(([, v]) => {
        const [, lease, calls] = v.split('|')
        return { lease: Number(lease), inFlight: Number(calls) }
      })
  }
  const leasedInRedis = async () => (await records()).reduce((sum, r) => sum + r.lease, 0)

  it('keeps the calls of three replicas within the limit: their leases add up to it, and the seats go round as calls end', async () => {
    const replicas = [await replica(6), await replica(6), await replica(6)]
    for (const r of replicas) r.calls('a', 6)
    await waitFor('every seat in use', () => inFlight(replicas) === 6)
    expect(await leasedInRedis()).toBeLessThanOrEqual(6)
    for (const r of replicas) expect(r.seats.inFlight).toBeLessThanOrEqual(r.leased.held)
    let peak = 0
    await waitFor('every call served', () => {
      peak = Math.max(peak, inFlight(replicas))
      for (const r of replicas) while (r.held.length > 0) r.answer()
      return replicas.every((r) => r.seats.queued === 0 && r.seats.inFlight === 0)
    }, testTimeLeft(), 5)
    expect(peak).toBeLessThanOrEqual(6)
  })

  it('gives the seats a team borrowed on one replica back to another team waiting on another, as its calls end, up to its share', async () => {
    const [one, two] = [await replica(6), await replica(6)]
    one.calls('long', 12)
    await waitFor('the long team holding every seat', () => one.seats.inFlight === 6)
    two.calls('short', 6)
    // Told that a team waits elsewhere, the long team's replica keeps to its target: 3.
    await waitFor('the long team\'s lease down to its target', () => two.seats.queued === 6 && one.leased.held === 3)
    // Each of the long team's calls that ends gives its seat to the short team, until both hold 3.
    for (let i = 0; i < 3; i++) {
      one.answer()
      await waitFor(`seat ${i + 1} handed over`, () => two.seats.inFlight === i + 1)
    }
    one.answer()
    await waitFor('the long team back at its share', () => one.seats.inFlight === 3 && two.seats.inFlight === 3)
    expect(one.seats.queued).toBeGreaterThan(0)
    expect(await leasedInRedis()).toBeLessThanOrEqual(6)
  })

  it('shares the seats between teams on different replicas by weight', async () => {
    const weightOf = (team: string) => (team === 'heavy' ? 3 : 1)
    const [one, two] = [await replica(8, { weightOf }), await replica(8, { weightOf })]
    one.calls('light', 10)
    two.calls('heavy', 10)
    // Calls end one by one on both, and as many come; where the seats go settles at 2 and 6.
    await waitFor(() => `the seats shared 2 : 6 (${one.seats.inFlight} : ${two.seats.inFlight})`, () => {
      for (const [r, team] of [[one, 'light'], [two, 'heavy']] as const) {
        if (r.held.length === 0) continue
        r.answer()
        r.calls(team, 1)
      }
      return one.seats.inFlight === 2 && two.seats.inFlight === 6
    }, testTimeLeft(), 50)
  })

  it('holds a team to its ceiling across replicas, each replica in its turn at the seats left over (docs/governor.md)', async () => {
    const cap = (team: string) => (team === 'capped' ? 2 : null)
    const [one, two] = [await replica(8, { cap }), await replica(8, { cap })]
    one.calls('capped', 6)
    await waitFor('the team at its ceiling on one replica', () => one.seats.inFlight === 2)
    two.calls('capped', 6)
    // The first replica's two calls were sent before the other had calls: the other waits for them, then has its part.
    let most = 0
    let servedThere = false
    await waitFor('every call served', () => {
      most = Math.max(most, one.seats.inFlight + two.seats.inFlight)
      servedThere ||= two.seats.inFlight > 0
      for (const r of [one, two]) r.answer()
      return one.seats.queued + two.seats.queued + one.seats.inFlight + two.seats.inFlight === 0
    }, testTimeLeft(), 20)
    expect([most, servedThere]).toEqual([2, true])
  })

  it('lets a dead replica\'s lease lapse within seatLease: another replica gets its seats', async () => {
    const dying = await replica(4)
    dying.calls('a', 4)
    await waitFor('the dying replica holding every seat', () => dying.seats.inFlight === 4)
    // Its connection gone for good: it renews nothing any more.
    dying.client.disconnect()
    const survivor = await replica(4)
    survivor.calls('b', 2)
    await waitFor('the dying replica\'s record lapsed', async () => (await records()).every((r) => r.lease === 0 || r.inFlight < 4))
    await waitFor('the survivor served', () => survivor.seats.inFlight === 2)
  })

  it('grants no replica more than it held after Redis lost every lease (a restart, a flush): they still add up to the limit', async () => {
    const lost: number[] = []
    const [one, two] = [await replica(6, { onLost: (n) => lost.push(n) }), await replica(6, { onLost: (n) => lost.push(n) })]
    one.calls('a', 3)
    await waitFor('the first replica at 3', () => one.seats.inFlight === 3)
    two.calls('b', 6)
    await waitFor('every seat in use', () => one.seats.inFlight + two.seats.inFlight === 6)
    const before = one.leased.held
    await redis.client.flushall()
    // Both ask again (the second wants more than it holds).
    await waitFor('both leases asked for again', async () => (await records()).length === 2)
    expect(await leasedInRedis()).toBeLessThanOrEqual(6)
    expect(one.leased.held).toBeLessThanOrEqual(before)
    await waitFor('the lost seats counted', () => lost.length > 0)
  })

  it('gives every replica a seat in turn when there are more replicas than seats, never past the limit', async () => {
    const replicas = await Promise.all(Array.from({ length: 5 }, () => replica(2)))
    for (const r of replicas) r.calls('a', 2)
    const served = new Set<number>()
    let peak = 0
    // Each replica's calls end as soon as they start and another comes: it always waits for a
    // seat. How often the seats change hands (once a turn, not once a call) is a matter of
    // time against this loop's pace: test/unit/seat-turns.test.ts counts it on the simulator's clock.
    await waitFor('every replica served', () => {
      peak = Math.max(peak, inFlight(replicas))
      replicas.forEach((r, i) => {
        if (r.held.length > 0) served.add(i)
        while (r.held.length > 0) {
          r.answer()
          r.calls('a', 1)
        }
      })
      return served.size === replicas.length
    }, testTimeLeft(), 5)
    expect(peak).toBeLessThanOrEqual(2)
  })

  it('keeps to its lease as last granted while Redis stalls, then to an even share of the limit: never past the limit', async () => {
    const [one, two] = [await replica(8), await replica(8)]
    one.calls('a', 3)
    two.calls('b', 2)
    // Each has renewed since the other leased (a keep-alive, every third of the lease): it knows of two.
    await waitFor('5 seats leased, each replica knowing of the other', () => one.seats.inFlight === 3 && two.seats.inFlight === 2 && one.leased.replicas === 2 && two.leased.replicas === 2)
    const granted = [one.leased.held, two.leased.held]
    await redis.server.stop()
    try {
      // Calls end, more of the same teams come: each fills its lease as last granted (a seat
      // free at its last answer may be the other's since: it saw the other)...
      for (const [r, team] of [[one, 'a'], [two, 'b']] as const) {
        while (r.held.length > 0) r.answer()
        r.calls(team, 8)
      }
      await waitFor('the calls within the leases as last granted', () => one.seats.inFlight >= (granted[0] as number) && two.seats.inFlight >= (granted[1] as number))
      // ...then no more than half the limit each (the two replicas it saw), and half each once
      // the calls started before have ended (twice the call's budget): never past the limit.
      await waitFor('an even share each', () => {
        expect(one.seats.capacity + two.seats.capacity).toBeLessThanOrEqual(8)
        return one.seats.capacity === 4 && two.seats.capacity === 4
      })
    } finally {
      await redis.server.restart()
    }
  })

  // At its maxmemory under noeviction Redis refuses a script's first write (OOM) but not a
  // later one (it cannot stop a script half-way): a renewal that first dropped another
  // replica's lapsed record wrote its own and was granted the whole limit, while that
  // replica, refused, kept to its outage share: two replicas at 8 each on a limit of 8.
  // A refused renewal drops nothing: each replica keeps to the outage rule, as in a stall.
  it('keeps to the outage rule while Redis refuses writes (maxmemory, noeviction): calls go on, never past the limit, and leases again once it accepts them', async () => {
    const replicas = [await replica(8), await replica(8)]
    const [one, two] = replicas as [Replica, Replica]
    one.calls('a', 3)
    two.calls('b', 2)
    await waitFor('5 seats leased, each replica knowing of the other', () => one.seats.inFlight === 3 && two.seats.inFlight === 2 && one.leased.replicas === 2 && two.leased.replicas === 2)
    const { client } = redis
    let [peak, served] = [0, 0]
    /** Every call held is answered and another of its team asked: demand stays, seats go round. */
    const round = () => {
      expect(one.seats.capacity + two.seats.capacity).toBeLessThanOrEqual(8)
      peak = Math.max(peak, inFlight(replicas))
      for (const [r, team] of [[one, 'a'], [two, 'b']] as const) {
        while (r.held.length > 0) {
          r.answer()
          served++
          r.calls(team, 1)
        }
      }
    }
    for (const [r, team] of [[one, 'a'], [two, 'b']] as const) r.calls(team, 8)
    try {
      await fillRedisUp(client)
      // Past a lease and the calls started before it (twice the call's budget), a few times over.
      const until = Date.now() + 3 * (600 + 2000)
      await waitFor('calls served on both for three outage periods', () => {
        round()
        return Date.now() >= until && one.seats.capacity === 4 && two.seats.capacity === 4
      }, testTimeLeft(), 5)
    } finally {
      await client.config('SET', 'maxmemory', '0')
    }
    const before = served
    await waitFor('both replicas leasing again, calls served', async () => {
      round()
      return served > before + 40 && (await records()).length === 2
    }, testTimeLeft(), 5)
    expect(peak).toBeLessThanOrEqual(8)
    expect(await leasedInRedis()).toBeLessThanOrEqual(8)
  })

  it('gives each team of one replica the shares shares.ts works out over its whole demand', async () => {
    const weightOf = (team: string) => (team === 'b' ? 3 : 1)
    const one = await replica(8, { weightOf })
    one.calls('a', 10)
    one.calls('b', 10)
    one.calls('c', 1)
    await waitFor('the lease granted', () => one.seats.inFlight === 8)
    const expected = fairShares(8, [
      { team: 'a', weight: 1, held: 0, waiting: 10, cap: null, peak: 10 },
      { team: 'b', weight: 3, held: 0, waiting: 10, cap: null, peak: 10 },
      { team: 'c', weight: 1, held: 0, waiting: 1, cap: null, peak: 1 },
    ])
    // The last renewal saw every team: its targets are the shares.
    await waitFor('the targets of every team', () => (one.leased.shares()?.targets.size ?? 0) === 3)
    for (const [team, share] of expected) expect(one.leased.shares()?.targets.get(team)).toBeCloseTo(share, 2)
  })

  // A team's target comes from the last renewal's plan: a team new to the replica renews
  // the lease at once, and every renewal wakes the queue (not only one that grew it), so
  // its call does not wait out the linger of a team owed seats.
  it('starts a call of a team new to a replica at once while a seat is free', async () => {
    // A lease of 2 minutes: its keep-alive (a third of it) and a linger are past the test's
    // timeout, so only the renewal that wakes the queue can start b's call in it.
    const one = await replica(2, { leaseMs: 120_000 })
    one.calls('a', 2)
    await waitFor('a\'s calls started', () => one.seats.inFlight === 2)
    one.answer()
    one.answer()
    // Team a lingers, owed its peak (2); team b is new: both seats free, b below its share (1).
    one.calls('b', 1)
    await waitFor('b\'s call started', () => one.seats.running('b') === 1, testTimeLeft(), 1)
  })
})

// Whole gateways sharing one Redis, against the sandbox.
const SEATS_KEY = 'rgw:seats:{default}'

/** HGETALLs since the last RESETSTAT: the lease script's, and any other reader's of a whole hash. */
function hgetalls(info: string): number {
  return Number(/cmdstat_hgetall:calls=(\d+)/.exec(info)?.[1] ?? 0)
}

const MARK = 'test:lease-runs:mark'

/**
 * Runs of the lease script (redis-lease-store.ts) on SEATS_KEY, as Redis tells them in
 * keyspace events: each run ends with the PEXPIRE of the hash, or with the HDEL of its own
 * field that emptied it, so one `expire` or `del` event a run; nothing else writes the hash
 * while the replicas run. A command count would take other readers for runs (the purge
 * record read again as Redis answers again reads a whole hash too). `take()`: the runs
 * since the last take (or the start), up to a mark published now, which reaches the
 * subscriber after every event before it.
 */
async function leaseRuns(client: Redis, url: string) {
  const sub = new Redis(url, { lazyConnect: true })
  sub.on('error', () => undefined)
  await sub.connect()
  const id = String(await sub.client('ID'))
  await client.config('SET', 'notify-keyspace-events', 'Kg')
  const counted: number[] = []
  let runs = 0
  sub.on('message', (channel: string, event: string) => {
    if (channel === MARK) {
      counted.push(runs)
      runs = 0
    } else if (event === 'expire' || event === 'del') runs++
  })
  await sub.subscribe(`__keyspace@0__:${SEATS_KEY}`, MARK)
  return {
    /** The subscriber's connection id: a test that cuts connections spares it. */
    id,
    async take(): Promise<number> {
      const mark = counted.length
      await client.publish(MARK, '1')
      await waitFor('the keyspace events up to the mark', () => counted.length > mark)
      return counted[mark] as number
    },
    close: () => sub.disconnect(),
  }
}

describe.skipIf(!available)('the limit across gateway replicas', () => {
  const sandbox = useSandbox()
  const redis = useRedis()
  const gateways = useGateways()
  const children: GatewayProcess[] = []
  const closing: (() => void)[] = []
  afterEach(async () => {
    for (const close of closing.splice(0)) close()
    for (const child of children.splice(0)) await child.close()
  })
  const env = () => ({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.server.url })
  // A slow Redis on a busy machine would open the breaker, and each replica would fall
  // back to its own cap: these tests give commands time (the fallback has its own test).
  const replica = (yaml: string, teams = TEAMS_YAML) => gateways.build(testConfig(env(), `${teams}\n${yaml}\nredis: { commandTimeout: 2s }`))

  it('keeps at most maxConcurrent calls at the platform from three replicas, answers every call, and pays a bounded number of lease renewals per call', async () => {
    const yaml = 'platform: { maxConcurrent: 4, adaptive: false }'
    const replicas = [await replica(yaml), await replica(yaml), await replica(yaml)]
    sandbox.setLatency(150)
    const runs = await leaseRuns(redis.client, redis.server.url)
    closing.push(runs.close)
    await runs.take()
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => proxyGet(replicas[i % 3] as TestGateway, distinctReport(i))))
    expect(answers.map((a) => a.statusCode)).toEqual(Array(30).fill(200))
    const { peak } = sandbox.concurrency()
    expect(peak).toBeLessThanOrEqual(4)
    // Each replica alone would have sent up to 4: the cap was reached, across replicas.
    expect(peak).toBeGreaterThanOrEqual(3)
    const leases = await runs.take()
    // Seats change hands between replicas as calls end (a renewal to give one back, one to
    // take it): a few renewals per call, whatever the number of replicas.
    expect(leases).toBeLessThanOrEqual(5 * 30)
    // Every lease given back once unused; a cache hit asks nothing of the seats.
    await waitFor('every lease given back', async () => Object.entries(await redis.client.hgetall(SEATS_KEY)).every(([field, v]) => field === 'limit' || v.split('|')[1] === '0'))
    await runs.take()
    await redis.client.config('RESETSTAT')
    const hit = await proxyGet(replicas[0] as TestGateway, distinctReport(0))
    expect(hit.headers['x-cache']).toBe('HIT')
    // Redis answering again meanwhile (here the replicas' subscribers cut): each replica
    // reads the purge record again (tiered-store.ts), a read of a whole hash, not a lease.
    const subscribers = String(await redis.client.call('CLIENT', 'LIST', 'TYPE', 'pubsub'))
    for (const [, id] of subscribers.matchAll(/^id=(\d+) /gm)) if (id !== runs.id) await redis.client.client('KILL', 'ID', id as string)
    await waitFor('the purge record read again by every replica', async () => hgetalls(await redis.client.info('commandstats')) >= 3)
    expect(await runs.take()).toBe(0)
    const metrics = await (replicas[0] as TestGateway).admin.inject({ method: 'GET', url: '/metrics' })
    expect(metrics.body).toContain('gateway_platform_seats_held{credential="default"} 0')
  })

  it('starts an uncontended call without a Redis command once the replica holds a lease', async () => {
    // A lease of 2 minutes: its keep-alive (a third of it) comes past the test's timeout.
    const gw = await replica('platform: { maxConcurrent: 4, adaptive: false, seatLease: 120s }')
    // Three calls held at the platform and a fourth answered: the lease grows to fit four in
    // flight (the limit), and three fit it as well, so no seat sits past the need to be given
    // back: only a call could renew it now.
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 3 })
    const held = [0, 1, 2].map((i) => proxyGet(gw, distinctReport(60 + i)))
    try {
      await waitFor(() => `three calls held (${seatsOf(gw).running('all')})`, () => seatsOf(gw).running('all') === 3)
      expect((await proxyGet(gw, distinctReport(63))).statusCode).toBe(200)
      let leases = ''
      await waitFor(() => `a lease of the limit (${leases})`, async () => {
        leases = Object.entries(await redis.client.hgetall(SEATS_KEY)).filter(([field]) => field !== 'limit').map(([, v]) => v.split('|')[1]).join()
        return leases === '4'
      })
      const runs = await leaseRuns(redis.client, redis.server.url)
      closing.push(runs.close)
      for (let i = 0; i < 5; i++) expect((await proxyGet(gw, distinctReport(i))).statusCode).toBe(200)
      // Five calls one after another, none renewing the lease (once a call would be five).
      expect(await runs.take()).toBe(0)
    } finally {
      sandbox.releaseHeld()
    }
    expect((await Promise.all(held)).map((r) => r.statusCode)).toEqual([200, 200, 200])
  })

  it('lets one team\'s burst spread over two replicas use every seat, and answers another team\'s call while the burst still waits', async () => {
    const yaml = 'platform: { maxConcurrent: 4, adaptive: false, probe: null }'
    const [a, b] = [await replica(yaml), await replica(yaml)]
    sandbox.setLatency(300)
    let answered = 0
    const burst = Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        proxyGet(i % 2 ? a : b, distinctReport(i)).then((r) => {
          answered += 1
          return r
        }),
      ),
    )
    const running = () => seatsOf(a).running('all') + seatsOf(b).running('all')
    // A team alone takes every seat of the credential, across replicas.
    await waitFor('the burst holding every seat', () => running() === 4 && seatsOf(a).queued > 0 && seatsOf(b).queued > 0)
    const other = await proxyGet(b, distinctReport(100, 102), KEYS.growth)
    expect(other.statusCode).toBe(200)
    expect(other.headers['x-cache']).toBe('MISS')
    // Answered while most of the burst still waited: it did not queue behind it.
    expect(answered).toBeLessThan(16)
    const answers = await burst
    expect(answers.every((r) => r.statusCode === 200)).toBe(true)
    // The limit holds across both replicas, the other team's call included.
    expect(sandbox.concurrency().peak).toBeLessThanOrEqual(4)
  })

  it('falls back to maxConcurrentPerReplica on each replica while Redis is down', async () => {
    const yaml = 'platform: { maxConcurrent: 8, adaptive: false, maxConcurrentPerReplica: 2 }'
    const [a, b] = [await replica(yaml), await replica(yaml)]
    await redis.server.stop()
    try {
      // Long enough calls that both replicas serve at once, each from the moment it finds Redis out.
      sandbox.setLatency(1000)
      const calls = Promise.all(Array.from({ length: 16 }, (_, i) => proxyGet(i % 2 ? a : b, distinctReport(i))))
      await waitFor('both replicas at their own cap', () => seatsOf(a).inFlight === 2 && seatsOf(b).inFlight === 2)
      const answers = await calls
      expect(answers.map((r) => r.statusCode)).toEqual(Array(16).fill(200))
      // 2 per replica, where Redis would have let 8 through.
      expect(sandbox.concurrency().peak).toBeLessThanOrEqual(4)
    } finally {
      await redis.server.restart()
    }
  })

  it('gives back the seats of a SIGKILLed replica within the lease: the other replica\'s call goes through', async () => {
    const yaml = `${TEAMS_YAML}\nplatform: { maxConcurrent: 2, adaptive: false, seatLease: 1s }\nredis: { commandTimeout: 2s }`
    const dying = await spawnGateway({ env: env(), yaml })
    children.push(dying)
    const survivor = await replica('platform: { maxConcurrent: 2, adaptive: false, seatLease: 1s }')
    sandbox.setLatency(4000)
    // Two slow calls of two teams hold both seats.
    const held = [timedRequest(`${dying.url}${distinctReport(0)}`, { headers: { 'x-api-key': KEYS.all } }), timedRequest(`${dying.url}${distinctReport(1, 102)}`, { headers: { 'x-api-key': KEYS.growth } })]
    await waitFor('both seats leased', async () => Object.entries(await redis.client.hgetall(SEATS_KEY)).some(([field, v]) => field !== 'limit' && v.split('|')[2] === '2'))
    dying.kill('SIGKILL')
    await dying.exited
    await Promise.all(held)
    sandbox.setLatency(0)
    // Served once the dead replica's seats lapse (its lease, 1 s); seats that never lapsed
    // would leave it queued until queueTimeout (10 s), then 503.
    const answer = await proxyGet(survivor, distinctReport(2))
    expect(answer.statusCode).toBe(200)
  }, startsTimeout(1))
})
