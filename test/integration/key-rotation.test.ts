import { describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { loadConfig } from '../../src/config.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KeyUse } from '../../src/observe/key-use.js'
import { RedisBreaker } from '../../src/redis/breaker.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { type ConfigMapDir, useConfigMaps } from '../helpers/config-map.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { TEST_GATEWAY_SECRET, type TestGateway } from '../helpers/build-gateway.js'
import { type FakeClock, fakeClock } from '../helpers/clock.js'

// Keys rotate with overlap and keep their history (issue 52, item 7): a rotation adds a
// successor that keeps the key's lineage; the old key works until the grace the operator
// set, then answers 401 naming its successor; GET /admin/keys lists a removed key, with
// its last use and counts, for 30 days after its removal, on every replica.

const ADMIN_TOKEN = 'key-rotation-admin-token-00000000'
const OLD = 'rgw_rotation_old_key_000000000000000000000000'
const NEW = 'rgw_rotation_new_key_111111111111111111111111'
const OPS = 'rgw_rotation_ops_key_222222222222222222222222'
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-02'
const DAY = 86_400_000

const oldEntry = (graceUntil: string) => `{ hash: "${hashApiKey(OLD)}", id: growth-1, createdAt: "2026-01-01T00:00:00Z", successor: growth-2, graceUntil: "${graceUntil}" }`
const newEntry = `{ hash: "${hashApiKey(NEW)}", id: growth-2, createdAt: "2026-03-01T00:00:00Z", lineage: growth-1, replaces: growth-1 }`
const opsTeam = `  ops:\n    keys: [{ hash: "${hashApiKey(OPS)}", id: ops-1 }]\n    advertisers: ["*"]\n`
const teams = (entries: string[], more = opsTeam) => `teams:\n  growth:\n    keys:\n${entries.map((e) => `      - ${e}\n`).join('')}    advertisers: ["*"]\n${more}`

interface KeyRow {
  team: string
  id: string
  lineage: string
  replaces: string | null
  successor: string | null
  graceUntil: string | null
  state: string
  removedAt: string | null
  createdAt: string | null
  expiresAt: string | null
  expired: boolean
  lastUsedAt: string | null
  lastUsed: { replica: string; at: string }[]
  requestsLastHour: number
}

const sandbox = useSandbox()
const redis = useRedis()
const gateways = useGateways()
const configMaps = useConfigMaps()
const teamsFile = (text: string) => configMaps(text, 'teams.yaml')

async function replica(dir: ConfigMapDir, withRedis = true, clock?: FakeClock): Promise<TestGateway> {
  const env = {
    TEAMS_FILE: dir.path,
    PLATFORM_BASE_URL: sandbox.url,
    PLATFORM_TOKEN: sandbox.issueToken(),
    ADMIN_TOKEN,
    ...(withRedis ? { REDIS_URL: redis.server.url, GATEWAY_SECRET: TEST_GATEWAY_SECRET } : {}),
  }
  return gateways.build(loadConfig({ env }), { configSource: { env }, ...(clock ? { clock } : {}) })
}

const call = (gw: TestGateway, key: string) => gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': key } })
const admin = (gw: TestGateway, method: 'GET' | 'POST', url: string) => gw.admin.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
async function keys(gw: TestGateway, query = ''): Promise<{ status: number; body: string; redis: string; complete: boolean; keys: KeyRow[] }> {
  const res = await admin(gw, 'GET', `/admin/keys${query}`)
  return { status: res.statusCode, body: res.body, ...(res.statusCode === 200 ? res.json<{ redis: string; complete: boolean; keys: KeyRow[] }>() : { redis: '', complete: false, keys: [] }) }
}
const row = async (gw: TestGateway, id: string) => (await keys(gw)).keys.find((k) => k.id === id)

describe('a key rotation with a grace', () => {
  it('keeps the old key working until its grace ends, then refuses it with 401 naming its successor; /admin/keys shows the line and the state of each', async () => {
    // The grace ends on the gateway's clock, however long its start takes.
    const clock = fakeClock()
    const grace = new Date(clock.now() + 2000).toISOString()
    const gw = await replica(teamsFile(teams([oldEntry(grace), newEntry])), false, clock)
    expect((await call(gw, OLD)).statusCode).toBe(200)
    expect((await call(gw, NEW)).statusCode).toBe(200)
    const during = await keys(gw, '?team=growth')
    expect(during.keys.map((k) => [k.id, k.state, k.lineage, k.replaces, k.successor, k.graceUntil])).toEqual([
      ['growth-1', 'grace', 'growth-1', null, 'growth-2', grace],
      ['growth-2', 'active', 'growth-1', 'growth-1', null, null],
    ])
    expect(during.keys[0]).toMatchObject({ removedAt: null, requestsLastHour: 1, lastUsedAt: expect.any(String) })

    clock.advance(1999)
    expect((await call(gw, OLD)).statusCode).toBe(200)
    clock.advance(1)
    const refused = await call(gw, OLD)
    expect(refused.json()).toMatchObject({ code: 'GW_UNAUTHORIZED', message: `API key growth-1 was replaced by growth-2: its grace ended at ${grace}; use the key growth-2 (your team was given it)` })
    expect(refused.headers['www-authenticate']).toBe('ApiKey realm="report-gateway"')
    expect(refused.body).not.toContain(OLD)
    expect((await call(gw, NEW)).statusCode).toBe(200)
    expect(await row(gw, 'growth-1')).toMatchObject({ state: 'ended', successor: 'growth-2' })
  })
})

describe('GET /admin/keys after a key is removed', () => {
  it('lists the removed key with its last use and counts on every replica, one started after the removal too', async () => {
    const grace = new Date(Date.now() + 7 * DAY).toISOString()
    const dir = teamsFile(teams([oldEntry(grace), newEntry]))
    const a = await replica(dir)
    const b = await replica(dir)
    for (let i = 0; i < 3; i++) expect((await call(a, OLD)).statusCode).toBe(200)
    expect((await call(b, NEW)).statusCode).toBe(200)
    await a.keyUse.flush()
    await b.keyUse.flush()

    dir.update(teams([newEntry]))
    // `unchanged` when the file poll (1 s) applied the change before the call came.
    const reloaded = (await admin(a, 'POST', '/admin/reload')).json<{ result: string; removedKeys: string[] }>()
    if (reloaded.result === 'applied') expect(reloaded.removedKeys).toEqual(['growth/growth-1'])
    else expect(reloaded.result).toBe('unchanged')
    // B applies it too (or did already, through Redis or its file poll): no use of the old key counted after.
    expect((await admin(b, 'POST', '/admin/reload')).statusCode).toBe(200)
    for (const gw of [a, b]) expect((await call(gw, OLD)).statusCode).toBe(401)
    const c = await replica(dir)

    for (const gw of [a, b, c]) {
      const listed = await keys(gw)
      expect(listed).toMatchObject({ redis: 'ok', complete: true })
      expect(listed.keys.map((k) => [k.team, k.id, k.state])).toEqual([
        ['growth', 'growth-2', 'active'],
        ['ops', 'ops-1', 'active'],
        ['growth', 'growth-1', 'removed'],
      ])
      const removed = listed.keys[2]!
      expect(removed).toMatchObject({ lineage: 'growth-1', successor: 'growth-2', graceUntil: grace, createdAt: '2026-01-01T00:00:00.000Z', requestsLastHour: 3 })
      expect(Math.abs(Date.parse(removed.removedAt!) - Date.now())).toBeLessThan(60_000)
      expect(removed.lastUsedAt).toBe(removed.lastUsed[0]!.at)
      expect((await keys(gw, '?team=growth')).keys.map((k) => k.id)).toEqual(['growth-2', 'growth-1'])
      for (const secret of [OLD, NEW, hashApiKey(OLD), hashApiKey(NEW)]) expect(listed.body).not.toContain(secret)
    }
  })

  it('lists the keys of a team removed whole under its name; ?team= of such a team answers them, of no team at all 404', async () => {
    const dir = teamsFile(teams([newEntry]))
    const gw = await replica(dir)
    expect((await call(gw, OPS)).statusCode).toBe(200)
    dir.update(teams([newEntry], ''))
    await admin(gw, 'POST', '/admin/reload')
    expect((await call(gw, OPS)).statusCode).toBe(401)
    const gone = await keys(gw, '?team=ops')
    expect(gone.status).toBe(200)
    expect(gone.keys).toEqual([expect.objectContaining({ team: 'ops', id: 'ops-1', state: 'removed', requestsLastHour: 1 })])
    expect((await keys(gw, '?team=nobody')).status).toBe(404)
  })

  it('without Redis, the replica that saw the removal lists it, saying it counts only its own use', async () => {
    const dir = teamsFile(teams([oldEntry(new Date(Date.now() + DAY).toISOString()), newEntry]))
    const gw = await replica(dir, false)
    expect((await call(gw, OLD)).statusCode).toBe(200)
    dir.update(teams([newEntry]))
    await admin(gw, 'POST', '/admin/reload')
    const listed = await keys(gw)
    expect(listed).toMatchObject({ redis: 'not configured', complete: false })
    expect(listed.keys.find((k) => k.id === 'growth-1')).toMatchObject({ team: 'growth', state: 'removed', requestsLastHour: 1, successor: 'growth-2' })
  })

  it('lists a key whose removal no running replica saw (every replica started with the new teams) from its recorded use, its removal time unknown', async () => {
    // A replica of the previous teams that served growth-0, then left.
    const breaker = new RedisBreaker({ cooldownMs: 1000, log: pino({ level: 'silent' }) })
    const before = new KeyUse({ replica: 'replica-gone', redis: redis.client, breaker, seal: new RedisSeal(TEST_GATEWAY_SECRET), prefix: 'rgw:' })
    before.note('growth-0', Date.now() - 60_000, 'growth')
    await before.flush()
    const gw = await replica(teamsFile(teams([newEntry])))
    expect(gw.config.redis.keyPrefix).toBe('rgw:')
    expect(await row(gw, 'growth-0')).toMatchObject({ team: 'growth', state: 'removed', removedAt: null, lineage: 'growth-0', successor: null, requestsLastHour: 1 })
  })
})

describe('KeyUse, removed keys', () => {
  const at = Date.parse('2026-03-01T12:00:00Z')
  const breaker = () => new RedisBreaker({ cooldownMs: 1000, log: pino({ level: 'silent' }) })
  const removedKey = { team: 'growth', id: 'growth-1', lineage: 'growth-1', replaces: null, successor: 'growth-2', graceUntil: at + DAY, createdAt: at - 90 * DAY, expiresAt: null }

  it('keeps a removal for 30 days, on every replica through Redis, and forgets one whose key came back', async () => {
    const clock = fakeClock(at)
    const seal = new RedisSeal(TEST_GATEWAY_SECRET)
    const a = new KeyUse({ replica: 'replica-a', redis: redis.client, breaker: breaker(), seal, prefix: 'kr:', clock })
    const b = new KeyUse({ replica: 'replica-b', redis: redis.client, breaker: breaker(), seal, prefix: 'kr:', clock })
    await a.keysChanged({ removed: [removedKey], added: [] })
    expect([...(await b.gather()).removed.values()]).toEqual([{ ...removedKey, removedAt: at }])
    // A second replica's reload of the same change keeps the first removal time.
    clock.advance(5000)
    await b.keysChanged({ removed: [removedKey], added: [] })
    expect((await a.gather()).removed.get('growth-1')?.removedAt).toBe(at)
    clock.advance(30 * DAY - 4000)
    expect((await b.gather()).removed.size).toBe(0)
    expect((await a.gather()).removed.size).toBe(0)

    await a.keysChanged({ removed: [removedKey], added: [] })
    expect((await b.gather()).removed.size).toBe(1)
    await b.keysChanged({ removed: [], added: ['growth-1'] })
    expect((await a.gather()).removed.size).toBe(0)
  })

  it('ignores a removal record without the seal', async () => {
    const clock = fakeClock(at)
    const a = new KeyUse({ replica: 'replica-a', redis: redis.client, breaker: breaker(), seal: new RedisSeal(TEST_GATEWAY_SECRET), prefix: 'kr:', clock })
    const forger = new KeyUse({ replica: 'replica-f', redis: redis.client, breaker: breaker(), seal: new RedisSeal('another-gateway-secret-0000000000'), prefix: 'kr:', clock })
    await forger.keysChanged({ removed: [removedKey], added: [] })
    expect((await a.gather()).removed.size).toBe(0)
  })
})
