import { describe, expect, it } from 'vitest'
import { fingerprint } from '../../src/observe/fingerprint.js'
import { TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useCleanups, useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { campaignList, tokenOf } from '../helpers/gateway-calls.js'
import { redisGate } from '../helpers/redis-gate.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// PUT /admin/token on a replica cut off from Redis (a partition: its connections dropped,
// new ones refused), then healed. The change made last wins on every replica, whichever
// side of the partition it was made on, and no caller gets the platform's 401 to a token
// the platform revoked once the new one was in.

const ADMIN_TOKEN = 'partition-admin-token-0123456789abcdef'
const GATEWAY_SECRET = 'partition-gateway-secret-0123456789'
const STORE_KEY = 'rgw:token:default'

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)

describe.skipIf(!redisCheck.available)('PUT /admin/token on a replica partitioned from Redis', () => {
  const sandbox = useSandbox()
  const { server: redis, client } = useRedis()
  const gateways = useGateways()
  const cleanups = useCleanups()

  async function put(gw: TestGateway, token: string): Promise<Record<string, unknown>> {
    const res = await gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { token } })
    expect(res.statusCode, res.body).toBe(200)
    return res.json()
  }

  async function storedFingerprint(): Promise<unknown> {
    const raw = await client.get(STORE_KEY)
    return raw ? (JSON.parse(raw) as { fingerprint?: unknown }).fingerprint : undefined
  }

  /** Replica A reaches Redis directly; replica B through a gate the test cuts and opens. */
  async function pair(first: string) {
    const env = { PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, GATEWAY_SECRET, PLATFORM_TOKEN: first }
    const gate = await redisGate(redis.port, cleanups)
    gate.open()
    const a = await gateways.build(testConfig({ ...env, REDIS_URL: redis.url }, TEAMS_YAML))
    const b = await gateways.build(testConfig({ ...env, REDIS_URL: gate.url }, TEAMS_YAML))
    return { a, b, gate }
  }

  async function settledOn(a: TestGateway, b: TestGateway, token: string, what: string) {
    const fp = fingerprint(token, GATEWAY_SECRET)
    await waitFor(what, async () => tokenOf(a) === token && tokenOf(b) === token && (await storedFingerprint()) === fp)
  }

  it('a rotation made on the cut-off replica reaches every replica once it is healed', async () => {
    const first = sandbox.issueToken()
    const { a, b, gate } = await pair(first)
    gate.cut()
    const next = sandbox.issueToken()
    expect(await put(b, next)).toMatchObject({ changed: true, replicas: 'this replica until Redis answers again' })
    expect(tokenOf(a)).toBe(first)
    gate.open()
    await settledOn(a, b, next, 'both replicas and Redis to hold the rotation made while cut off')
    // B's log closes the error line it wrote at the PUT: the token is shared now.
    const lines = b.logs.records()
    const failed = lines.findIndex((l) => l.msg === 'the new platform token could not be shared through Redis; other replicas keep theirs until Redis answers again')
    expect(failed).toBeGreaterThanOrEqual(0)
    expect(lines.slice(failed + 1)).toContainEqual(
      expect.objectContaining({ level: 30, credential: 'default', fingerprint: fingerprint(next, GATEWAY_SECRET), msg: 'the platform token not shared before is stored in Redis now; the other replicas take it' }),
    )
  })

  it('a replica stopped before Redis took its rotation says the rotation goes with it', async () => {
    const first = sandbox.issueToken()
    const { b, gate } = await pair(first)
    gate.cut()
    const next = sandbox.issueToken()
    expect(await put(b, next)).toMatchObject({ changed: true, replicas: 'this replica until Redis answers again' })
    await b.close()
    expect(b.logs.records()).toContainEqual(
      expect.objectContaining({ level: 40, credential: 'default', fingerprint: fingerprint(next, GATEWAY_SECRET), msg: 'the platform token set on this replica was never shared through Redis and stops with it: the other replicas, and this one when it starts again, keep the token stored before; set it again once Redis answers' }),
    )
  })

  it('a rotation made on the other side after it wins at the heal; the cut-off one is not put back', async () => {
    const first = sandbox.issueToken()
    const { a, b, gate } = await pair(first)
    gate.cut()
    const older = sandbox.issueToken()
    expect(await put(b, older)).toMatchObject({ replicas: 'this replica until Redis answers again' })
    const newer = sandbox.issueToken()
    expect(await put(a, newer)).toMatchObject({ replicas: 'all' })
    gate.open()
    await settledOn(a, b, newer, 'both replicas and Redis to hold the later rotation')
    // Settled, not fighting: B's write once it reached Redis did not replace the later one.
    for (let i = 0; i < 5; i++) await campaignList(b)
    expect([tokenOf(a), tokenOf(b), await storedFingerprint()]).toEqual([newer, newer, fingerprint(newer, GATEWAY_SECRET)])
  })

  it("the platform revoking the token a rotation replaced: the replica still on it answers the gateway's error, never the platform's 401, and takes the rotation at the heal", async () => {
    const first = sandbox.issueToken()
    const { a, b, gate } = await pair(first)
    gate.cut()
    const next = sandbox.issueToken()
    expect(await put(b, next)).toMatchObject({ replicas: 'this replica until Redis answers again' })
    sandbox.revokeToken(first)
    const onA = await campaignList(a)
    expect(onA.statusCode, onA.body).not.toBe(401)
    expect(onA.json()).toMatchObject({ statusCode: 502, code: 'GW_PLATFORM_AUTH' })
    expect((await campaignList(b)).statusCode).toBe(200)
    gate.open()
    await settledOn(a, b, next, 'replica A to take the rotation once B reached Redis')
    const after = await campaignList(a)
    expect(after.statusCode, after.body).toBe(200)
  })
  it('a silent partition (no byte either way, no connection closed): the PUT answers once its write times out, the heal shares it', async () => {
    const first = sandbox.issueToken()
    const { a, b, gate } = await pair(first)
    gate.stall()
    const next = sandbox.issueToken()
    const answer = await put(b, next)
    expect(answer).toMatchObject({ replicas: 'this replica until Redis answers again' })
    expect(tokenOf(b)).toBe(next)
    expect((await campaignList(b)).statusCode).toBe(200)
    gate.open()
    await settledOn(a, b, next, 'both replicas and Redis to hold the rotation made while stalled')
  })
})
