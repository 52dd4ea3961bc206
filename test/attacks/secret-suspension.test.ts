import { describe, expect, it } from 'vitest'
import { KEYS, TEAMS_YAML, listen, sandboxLoginEnv, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { fillRedisUp, redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'
import { decoyOf } from '../helpers/suspensions.js'
import type { TestGateway } from '../helpers/build-gateway.js'

// A team with a key is told whether its request holds a secret of the gateway's (its 400),
// and the search finds a secret in any window of the text: one request asks about hundreds
// of candidates, and bisection of a batch that hit finds the login's password in a few more
// requests. The refusal of a hit suspends the team (every key of it, on every replica) for
// limits.secretSuspension: one hit a period is what bisection gets, and the hit is an
// error line, a metric and a team the admin status shows suspended.

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)
const ADMIN_TOKEN = 'strike-admin-token-0123456789abcdef'

const asking = (candidates: readonly string[]) => `/api/v1/campaign/list?userId=101&${candidates.map((c) => `q=${encodeURIComponent(c)}`).join('&')}`

async function ask(gw: TestGateway, candidates: readonly string[], key = KEYS.all) {
  const res = await gw.proxy.inject({ method: 'GET', url: asking(candidates), headers: { 'x-api-key': key } })
  return { status: res.statusCode, code: (res.json() as { code?: string }).code, retryAfter: res.headers['retry-after'] }
}

/**
 * The attack: batches of `batch` candidates (the password among them, at a place the
 * guesser does not know), then bisection of the batch that hit. Returns the password found,
 * or null when the gateway stopped telling within `budget` requests.
 */
async function bisect(gw: TestGateway, candidates: string[], batch: number, budget: number): Promise<{ found: string | null; requests: number }> {
  let requests = 0
  const holds = async (part: string[]) => {
    requests += 1
    const { status, code } = await ask(gw, part)
    if (status === 400) return true
    // The sandbox has no campaign list: a request the gateway sends on is its 404.
    if (status === 404 && code === undefined) return false
    throw Object.assign(new Error(`not told: ${status} ${code}`), { told: false })
  }
  try {
    for (let i = 0; i < candidates.length && requests < budget; i += batch) {
      let part = candidates.slice(i, i + batch)
      if (!(await holds(part))) continue
      while (part.length > 1 && requests < budget) {
        const half = part.slice(0, part.length >> 1)
        part = (await holds(half)) ? half : part.slice(part.length >> 1)
      }
      return { found: part.length === 1 ? (part[0] as string) : null, requests }
    }
  } catch (err) {
    if ((err as { told?: boolean }).told === false) return { found: null, requests }
    throw err
  }
  return { found: null, requests }
}

describe.skipIf(!redisCheck.available)('a team guessing at the login\'s password through the refusal of a secret', () => {
  const sandbox = useSandbox()
  const { server, client } = useRedis()
  const gateways = useGateways()
  // The replicas wait on Redis' answer, however slow a loaded machine makes it: a command timeout longer than any
  // test's (the test's timeout is the bound) rather than the default 250 ms, past which a lift reaches this replica
  // until Redis answers again.
  const WAITING_YAML = `${TEAMS_YAML}\nredis:\n  commandTimeout: 60s\n`
  const config = (env: Record<string, string> = {}, yaml = WAITING_YAML) => testConfig({ PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN, REDIS_URL: server.url, ...env }, yaml)

  it('does not find it by bisection within 40 requests: the first hit suspends the team', async () => {
    const gw = await gateways.build(config())
    const password = sandbox.credentials.password
    const candidates = Array.from({ length: 400 }, (_, i) => decoyOf(password, i))
    candidates.splice(237, 0, password)
    const { found, requests } = await bisect(gw, candidates, 100, 40)
    expect(found).toBeNull()
    // Batches 1 and 2 missed, batch 3 hit: then the team is suspended.
    expect(requests).toBe(4)
    const refused = await ask(gw, candidates.slice(0, 1))
    expect(refused).toMatchObject({ status: 403, code: 'GW_TEAM_SUSPENDED' })
    expect(Number(refused.retryAfter)).toBeGreaterThan(3600)
  })

  it('suspends every key of the team on every replica, a replica started later too, until an operator lifts it', async () => {
    const a = await gateways.build(config())
    const b = await gateways.build(config())
    const password = sandbox.credentials.password
    expect(await ask(b, ['nothing-secret'])).toMatchObject({ status: 404, code: undefined })
    // The hit in the x-request-id: still its own 400, as before.
    const hit = await a.proxy.inject({ method: 'GET', url: asking(['nothing-secret']), headers: { 'x-api-key': KEYS.all, 'x-request-id': `id-${password}` } })
    expect(hit.statusCode).toBe(400)
    expect(hit.json()).toMatchObject({ code: 'GW_BAD_REQUEST' })
    // The hit's line: error level, the team, the key and where, never the secret.
    const line = a.logs.records().find((r) => r.msg !== undefined && String(r.msg).startsWith('team suspended'))
    expect(line).toMatchObject({ level: 50, team: 'all', where: 'x-request-id' })
    expect(a.logs.text()).not.toContain(password)
    expect((await a.admin.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).body).toContain('gateway_team_suspensions_total{team="all"} 1')
    await waitFor('the other replica to refuse the team', async () => (await ask(b, ['nothing-secret'])).status === 403)
    expect(await ask(b, ['nothing-secret'])).toMatchObject({ status: 403, code: 'GW_TEAM_SUSPENDED' })
    // Another team is served as before; a replica that starts now reads the suspension.
    expect(await ask(b, ['nothing-secret'], KEYS.growth)).not.toMatchObject({ code: 'GW_TEAM_SUSPENDED' })
    const c = await gateways.build(config())
    expect(await ask(c, ['nothing-secret'])).toMatchObject({ status: 403, code: 'GW_TEAM_SUSPENDED' })
    const status = await c.admin.inject({ method: 'GET', url: '/admin/status', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    const teams = (status.json() as { teams: { name: string; suspendedUntil: string | null }[] }).teams
    expect(teams.find((t) => t.name === 'all')?.suspendedUntil).toEqual(expect.any(String))
    expect(teams.find((t) => t.name === 'growth')?.suspendedUntil).toBeNull()

    const lift = await b.admin.inject({ method: 'DELETE', url: '/admin/suspensions/all', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(lift.statusCode).toBe(200)
    expect(lift.json()).toEqual({ team: 'all', lifted: true, replicas: 'all' })
    for (const gw of [a, b, c]) await waitFor('every replica to serve the team again', async () => (await ask(gw, ['nothing-secret'])).status === 404)
    expect(b.logs.records().some((r) => r.kind === 'audit' && r.action === 'lift-suspension' && r.team === 'all')).toBe(true)
  })

  it('answers the hit itself 400 on a real connection, a report the team read before included (the entrance before the router decides it first)', async () => {
    const gw = await listen(await gateways.build(config()))
    const report = `${gw.url}/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07`
    const read = (headers: Record<string, string> = {}) => fetch(report, { headers: { 'x-api-key': KEYS.all, ...headers } })
    expect((await read()).status).toBe(200)
    const hit = await read({ 'x-request-id': `id-${sandbox.credentials.password}` })
    expect(hit.status).toBe(400)
    expect(await hit.json()).toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringMatching(/^x-request-id: holds a secret of the gateway's/) })
    const next = await read()
    expect(next.status).toBe(403)
    expect(await next.json()).toMatchObject({ code: 'GW_TEAM_SUSPENDED' })
  })

  it('counts the hit and the refusals after it as the team\'s: their access lines name it and its key, its usage counts them', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN, LOG_LEVEL: 'info' }))
    const calls = [
      { url: '/api/v1/campaign/list?userId=101', headers: { 'x-api-key': KEYS.all, 'x-request-id': `id-${sandbox.credentials.password}` } },
      { url: '/api/v1/campaign/list?userId=101', headers: { 'x-api-key': KEYS.all } },
      { url: '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07', headers: { 'x-api-key': KEYS.all } },
      { url: '/api/v1/jobs', headers: { 'x-api-key': KEYS.all } },
    ]
    const codes = []
    for (const call of calls) codes.push((await gw.proxy.inject({ method: 'GET', ...call })).json<{ code: string }>().code)
    expect(codes).toEqual(['GW_BAD_REQUEST', 'GW_TEAM_SUSPENDED', 'GW_TEAM_SUSPENDED', 'GW_TEAM_SUSPENDED'])
    const lines = gw.logs.records().filter((r) => r.msg === 'request')
    expect(lines.map((r) => [r.status, r.team, r.keyId])).toEqual([400, 403, 403, 403].map((status) => [status, 'all', expect.any(String)]))
    const usage = await gw.admin.inject({ method: 'GET', url: '/admin/usage?team=all', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(usage.json()).toMatchObject({ usage: [expect.objectContaining({ team: 'all', requests: 4 })] })
  })

  it('holds on the replica that refused the hit without Redis', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN }))
    expect(await ask(gw, [sandbox.credentials.password])).toMatchObject({ status: 400 })
    expect(await ask(gw, ['nothing-secret'])).toMatchObject({ status: 403, code: 'GW_TEAM_SUSPENDED' })
    const lift = await gw.admin.inject({ method: 'DELETE', url: '/admin/suspensions/all', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(lift.json()).toEqual({ team: 'all', lifted: true, replicas: 'this replica only' })
    expect(await ask(gw, ['nothing-secret'])).toMatchObject({ status: 404, code: undefined })
  })

  it('holds on the replica that refused the hit while Redis is down, and reaches Redis once it is back', async () => {
    const a = await gateways.build(config())
    await server.stop()
    try {
      expect(await ask(a, [sandbox.credentials.password])).toMatchObject({ status: 400 })
      expect(await ask(a, ['nothing-secret'])).toMatchObject({ status: 403, code: 'GW_TEAM_SUSPENDED' })
    } finally {
      await server.restart()
    }
    await waitFor('the suspension to reach Redis', async () => (await client.keys('*suspensions*')).length === 1)
    const b = await gateways.build(config())
    expect(await ask(b, ['nothing-secret'])).toMatchObject({ status: 403, code: 'GW_TEAM_SUSPENDED' })
  })

  // A Redis at its maxmemory under noeviction answers OOM to every write and still reads
  // and publishes: the other replicas hear the suspension, Redis does not keep it. Once
  // Redis accepts writes again (the circuit never opened) the replica writes it, so that a
  // replica started after refuses the team.
  it('holds while Redis refuses writes (maxmemory, noeviction), and reaches Redis once it accepts them again', async () => {
    // A write is tried again a breakerCooldown after the last refusal: 500 ms, not 5 s.
    const quick = `${TEAMS_YAML}\nredis:\n  breakerCooldown: 500ms\n`
    const a = await gateways.build(config({}, quick))
    const b = await gateways.build(config({}, quick))
    try {
      await fillRedisUp(client)
      expect(await ask(a, [sandbox.credentials.password])).toMatchObject({ status: 400 })
      expect(await ask(a, ['nothing-secret'])).toMatchObject({ status: 403, code: 'GW_TEAM_SUSPENDED' })
      await waitFor('the other replica to refuse the team', async () => (await ask(b, ['nothing-secret'])).status === 403)
      expect(await client.keys('*suspensions*')).toEqual([])
    } finally {
      await client.config('SET', 'maxmemory', '0')
    }
    await waitFor('the suspension to reach Redis', async () => (await client.keys('*suspensions*')).length === 1)
    const c = await gateways.build(config())
    expect(await ask(c, ['nothing-secret'])).toMatchObject({ status: 403, code: 'GW_TEAM_SUSPENDED' })
  })

  it("holds through a Redis that evicts at its maxmemory (volatile-lru, the replicas guide's policy): a replica started after the evictions refuses the team", async () => {
    const a = await gateways.build(config())
    expect(await ask(a, [sandbox.credentials.password])).toMatchObject({ status: 400 })
    await waitFor('the suspension to reach Redis', async () => (await client.keys('*suspensions')).length === 1)
    // Redis full of report copies (each with its expiry): it evicts the keys that carry one.
    const used = Number(/used_memory:(\d+)/.exec(await client.info('memory'))?.[1])
    await client.config('SET', 'maxmemory', String(used + 2 * 1024 * 1024))
    await client.config('SET', 'maxmemory-policy', 'volatile-lru')
    const evicted = async () => Number(/evicted_keys:(\d+)/.exec(await client.info('stats'))?.[1])
    try {
      // A thousand keys evicted: far more than the copies Redis holds at once (about 200).
      for (let round = 0; (await evicted()) < 1000; round++) {
        const batch = client.pipeline()
        for (let i = 0; i < 100; i++) batch.set(`rgw:filler:${round}:${i}`, 'x'.repeat(10_000), 'PX', 3_600_000)
        await batch.exec()
      }
      const b = await gateways.build(config())
      expect(await ask(b, ['nothing-secret'])).toMatchObject({ status: 403, code: 'GW_TEAM_SUSPENDED' })
      // No expiry: what Redis evicts under volatile-lru it never is.
      expect(await client.pttl('rgw:suspensions')).toBe(-1)
    } finally {
      await client.config('SET', 'maxmemory', '0')
      await client.config('SET', 'maxmemory-policy', 'noeviction')
    }
  })

  it('holds through a Redis restarted without its data: the replicas that hold the suspension write it again, and a replica started after refuses the team', async () => {
    const a = await gateways.build(config())
    const b = await gateways.build(config())
    expect(await ask(a, [sandbox.credentials.password])).toMatchObject({ status: 400 })
    await waitFor('the other replica to refuse the team', async () => (await ask(b, ['nothing-secret'])).status === 403)
    await server.stop()
    // Restarted without its data: the replicas, which may write it again at once, log that they found it missing (below).
    await server.restart()
    await waitFor('the suspension written again', async () => (await client.keys('*suspensions*')).length === 1)
    for (const gw of [a, b]) expect(await ask(gw, ['nothing-secret'])).toMatchObject({ status: 403, code: 'GW_TEAM_SUSPENDED' })
    const c = await gateways.build(config())
    expect(await ask(c, ['nothing-secret'])).toMatchObject({ status: 403, code: 'GW_TEAM_SUSPENDED' })
    expect(a.logs.text() + b.logs.text()).toContain('team suspensions missing from Redis')
  })

  it('takes a lift made while Redis is down to Redis once it is back with its data, and to every replica; the answer says so', async () => {
    const a = await gateways.build(config())
    const b = await gateways.build(config())
    expect(await ask(a, [sandbox.credentials.password])).toMatchObject({ status: 400 })
    await waitFor('the suspension in Redis, and on the other replica', async () => (await client.keys('*suspensions*')).length === 1 && (await ask(b, ['nothing-secret'])).status === 403)
    // Redis stops with its data on disk (SAVE), and comes back with it: the suspension in it.
    await client.save()
    await server.stop()
    let lift
    try {
      lift = await b.admin.inject({ method: 'DELETE', url: '/admin/suspensions/all', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect(await ask(b, ['nothing-secret'])).toMatchObject({ status: 404, code: undefined })
    } finally {
      await server.restart()
    }
    try {
      for (const gw of [a, b]) await waitFor('every replica to serve the team again', async () => (await ask(gw, ['nothing-secret'])).status === 404)
      const c = await gateways.build(config())
      expect(await ask(c, ['nothing-secret'])).toMatchObject({ status: 404, code: undefined })
      expect(lift.json()).toEqual({ team: 'all', lifted: true, replicas: 'this replica until Redis answers again' })
      expect(b.logs.records().find((r) => r.kind === 'audit' && r.action === 'lift-suspension')).toMatchObject({ replicas: 'this replica until Redis answers again', msg: 'team suspension lifted on this replica until Redis answers again, then on every replica' })
      // Another hit after the lift suspends the team again.
      expect(await ask(c, [sandbox.credentials.password])).toMatchObject({ status: 400 })
      await waitFor('the new suspension on every replica', async () => (await ask(a, ['nothing-secret'])).status === 403 && (await ask(b, ['nothing-secret'])).status === 403)
    } finally {
      // No later restart of this file's Redis comes back with this test's data.
      await client.flushall()
      await client.save()
    }
  })

  it('a viewer may not lift a suspension', async () => {
    const gw = await gateways.build(config({ ADMIN_VIEWER_TOKEN: 'strike-viewer-token-0123456789abcdef' }))
    const res = await gw.admin.inject({ method: 'DELETE', url: '/admin/suspensions/all', headers: { authorization: 'Bearer strike-viewer-token-0123456789abcdef' } })
    expect(res.statusCode).toBe(403)
  })
})
