import { describe, expect, it } from 'vitest'
import { KEYS, TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { fillRedisUp, redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A Redis out of memory (maxmemory reached, noeviction) answers OOM to
// writes and still answers reads. The entries in it are served; writes are skipped and
// counted; /readyz and the metrics say so, rather than "redis down".

const { available, notice } = redisAvailability()
if (notice) console.warn(notice)

const ADMIN_TOKEN = 'readonly-admin-token-0123456789abcdef'
const PATH = '/api/v1/report/campaigns/get'
const query = (day: number) => `advertiserId=101&byDate=1&dateFrom=2026-03-01&dateTo=2026-03-${String(day).padStart(2, '0')}`
const YAML = `${TEAMS_YAML}
redis:
  commandTimeout: 500ms
  breakerCooldown: 300ms
cache:
  ttl: { recent: 60s, settled: 60s }
`

describe.skipIf(!available)('a Redis that refuses writes (OOM, NOREPLICAS, READONLY)', () => {
  const sandbox = useSandbox()
  const { server, client } = useRedis()
  const gateways = useGateways()

  const replica = () => gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, ADMIN_TOKEN }, YAML))
  const get = (gw: TestGateway, q: string) => gw.proxy.inject({ method: 'GET', url: `${PATH}?${q}`, headers: { 'x-api-key': KEYS.all } })
  const reportCalls = () => sandbox.countRequests((r) => r.path === PATH)
  const readyz = async (gw: TestGateway) => (await gw.admin.inject({ method: 'GET', url: '/readyz' })).json<{ redis: string; degraded: string[] }>()
  const metric = async (gw: TestGateway, name: string): Promise<number> => {
    const line = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body.split('\n').find((l) => l.startsWith(`${name} `))
    return line ? Number(line.slice(name.length + 1)) : Number.NaN
  }

  it('serves the entries still in Redis, skips and counts writes, and says redis-readonly until writes are accepted again', async () => {
    const a = await replica()
    for (let day = 1; day <= 5; day++) expect((await get(a, query(day))).headers['x-cache']).toBe('MISS')
    expect(reportCalls()).toBe(5)
    try {
      await fillRedisUp(client)
      const b = await replica()
      // A report not in Redis first: answered from the platform, its writes refused.
      expect((await get(b, query(6))).statusCode).toBe(200)
      for (let day = 1; day <= 5; day++) {
        const res = await get(b, query(day))
        expect(res.statusCode).toBe(200)
        expect(res.headers['x-cache']).toBe('HIT')
      }
      expect(reportCalls()).toBe(6)
      // Another one: its writes are not even sent.
      expect((await get(b, query(7))).statusCode).toBe(200)
      expect(await readyz(b)).toMatchObject({ redis: 'readonly', degraded: ['redis-readonly'] })
      expect(await metric(b, 'gateway_redis_up')).toBe(1)
      expect(await metric(b, 'gateway_redis_writable')).toBe(0)
      expect(await metric(b, 'gateway_redis_skipped_writes_total')).toBeGreaterThan(0)
      expect(b.logs.records().filter((r) => /refuses writes/.test(String(r.msg)))).toHaveLength(1)
      // The entries are still read: no second platform call for them.
      expect((await get(b, query(1))).headers['x-cache']).toBe('HIT')
    } finally {
      await client.config('SET', 'maxmemory', '0')
    }
    const b = gateways.open[1] as TestGateway
    await waitFor('redis to be writable again', async () => (await readyz(b)).redis === 'ok')
    expect(await metric(b, 'gateway_redis_writable')).toBe(1)
  })

  // A replica's own writes are transactions (its announcement every few seconds, key use):
  // Redis answers a MULTI whose queued writes it refused with EXECABORT, the refusals in it.
  it('reads a transaction Redis aborts for its refused writes as Redis refusing writes, the circuit kept closed', async () => {
    try {
      await fillRedisUp(client)
      const b = await replica()
      const { client: redis, breaker } = b.redis
      if (!redis || !breaker) throw new Error('the gateway has no Redis')
      expect(await breaker.run(() => redis.multi().set('announced', 'x').zadd('index', 1, 'x').exec(), 'fallback')).toBe('fallback')
      expect(breaker.state).toBe('closed')
      expect(breaker.writable).toBe(false)
      expect(b.logs.text()).not.toContain('redis unavailable')
    } finally {
      await client.config('SET', 'maxmemory', '0')
    }
  })

  // The rule the order of the gateway's scripts keeps to (the seat lease, a report copy's
  // room): Redis refuses a script's first write that may take memory, before anything is
  // changed, and lets every write after a first one through, a delete's too, even one that
  // deletes nothing. So a script whose first write may take memory is refused whole, and
  // one that deletes first runs whole, past maxmemory.
  it('refuses a script whose first write may take memory, and runs whole one that deletes first', async () => {
    await client.set('kept', 'x')
    try {
      await fillRedisUp(client)
      await expect(client.eval("redis.call('SET', 'written', 'x'); redis.call('DEL', 'kept'); return 1", 0)).rejects.toThrow(/^OOM/)
      expect(await client.exists('written', 'kept')).toBe(1)
      expect(await client.eval("redis.call('DEL', 'absent'); redis.call('SET', 'written', 'x'); return 1", 0)).toBe(1)
      expect(await client.exists('written')).toBe(1)
    } finally {
      await client.config('SET', 'maxmemory', '0')
    }
  })

  // A purge while Redis refuses writes drops this replica's copies and the ones in Redis
  // (deletes are let through) but not its record for replicas that start later: 503, to
  // be repeated; the line says Redis's own refusal, not only that a transaction was discarded.
  it('answers a purge 503 GW_REDIS_UNAVAILABLE, its line naming the refusal', async () => {
    const b = await replica()
    try {
      await fillRedisUp(client)
      const res = await b.admin.inject({ method: 'DELETE', url: '/admin/cache?advertiserId=101', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect(res.statusCode).toBe(503)
      expect(res.json()).toMatchObject({ code: 'GW_REDIS_UNAVAILABLE' })
      const line = b.logs.records().find((r) => r.code === 'GW_REDIS_UNAVAILABLE')
      expect(String(line?.cause)).toMatch(/^OOM /)
    } finally {
      await client.config('SET', 'maxmemory', '0')
    }
  })

  // A purge on a full Redis whose copies it drops: their deletes come first in the script
  // that writes the purge's record, so Redis lets the record through (past maxmemory, in
  // the room the copies gave back): the purge is complete, 200, and recorded for replicas
  // that start later. Before, the record was written first, refused, and the purge
  // answered 503 however often it was repeated while Redis stayed full.
  it('completes a purge that drops copies on a full Redis: 200, its record written', async () => {
    const a = await replica()
    for (let day = 1; day <= 3; day++) expect((await get(a, query(day))).headers['x-cache']).toBe('MISS')
    expect(await client.keys('rgw:report:*')).toHaveLength(3)
    try {
      await fillRedisUp(client)
      const res = await a.admin.inject({ method: 'DELETE', url: '/admin/cache?advertiserId=101', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect(res.json()).toEqual({ purged: 'advertiser', advertiserId: 101, dryRun: false, dropped: 3 })
      expect(res.statusCode).toBe(200)
      expect(await client.keys('rgw:report:*')).toHaveLength(0)
      expect(await client.hexists('rgw:purges', 'adv:101')).toBe(1)
      // Repeated with nothing left to drop: its record replaces the field of the one
      // before (a delete first, as the copies' were), and Redis, still full, takes it.
      const again = await a.admin.inject({ method: 'DELETE', url: '/admin/cache?advertiserId=101', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect(again.json()).toEqual({ purged: 'advertiser', advertiserId: 101, dryRun: false, dropped: 0 })
      // An advertiser never purged, with no copies in Redis: nothing makes room for its
      // record, and the 503 says that nothing was there to drop and what a repeat does.
      const none = await a.admin.inject({ method: 'DELETE', url: '/admin/cache?advertiserId=202', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect(none.statusCode).toBe(503)
      expect(none.json<{ message: string }>().message).toMatch(/out of memory.*none of its copies.*repeat it once Redis has room/)
      expect(await client.hexists('rgw:purges', 'adv:202')).toBe(0)
    } finally {
      await client.config('SET', 'maxmemory', '0')
    }
  })

  // Every report, and one report, likewise: the last copy's delete lets their record through.
  for (const [what, url, dropped] of [
    ['every report', '/admin/cache', { purged: 'all', dryRun: false, dropped: 2 }],
    ['one report', `/admin/cache/entry?url=${encodeURIComponent(`${PATH}?${query(1)}`)}`, { purged: 'report', dryRun: false, dropped: 1 }],
  ] as const) {
    it(`completes a purge of ${what} on a full Redis: 200, its record written`, async () => {
      const a = await replica()
      for (let day = 1; day <= 2; day++) expect((await get(a, query(day))).headers['x-cache']).toBe('MISS')
      try {
        await fillRedisUp(client)
        const res = await a.admin.inject({ method: 'DELETE', url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
        expect(res.json()).toMatchObject(dropped)
        expect(res.statusCode).toBe(200)
        expect(await client.hlen('rgw:purges')).toBe(1)
      } finally {
        await client.config('SET', 'maxmemory', '0')
      }
    })
  }

  // Redis refuses writes in two more ways an operator meets: a master whose
  // min-replicas-to-write is unmet answers NOREPLICAS (its replicas lag or are gone), and
  // a replica given as the master (a REDIS_URL left on it after a failover) answers
  // READONLY. Reads go on in both: the same state as OOM, never "redis down".
  const refusals = [
    { code: 'NOREPLICAS', refuse: () => client.config('SET', 'min-replicas-to-write', '1'), accept: () => client.config('SET', 'min-replicas-to-write', '0') },
    // A master nobody listens on: the replica keeps its data and serves it, and refuses writes.
    { code: 'READONLY', refuse: () => client.replicaof('127.0.0.1', 1), accept: () => client.replicaof('NO', 'ONE') },
  ]

  for (const { code, refuse, accept } of refusals) {
    it(`${code}: serves the entries still in Redis with the circuit closed, says redis-readonly, and ok once writes are accepted`, async () => {
      const a = await replica()
      for (let day = 1; day <= 3; day++) expect((await get(a, query(day))).headers['x-cache']).toBe('MISS')
      try {
        await refuse()
        await expect(client.set('probe', '1')).rejects.toThrow(new RegExp(`^${code}`))
        const b = await replica()
        expect((await get(b, query(9))).statusCode).toBe(200)
        for (let day = 1; day <= 3; day++) expect((await get(b, query(day))).headers['x-cache']).toBe('HIT')
        expect(await readyz(b)).toMatchObject({ redis: 'readonly', degraded: ['redis-readonly'] })
        const status = await b.admin.inject({ method: 'GET', url: '/admin/status', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
        expect(status.json<{ redis: { state: string } }>().redis.state).toBe('readonly')
        expect(b.redis.breaker?.state).toBe('closed')
        expect(b.logs.text()).not.toContain('redis unavailable')
        expect(b.logs.records().filter((r) => /refuses writes/.test(String(r.msg)) && String(r.cause).startsWith(code))).toHaveLength(1)
      } finally {
        await accept()
      }
      const b = gateways.open[1] as TestGateway
      await waitFor('redis to be writable again', async () => (await readyz(b)).redis === 'ok')
    })
  }
})
