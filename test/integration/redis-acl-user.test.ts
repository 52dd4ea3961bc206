import { describe, expect, it } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { distinctReport, proxyGet } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// The replicas guide gives the Redis ACL user the gateway needs: its keys and channels
// under redis.keyPrefix, every command but the dangerous ones, and INFO (ioredis's ready
// check). A gateway logged in as that user fills, hits, purges, runs a report job and
// shares a token, and Redis refuses it nothing (its ACL LOG stays empty).

const { available } = redisAvailability('the gateway as a Redis ACL user')
const ADMIN_TOKEN = 'acl-admin-token-0123456789abcdef0123'
const PASSWORD = 'acl-user-password-0123456789'

describe.skipIf(!available)('the gateway as the Redis ACL user the replicas guide gives', () => {
  const sandbox = useSandbox()
  const redis = useRedis()
  const gateways = useGateways()

  it('is refused no command: reports, a purge, a job and a token shared', async () => {
    // As the guide writes it, for the prefix rgw:.
    await redis.client.call('ACL', 'SETUSER', 'report-gateway', 'on', `>${PASSWORD}`, '~rgw:*', '&rgw:*', '+@all', '-@dangerous', '+info')
    await redis.client.call('ACL', 'LOG', 'RESET')
    const url = `redis://report-gateway:${PASSWORD}@127.0.0.1:${redis.server.port}`
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, REDIS_URL: url, GATEWAY_SECRET: 'acl-gateway-secret-0123456789abcdef' }))
    const admin = (method: 'GET' | 'PUT' | 'DELETE', path: string, payload?: object) =>
      gw.admin.inject({ method, url: path, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ...(payload ? { payload } : {}) })

    expect((await proxyGet(gw, distinctReport(1))).headers['x-cache']).toBe('MISS')
    expect((await proxyGet(gw, distinctReport(1))).headers['x-cache']).toBe('HIT')
    expect((await admin('DELETE', '/admin/cache?advertiserId=101')).statusCode).toBe(200)
    const asked = await gw.proxy.inject({ method: 'GET', url: distinctReport(2), headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.statusCode).toBe(202)
    const location = asked.headers.location as string
    await waitFor('the job done', async () => (await proxyGet(gw, location)).json<{ state: string }>().state === 'done')
    expect((await admin('PUT', '/admin/token', { token: sandbox.issueToken() })).statusCode).toBe(200)
    expect((await admin('GET', '/admin/keys')).json<{ complete: boolean }>().complete).toBe(true)

    expect(await redis.client.call('ACL', 'LOG')).toEqual([])
    expect(gw.logs.text()).not.toMatch(/NOPERM|can't run this command|redis unavailable/)
  })
})
