import { createCipheriv, createHash, randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { fingerprint } from '../../src/observe/fingerprint.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { NonceSource } from '../../src/redis/seen-nonces.js'
import { TEAMS_YAML, credentialTeams, sandboxLoginEnv, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { credentialCount, tokenOf } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// The fields next to the ciphertext of a stored token record
// (version, fingerprint, base, times) and the key it is stored under are authenticated
// with the token (AES-GCM associated data). Someone with write access to Redis but
// without GATEWAY_SECRET writes records directly here, as that attacker would: an altered
// record, one moved to another credential's key, or a replay of an old one must never
// become the token of a replica, nor stop the next genuine rotation from being shared.

const ADMIN_TOKEN = 'integrity-admin-token-0123456789abcdef'
const GATEWAY_SECRET = 'integrity-gateway-secret-0123456789'
const DEFAULT_KEY = 'rgw:token:default'
const PARTNER_KEY = 'rgw:token:partner'
const CHANNEL = 'rgw:bus:token'
const CREDENTIALS_YAML = credentialTeams('partner')
// A record's `base` names the configuration by its plain SHA-256 prefix, as records written before fingerprints were keyed do.
const configDigest = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12)

type StoredRecord = Record<string, unknown> & { version: number }

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)

describe.skipIf(!redisCheck.available)('stored token record integrity (Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis, client } = useRedis()
  /** Every token a test used, checked against every log line at the end of it. */
  const secrets: string[] = []
  const gateways = useGateways({
    check: (open) => {
      const used = [...secrets.splice(0), ADMIN_TOKEN, GATEWAY_SECRET]
      // Checked before closing: an announcement still on its way when a gateway closes fails, and says so.
      for (const gw of open) {
        // A forged record must neither open the Redis circuit nor stop a write.
        expect(gw.logs.text()).not.toMatch(/redis unavailable|could not be shared/)
        for (const secret of used) expect(gw.logs.text()).not.toContain(secret)
      }
    },
  })

  function token(): string {
    const t = sandbox.issueToken()
    secrets.push(t)
    return t
  }

  function replica(env: Record<string, string>, yaml = TEAMS_YAML): Promise<TestGateway> {
    return gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, ADMIN_TOKEN, REDIS_URL: redis.url, GATEWAY_SECRET, ...env }, yaml))
  }

  function put(gw: TestGateway, t: string) {
    return gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { token: t } })
  }

  /** The stored record; null when there is none, or while it is not JSON (garbage a test wrote, not yet written over). */
  async function stored(key = DEFAULT_KEY): Promise<StoredRecord | null> {
    const raw = await client.get(key)
    try {
      return raw ? (JSON.parse(raw) as StoredRecord) : null
    } catch {
      return null
    }
  }

  /** The stored record once it holds the token with this fingerprint (at most 1 s). */
  async function storedOnce(fp: string, key = DEFAULT_KEY): Promise<StoredRecord> {
    let record = await stored(key)
    await waitFor(`the stored record to hold ${fp}`, async () => (record = await stored(key))?.fingerprint === fp)
    return record as StoredRecord
  }

  /**
   * What an attacker with Redis write access does: write the record, then announce it.
   * The attacker's announcement is refused (no seal, see test/attacks/redis-writer.test.ts);
   * a replica's next announcement (sealed here as a replica would, with a nonce of its own) makes the others read
   * the record all the same, which must still be refused. Returns once every replica running
   * has acted on that announcement (gateway_platform_token_announcements_total).
   */
  async function forge(record: unknown, key = DEFAULT_KEY, credential = 'default'): Promise<void> {
    const running = [...gateways.open]
    const actedOn = () => Promise.all(running.map((gw) => credentialCount(gw, 'gateway_platform_token_announcements_total', credential)))
    const before = await actedOn()
    await client.set(key, typeof record === 'string' ? record : JSON.stringify(record))
    const announcement = JSON.stringify({ credential })
    await client.publish(CHANNEL, announcement)
    await client.publish(CHANNEL, new RedisSeal(GATEWAY_SECRET).sealText(CHANNEL, `${Date.now()}.${new NonceSource().next()}.${announcement}`))
    await waitFor('every replica to act on the announcement of the forged record', async () => (await actedOn()).every((n, i) => n > (before[i] ?? 0)))
  }

  function rejectedLines(gw: TestGateway): Record<string, unknown>[] {
    return gw.logs.records().filter((r) => /cannot be decrypted/.test(String(r.msg)))
  }

  /** Two replicas on one token, then a rotation on A that B took: the records before and after it. */
  async function rotatedOnTwoReplicas() {
    const first = token()
    const a = await replica({ PLATFORM_TOKEN: first })
    const b = await replica({ PLATFORM_TOKEN: first })
    const old = await storedOnce(fingerprint(first, GATEWAY_SECRET))
    const next = token()
    expect((await put(a, next)).statusCode).toBe(200)
    const current = await storedOnce(fingerprint(next, GATEWAY_SECRET))
    await waitFor('replica B to take the new token', () => tokenOf(b) === next)
    return { first, a, b, old, next, current }
  }

  it('an old record with its version raised is ignored with one warn line, and the next rotation is still shared', async () => {
    const { a, b, old, next, current } = await rotatedOnTwoReplicas()

    await forge({ ...old, version: current.version + 1_000_000 })
    expect([tokenOf(a), tokenOf(b)]).toEqual([next, next])
    const lines = rejectedLines(b)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ level: 40, credential: 'default' })

    // The forged version is higher than any genuine one: it must not keep the next rotation out.
    const third = token()
    expect((await put(a, third)).statusCode).toBe(200)
    await waitFor('replica B to take the rotation made after the forgery', () => tokenOf(b) === third)
    expect(await storedOnce(fingerprint(third, GATEWAY_SECRET))).toMatchObject({ version: a.tokens.get('default').current()?.version })
  })

  it("a late replica ignores a record whose fingerprint was rewritten and stores its own token; the running replica's rotation on top of that configuration is stored again above it", async () => {
    const first = token()
    const a = await replica({ PLATFORM_TOKEN: first })
    const next = token()
    expect((await put(a, next)).statusCode).toBe(200)
    const record = await storedOnce(fingerprint(next, GATEWAY_SECRET))
    // The configuration's identity is the plain digest records were always written with: a stored rotation survives an upgrade.
    expect(record.base).toBe(`static:${configDigest(first)}`)
    await forge({ ...record, fingerprint: fingerprint('someone-else', GATEWAY_SECRET) })

    const late = await replica({ PLATFORM_TOKEN: first })
    expect(rejectedLines(late)).toHaveLength(1)
    // A forged record undoes no rotation: the late replica's start is of the configuration A's rotation replaced.
    await waitFor('the late replica takes the rotation', () => tokenOf(late) === next)
    expect(tokenOf(a)).toBe(next)
    expect(await storedOnce(fingerprint(next, GATEWAY_SECRET))).toMatchObject({ version: a.tokens.get('default').current()?.version })
  })

  it('a record whose base was rewritten to match a newly rolled-out token does not replace that token', async () => {
    const first = token()
    const a = await replica({ PLATFORM_TOKEN: first })
    expect((await put(a, token())).statusCode).toBe(200)
    const rolledOut = token()
    const record = await stored()
    // The attacker makes the old rotation look as if it had been made on top of the new configuration.
    await forge({ ...record, base: `static:${configDigest(rolledOut)}` })

    const fresh = await replica({ PLATFORM_TOKEN: rolledOut })
    expect(tokenOf(fresh)).toBe(rolledOut)
    expect(rejectedLines(fresh)).toHaveLength(1)
  })

  it("one credential's record copied to another credential's key is ignored", async () => {
    const env = { PLATFORM_TOKEN: token(), CREDENTIAL_PARTNER_TOKEN: token() }
    const a = await replica(env, CREDENTIALS_YAML)
    const b = await replica(env, CREDENTIALS_YAML)
    const partnerToken = tokenOf(b, 'partner')
    // A rotation of the default credential: its record carries a newer version than the partner's.
    const next = token()
    expect((await put(a, next)).statusCode).toBe(200)
    const record = await storedOnce(fingerprint(next, GATEWAY_SECRET))
    expect(record.version).toBeGreaterThan((await stored(PARTNER_KEY))?.version ?? Infinity)

    await forge(record, PARTNER_KEY, 'partner')
    expect(tokenOf(b, 'partner')).toBe(partnerToken)
    expect(tokenOf(a, 'partner')).toBe(partnerToken)
    expect(rejectedLines(b)).toEqual([expect.objectContaining({ level: 40, credential: 'partner' })])
    const late = await replica(env, CREDENTIALS_YAML)
    expect(tokenOf(late, 'partner')).toBe(partnerToken)
  })

  it('a replay of an old record with its own version does not replace the newer token, and the newer record is written back', async () => {
    const { first, a, b, old, next, current } = await rotatedOnTwoReplicas()

    await forge(old)
    expect([tokenOf(a), tokenOf(b)]).toEqual([next, next])
    // The replay is authentic, only stale: no warn line, but the replicas that hold the
    // newer token put it back, so a replica that starts now does not take the old one.
    expect(rejectedLines(b)).toEqual([])
    await waitFor('the newer record written back', async () => (await stored())?.version === current.version)
    const late = await replica({ PLATFORM_TOKEN: first })
    expect(tokenOf(late)).toBe(next)
  })

  it('garbage in the record (no JSON, a version that is not a number) neither opens the Redis circuit nor blocks a write', async () => {
    const first = token()
    const a = await replica({ PLATFORM_TOKEN: first })
    const record = await storedOnce(fingerprint(first, GATEWAY_SECRET))
    for (const garbage of ['not json', JSON.stringify(42), JSON.stringify({ ...record, version: 'soon' })]) {
      await forge(garbage)
      const next = token()
      expect((await put(a, next)).statusCode).toBe(200)
      expect(await storedOnce(fingerprint(next, GATEWAY_SECRET))).toMatchObject({ version: a.tokens.get('default').current()?.version })
    }
    expect(a.redis.breaker?.state).toBe('closed')
  })

  it('a record of the previous format (no associated data) is treated as absent: the replica uses and stores its own token', async () => {
    const previous = token()
    const own = token()
    // Format 1, as the code before this fix wrote it: only the token authenticated.
    const key = createHash('sha256').update(`report-gateway token store\0${GATEWAY_SECRET}`).digest()
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', key, iv)
    const data = Buffer.concat([cipher.update(previous, 'utf8'), cipher.final()])
    const now = Date.now()
    await client.set(
      DEFAULT_KEY,
      JSON.stringify({
        v: 1,
        iv: iv.toString('base64'),
        tag: cipher.getAuthTag().toString('base64'),
        data: data.toString('base64'),
        version: now + 3_600_000,
        base: `static:${configDigest(own)}`,
        fingerprint: fingerprint(previous, GATEWAY_SECRET),
        obtainedAt: now,
        expiresAt: now + 86_400_000,
      }),
    )

    const gw = await replica({ PLATFORM_TOKEN: own })
    expect(tokenOf(gw)).toBe(own)
    expect(rejectedLines(gw)).toEqual([])
    expect(await storedOnce(fingerprint(own, GATEWAY_SECRET))).toMatchObject({ v: 3, version: gw.tokens.get('default').current()?.version })
  })

  it('a record whose rank or origin was rewritten (a basis raised, an operator named) is ignored, and the next rotation is still shared', async () => {
    const { a, b, next, current } = await rotatedOnTwoReplicas()
    expect(current).toMatchObject({ v: 3, basis: current.version, origin: { reason: 'admin', actor: 'admin', replica: expect.any(String) } })

    await forge({ ...current, basis: current.version + 1_000_000 })
    await forge({ ...current, origin: { ...(current.origin as object), actor: 'someone-else' } })
    expect([tokenOf(a), tokenOf(b)]).toEqual([next, next])
    expect(rejectedLines(b).length).toBeGreaterThanOrEqual(1)

    const third = token()
    expect((await put(a, third)).statusCode).toBe(200)
    await waitFor('replica B to take the rotation made after the forgery', () => tokenOf(b) === third)
  })

  it('a record of format 2 (written before origins were kept) is still read: a password-login replica started on it takes the rotation and makes no login', async () => {
    const rotated = token()
    const key = createHash('sha256').update(`report-gateway token store\0${GATEWAY_SECRET}`).digest()
    const iv = randomBytes(12)
    const now = Date.now()
    const fields = { v: 2, version: now, base: 'login', fingerprint: fingerprint(rotated, GATEWAY_SECRET), obtainedAt: now, expiresAt: now + 30 * 86_400_000 }
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: 16 })
    cipher.setAAD(Buffer.from(JSON.stringify([2, DEFAULT_KEY, fields.version, fields.base, fields.fingerprint, fields.obtainedAt, fields.expiresAt]), 'utf8'))
    const data = Buffer.concat([cipher.update(rotated, 'utf8'), cipher.final()])
    await client.set(DEFAULT_KEY, JSON.stringify({ ...fields, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') }))
    sandbox.clearRequests()

    const gw = await replica(sandboxLoginEnv(sandbox))
    expect(tokenOf(gw)).toBe(rotated)
    expect(rejectedLines(gw)).toEqual([])
    expect(sandbox.countRequests((r) => r.path === '/oauth/token')).toBe(0)
  })
})
