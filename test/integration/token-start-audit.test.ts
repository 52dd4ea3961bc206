import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fingerprint } from '../../src/observe/fingerprint.js'
import { TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useCleanups, useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { bearerOf, tokenOf } from '../helpers/gateway-calls.js'
import { redisGate } from '../helpers/redis-gate.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// The audit trail a replica writes at start when its configured token (PLATFORM_TOKEN or
// the token file) is one a rotation stored in Redis replaced: the line says the token it
// takes, the stored one, and none says it took the configured one it never uses. Two
// gateways in this process stand for two replicas on one real redis-server.

const ADMIN_TOKEN = 'start-audit-admin-token-0123456789abcdef'
const GATEWAY_SECRET = 'start-audit-gateway-secret-0123456789'
const FILE_POLL_YAML = `${TEAMS_YAML}\nplatform:\n  tokenFilePoll: 200ms\n`

const fp = (token: string) => fingerprint(token, GATEWAY_SECRET)

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)

/** The replica's token-change audit lines, in the order written, as an operator reads them. */
function tokenTrail(gw: TestGateway): Record<string, unknown>[] {
  return gw.logs
    .records()
    .filter((r) => r.kind === 'audit' && r.msg === 'platform token changed')
    .map((r) => ({ reason: r.reason, source: r.source, oldFingerprint: r.oldFingerprint, newFingerprint: r.newFingerprint, origin: r.origin, actor: r.actor }))
}

describe.skipIf(!redisCheck.available)('the audit trail of a replica started with a replaced token', () => {
  const sandbox = useSandbox()
  const { server: redis, client } = useRedis()
  const gateways = useGateways()
  const cleanups = useCleanups()

  function replica(env: Record<string, string>, yaml = TEAMS_YAML): Promise<TestGateway> {
    return gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, REDIS_URL: redis.url, GATEWAY_SECRET, ...env }, yaml))
  }

  function put(gw: TestGateway, token: string) {
    return gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { token } })
  }

  async function storedFingerprint(): Promise<unknown> {
    const raw = await client.get('rgw:token:default').catch(() => null)
    return raw ? (JSON.parse(raw) as { fingerprint?: unknown }).fingerprint : undefined
  }

  function tokenFile(content: string): string {
    const dir = mkdtempSync(join(tmpdir(), 'rgw-start-audit-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const path = join(dir, 'token')
    writeFileSync(path, content)
    return path
  }

  it('PLATFORM_TOKEN replaced by PUT /admin/token: one line, the stored token taken; none names the configured token', async () => {
    const first = sandbox.issueToken()
    const a = await replica({ PLATFORM_TOKEN: first })
    const next = sandbox.issueToken()
    expect((await put(a, next)).statusCode).toBe(200)
    await waitFor('the rotation stored', async () => (await storedFingerprint()) === fp(next))
    sandbox.clearRequests()

    const late = await replica({ PLATFORM_TOKEN: first })
    expect(tokenOf(late)).toBe(next)
    expect(tokenTrail(late)).toEqual([{ reason: 'shared', source: 'shared', oldFingerprint: null, newFingerprint: fp(next), origin: 'admin', actor: 'admin' }])
    expect(sandbox.requests.map(bearerOf)).not.toContain(first)
    for (const secret of [first, next, GATEWAY_SECRET, ADMIN_TOKEN]) expect(late.logs.text()).not.toContain(secret)
  })

  it('a token file whose content another replica\'s file replaced: one line, the stored token taken', async () => {
    const first = sandbox.issueToken()
    const aFile = tokenFile(first)
    const a = await replica({ PLATFORM_TOKEN_FILE: aFile }, FILE_POLL_YAML)
    const next = sandbox.issueToken()
    writeFileSync(aFile, next)
    await waitFor('the file rotation stored', async () => (await storedFingerprint()) === fp(next))
    expect(tokenOf(a)).toBe(next)
    sandbox.clearRequests()

    // A pod still mounting the previous Secret.
    const late = await replica({ PLATFORM_TOKEN_FILE: tokenFile(first) }, FILE_POLL_YAML)
    expect(tokenOf(late)).toBe(next)
    expect(tokenTrail(late)).toEqual([{ reason: 'shared', source: 'shared', oldFingerprint: null, newFingerprint: fp(next), origin: 'file', actor: null }])
    expect(sandbox.requests.map(bearerOf)).not.toContain(first)
    for (const secret of [first, next, GATEWAY_SECRET]) expect(late.logs.text()).not.toContain(secret)
  })

  it('a configuration no rotation replaced still says it takes its configured token', async () => {
    const first = sandbox.issueToken()
    await replica({ PLATFORM_TOKEN: first })
    const rolledOut = sandbox.issueToken()
    const c = await replica({ PLATFORM_TOKEN: rolledOut })
    expect(tokenOf(c)).toBe(rolledOut)
    expect(tokenTrail(c)).toEqual([{ reason: 'start', source: 'static', oldFingerprint: null, newFingerprint: fp(rolledOut), origin: 'start', actor: null }])
  })

  const gate = () => redisGate(redis.port, cleanups)

  it('started while Redis is out of reach with the replaced token file: it uses and says the configured token, then takes the stored one and says so', async () => {
    const first = sandbox.issueToken()
    const a = await replica({ PLATFORM_TOKEN: first })
    const next = sandbox.issueToken()
    expect((await put(a, next)).statusCode).toBe(200)
    await waitFor('the rotation stored', async () => (await storedFingerprint()) === fp(next))

    const way = await gate()
    const late = await replica({ PLATFORM_TOKEN_FILE: tokenFile(first), REDIS_URL: way.url }, FILE_POLL_YAML)
    expect(tokenOf(late), 'without Redis, its configured token').toBe(first)
    expect(tokenTrail(late)).toEqual([{ reason: 'start', source: 'file', oldFingerprint: null, newFingerprint: fp(first), origin: 'start', actor: null }])
    way.open()
    await waitFor('the late replica takes the rotation', () => tokenOf(late) === next)
    expect(tokenTrail(late)).toEqual([
      { reason: 'start', source: 'file', oldFingerprint: null, newFingerprint: fp(first), origin: 'start', actor: null },
      { reason: 'shared', source: 'shared', oldFingerprint: fp(first), newFingerprint: fp(next), origin: 'admin', actor: 'admin' },
    ])
    expect(tokenOf(a)).toBe(next)
    expect(await storedFingerprint()).toBe(fp(next))
    for (const secret of [first, next, GATEWAY_SECRET]) expect(late.logs.text()).not.toContain(secret)
  })
})
