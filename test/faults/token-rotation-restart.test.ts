import { describe, expect, it } from 'vitest'
import { fingerprint } from '../../src/observe/fingerprint.js'
import { KEYS, sandboxLoginEnv, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useCleanups, useRedis, useSandbox } from '../helpers/fixtures.js'
import { bearerOf } from '../helpers/gateway-calls.js'
import { spawnGateway, spawnGateways, type GatewayProcess } from '../helpers/gateway-process.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'

// An operator rotates the platform token (PUT /admin/token) on a credential with the
// password login configured, then a replica restarts, stopped (SIGTERM) or killed
// (SIGKILL). Two gateway processes (dist/main.js) on one redis-server and the sandbox:
// the restarted replica takes the shared token instead of logging in, nothing undoes the
// rotation, and the platform sees every call with the rotated token.

const ADMIN_TOKEN = 'restart-admin-token-0123456789abcdef'
const GATEWAY_SECRET = 'restart-gateway-secret-0123456789ab'

const redisCheck = redisAvailability('the token rotation restart tests')

interface TokenView {
  source: string
  fingerprint: string
}

describe.skipIf(!redisCheck.available)('a rotation survives a replica restart (gateway processes, password login)', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const cleanups = useCleanups()

  function start(): Promise<GatewayProcess> {
    return spawnGateway({ env: replicaEnv(), yaml: TEAMS_YAML })
  }

  function replicaEnv(): Record<string, string> {
    return { PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), REDIS_URL: redis.url, GATEWAY_SECRET, ADMIN_TOKEN }
  }

  /** An operator's PUT /admin/token on `gw`. */
  function putToken(gw: GatewayProcess, token: string): Promise<Response> {
    return fetch(`${gw.adminUrl}/admin/token`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ token }),
    })
  }

  async function tokenView(gw: GatewayProcess): Promise<TokenView> {
    const res = await fetch(`${gw.adminUrl}/admin/token`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.status).toBe(200)
    return (await res.json()) as TokenView
  }

  /** The token changes each replica's audit log recorded (audit lines are written whatever the log level). */
  function tokenChanges(gw: GatewayProcess): Record<string, unknown>[] {
    return gw
      .output()
      .split('\n')
      .filter((line) => line.includes('"platform token changed"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
  }

  async function campaignList(gw: GatewayProcess): Promise<number> {
    const res = await fetch(`${gw.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: '{"userId":101}' })
    await res.arrayBuffer()
    return res.status
  }

  it.each([
    { signal: 'SIGTERM' as const, which: 'the replica that took the rotation through Redis' },
    { signal: 'SIGKILL' as const, which: 'the replica the operator called' },
  ])('$signal to $which: the restarted replica takes the rotated token, makes no login, and every call carries the rotated token', async ({ signal, which }) => {
    const replicas = await spawnGateways(2, { env: replicaEnv(), yaml: TEAMS_YAML })
    cleanups.push(async () => {
      for (const gw of replicas) await gw.close()
    })
    const [called, other] = replicas as [GatewayProcess, GatewayProcess]
    // Both replicas hold one token: one logged in, the other took it (or logged in later and the first took that).
    await waitFor('both replicas on one token', async () => (await tokenView(called)).fingerprint === (await tokenView(other)).fingerprint, testTimeLeft(), 50)

    const rotated = sandbox.issueToken()
    expect((await putToken(called, rotated)).status).toBe(200)
    await waitFor('the other replica to take the rotated token', async () => (await tokenView(other)).fingerprint === fingerprint(rotated, GATEWAY_SECRET), testTimeLeft(), 50)
    sandbox.clearRequests()

    const restarting = which === 'the replica the operator called' ? called : other
    const staying = restarting === called ? other : called
    restarting.kill(signal)
    const exit = await restarting.exited
    expect(exit.signal ?? exit.code).toBe(signal === 'SIGTERM' ? 0 : 'SIGKILL')
    const restarted = await start()
    replicas[replicas.indexOf(restarting)] = restarted

    expect(await tokenView(restarted)).toMatchObject({ source: 'shared', fingerprint: fingerprint(rotated, GATEWAY_SECRET) })
    // It started without logging in: the token request was never made.
    expect(sandbox.countRequests((r) => r.path === '/oauth/token')).toBe(0)
    // What it took is audited with the operator who made the change, not as an anonymous shared change.
    expect(tokenChanges(restarted)).toEqual([expect.objectContaining({ reason: 'shared', newFingerprint: fingerprint(rotated, GATEWAY_SECRET), actor: 'admin', origin: 'admin' })])

    // The platform sees the rotated token on every call of both replicas.
    sandbox.clearRequests()
    for (const gw of [restarted, staying]) expect(await campaignList(gw)).toBe(200)
    const calls = sandbox.requests.filter((r) => r.path === '/api/v1/campaign/get')
    expect(calls.length).toBeGreaterThanOrEqual(2)
    expect(new Set(calls.map(bearerOf))).toEqual(new Set([rotated]))
    expect(sandbox.countRequests((r) => r.path === '/oauth/token')).toBe(0)

    // Nothing undid the rotation: the replica that stayed kept it until a later put on the
    // restarted one, whose word goes out after anything that replica published at its start.
    const later = sandbox.issueToken()
    expect((await putToken(restarted, later)).status).toBe(200)
    await waitFor('the replica that stayed to audit its taking the later token', () => tokenChanges(staying).at(-1)?.newFingerprint === fingerprint(later, GATEWAY_SECRET), testTimeLeft(), 50)
    expect(tokenChanges(staying).slice(-2).map((r) => r.newFingerprint)).toEqual([fingerprint(rotated, GATEWAY_SECRET), fingerprint(later, GATEWAY_SECRET)])
  }, startsTimeout(3))
})
