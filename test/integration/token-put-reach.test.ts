import { describe, expect, it } from 'vitest'
import { fingerprint } from '../../src/observe/fingerprint.js'
import { TEAMS_YAML, sandboxLoginEnv, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { tokenOf } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// PUT /admin/token and POST /admin/token/refresh say which replicas the new token reached:
// every replica (Redis took it), this one only (no Redis), or this one until Redis answers
// again (Redis did not take the write; the others take it then). POST /admin/reload says
// whether the other replicas were told.

const ADMIN_TOKEN = 'put-reach-admin-token-0123456789abcdef'
const GATEWAY_SECRET = 'put-reach-gateway-secret-0123456789'

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)

async function put(gw: TestGateway, token: string): Promise<Record<string, unknown>> {
  const res = await gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { token } })
  expect(res.statusCode).toBe(200)
  return res.json()
}

async function refresh(gw: TestGateway): Promise<Record<string, unknown>> {
  const res = await gw.admin.inject({ method: 'POST', url: '/admin/token/refresh', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  expect(res.statusCode).toBe(200)
  return res.json()
}

describe('the replicas PUT /admin/token reached, without Redis', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()

  it('this replica only', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, PLATFORM_TOKEN: sandbox.issueToken() }, TEAMS_YAML))
    expect(await put(gw, sandbox.issueToken())).toMatchObject({ changed: true, replicas: 'this replica only' })
  })

  it('a login run again: this replica only', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, ...sandboxLoginEnv(sandbox) }, TEAMS_YAML))
    expect(await refresh(gw)).toMatchObject({ source: 'login', replicas: 'this replica only' })
  })
})

describe.skipIf(!redisCheck.available)('the replicas PUT /admin/token reached, with Redis', () => {
  const sandbox = useSandbox()
  const { server: redis, client } = useRedis()
  const gateways = useGateways()
  // Replicas A and B wait on Redis' answer however slow a loaded machine makes it (a command timeout longer than any
  // test's, the test's timeout the bound); replica C gives up on a write at the default command timeout, 250 ms.
  const WAITING_YAML = `${TEAMS_YAML}\nredis:\n  commandTimeout: 60s\n`
  const replica = (token: string, yaml = WAITING_YAML) => gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, REDIS_URL: redis.url, GATEWAY_SECRET, PLATFORM_TOKEN: token }, yaml))
  /** `call` while Redis holds every write (as a failover or a full disk would refuse it), until `call` is answered. */
  async function writesHeld<T>(call: () => Promise<T>): Promise<T> {
    await client.call('CLIENT', 'PAUSE', '600000', 'WRITE')
    try {
      return await call()
    } finally {
      await client.call('CLIENT', 'UNPAUSE')
    }
  }

  it('every replica when Redis took it; this one until Redis answers again when Redis refused the write, then every replica', async () => {
    const first = sandbox.issueToken()
    const a = await replica(first)
    const b = await replica(first)
    const c = await replica(first, TEAMS_YAML)
    const next = sandbox.issueToken()
    expect(await put(a, next)).toMatchObject({ changed: true, replicas: 'all', fingerprint: fingerprint(next, GATEWAY_SECRET) })
    await waitFor('replica B to take the token', () => tokenOf(b) === next)

    const third = sandbox.issueToken()
    expect(await writesHeld(() => put(c, third))).toMatchObject({ changed: true, replicas: 'this replica until Redis answers again' })
    await waitFor('replica B to take the token once Redis answered', () => tokenOf(b) === third)
  })

  it('a login run again: every replica when Redis took it, this one until Redis answers again when it did not', async () => {
    const login = (yaml = WAITING_YAML) => gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, REDIS_URL: redis.url, GATEWAY_SECRET, ...sandboxLoginEnv(sandbox) }, yaml))
    const a = await login()
    const b = await login()
    const c = await login(TEAMS_YAML)
    expect(await refresh(a)).toMatchObject({ source: 'login', replicas: 'all' })
    await waitFor('replica B to take the login\'s token', () => tokenOf(b) === tokenOf(a))
    expect(await writesHeld(() => refresh(c))).toMatchObject({ source: 'login', replicas: 'this replica until Redis answers again' })
  })
})
