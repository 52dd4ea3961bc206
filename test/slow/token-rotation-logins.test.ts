import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { fingerprint } from '../../src/observe/fingerprint.js'
import { TEAMS_YAML, sandboxLoginEnv, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { onRealTimers } from '../helpers/clock.js'
import { useCleanups, useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { bearerOf, campaignList, tokenOf } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { settled, waitFor } from '../helpers/wait.js'

// Password logins against rotations, across replicas sharing one Redis: a replica that
// starts while a usable shared token exists takes it and does not log in; a login only
// replaces the token it was made for (one that failed or is about to expire), so an
// operator's rotation made meanwhile stays; every change is audited with its actor on
// every replica. Two gateway instances in this process stand for two replicas. The token
// request goes to a token endpoint of this file (it hands out sandbox tokens), which can
// hold a login in flight.

const ADMIN_TOKEN = 'logins-admin-token-0123456789abcdef'
const GATEWAY_SECRET = 'logins-gateway-secret-0123456789ab'
const DAY = 86_400_000

const redisCheck = redisAvailability()

/** A token endpoint handing out sandbox tokens (`ttlSeconds` each); `hold()` keeps the next logins waiting until `release()`. */
interface TokenEndpoint {
  url: string
  /** Token requests received so far. */
  logins: number
  /** Token requests waiting now. */
  waiting: number
  ttlSeconds: number
  hold(): void
  release(): void
  close(): Promise<void>
}

async function tokenEndpoint(issue: (ttlSeconds: number) => string): Promise<TokenEndpoint> {
  let gate: { promise: Promise<void>; open: () => void } | null = null
  const endpoint: TokenEndpoint = {
    url: '',
    logins: 0,
    waiting: 0,
    ttlSeconds: 365 * 86_400,
    hold() {
      let open = () => undefined as void
      const promise = new Promise<void>((resolve) => (open = resolve))
      gate = { promise, open }
    },
    release() {
      gate?.open()
      gate = null
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
  const server: Server = createServer((req, res) => {
    endpoint.logins++
    req.resume()
    req.once('end', () => {
      void (async () => {
        const held = gate
        if (held) {
          endpoint.waiting++
          await held.promise
          endpoint.waiting--
        }
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify({ token_type: 'Bearer', expires_in: endpoint.ttlSeconds, access_token: issue(endpoint.ttlSeconds) }))
      })()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  endpoint.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth/token`
  return endpoint
}

describe.skipIf(!redisCheck.available)('password logins and rotations across replicas (Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const cleanups = useCleanups()
  const gateways = useGateways({
    check: (open) => {
      for (const gw of open) expect(gw.logs.text()).not.toMatch(/redis unavailable|could not be shared/)
    },
  })

  async function endpoint(): Promise<TokenEndpoint> {
    const e = await tokenEndpoint((ttlSeconds) => sandbox.issueToken({ ttlSeconds }))
    cleanups.push(() => e.close())
    return e
  }

  function replicaConfig(tokens: TokenEndpoint) {
    return testConfig({ PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), PLATFORM_TOKEN_URL: tokens.url, ADMIN_TOKEN, REDIS_URL: redis.url, GATEWAY_SECRET }, TEAMS_YAML)
  }

  function replica(tokens: TokenEndpoint, now?: () => number): Promise<TestGateway> {
    return gateways.build(replicaConfig(tokens), now ? { clock: onRealTimers(now) } : {})
  }

  function refresh(gw: TestGateway) {
    return gw.admin.inject({ method: 'POST', url: '/admin/token/refresh', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  }

  function put(gw: TestGateway, token: string) {
    return gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { token } })
  }

  /**
   * That `kept` was each replica's last token before a later one (returned) an operator puts on the
   * last replica: its word goes out after anything that replica published before, and
   * each replica hears that replica's words in order.
   */
  async function expectLastChanges(replicas: TestGateway[], kept: string): Promise<string> {
    const next = sandbox.issueToken()
    expect((await put(replicas.at(-1) as TestGateway, next)).statusCode).toBe(200)
    await waitFor('every replica to take the later token', () => replicas.every((gw) => tokenOf(gw) === next))
    for (const gw of replicas) expect(changes(gw).slice(-2).map((r) => r.newFingerprint)).toEqual([fingerprint(kept, GATEWAY_SECRET), fingerprint(next, GATEWAY_SECRET)])
    return next
  }

  function changes(gw: TestGateway): Record<string, unknown>[] {
    return gw.logs.records().filter((r) => r.msg === 'platform token changed')
  }

  it('a replica that starts while the shared token is usable takes it and makes no login; its audit line names the operator who set it', async () => {
    const tokens = await endpoint()
    const a = await replica(tokens)
    expect(tokens.logins).toBe(1)
    const rotated = sandbox.issueToken()
    expect((await put(a, rotated)).statusCode).toBe(200)

    const b = await replica(tokens)
    expect(tokenOf(b)).toBe(rotated)
    expect(tokens.logins).toBe(1)
    expect(b.tokens.get('default').current()?.source).toBe('shared')
    expect(changes(b)).toEqual([
      expect.objectContaining({ kind: 'audit', reason: 'shared', actor: 'admin', origin: 'admin', originReplica: expect.any(String), oldFingerprint: null, newFingerprint: fingerprint(rotated, GATEWAY_SECRET) }),
    ])
    // The operator's replica names itself as the origin of its own change.
    const own = changes(a).find((r) => r.reason === 'admin')
    expect(own).toMatchObject({ actor: 'admin', origin: 'admin' })
    expect(changes(b)[0]!.originReplica).toBe(own!.originReplica)
    // And A keeps it: B published nothing of its own. B's word of a later put goes out after
    // anything B published at its start, and A hears B's words in order.
    await expectLastChanges([a, b], rotated)
  })

  it('replicas that start together on a Redis holding no token make one login: the others take its token', async () => {
    const tokens = await endpoint()
    // The first start's login waits at the platform while the others start: each finds no
    // token stored and the login lock held.
    tokens.hold()
    const starting = Promise.all([replica(tokens), replica(tokens), replica(tokens)])
    await waitFor('a start login at the platform', () => tokens.waiting === 1)
    tokens.release()
    const [a, b, c] = await settled('the three starts', starting)
    expect(tokens.logins).toBe(1)
    const token = tokenOf(a) as string
    expect([tokenOf(b), tokenOf(c)]).toEqual([token, token])
    // One line a replica: the login on one, the shared token on the others.
    expect([a, b, c].map((gw) => changes(gw).map((r) => r.reason)).sort()).toEqual([['shared'], ['shared'], ['start']])
  })

  it('a replica that starts while the shared token is about to expire logs in, and every replica takes its token', async () => {
    const tokens = await endpoint()
    tokens.ttlSeconds = 86_400
    const a = await replica(tokens)
    const first = tokenOf(a) as string
    // B's clock is two days ahead: the shared token expired a day ago.
    const b = await replica(tokens, () => Date.now() + 2 * DAY)
    expect(tokens.logins).toBe(2)
    const renewed = tokenOf(b) as string
    expect(renewed).not.toBe(first)
    await waitFor('replica A to take the renewed token', () => tokenOf(a) === renewed)
    expect(changes(a).at(-1)).toMatchObject({ reason: 'shared', origin: 'start', actor: null, newFingerprint: fingerprint(renewed, GATEWAY_SECRET) })
  })

  it('a re-login a 401 asked for, still under way when an operator rotates the token, does not undo the rotation', async () => {
    const tokens = await endpoint()
    const a = await replica(tokens)
    const b = await replica(tokens)
    const first = tokenOf(a) as string
    expect(tokenOf(b)).toBe(first)

    // The platform revokes the token; B's next call meets the 401, its probe confirms it, and B logs in again: held.
    sandbox.revokeToken(first)
    tokens.hold()
    const call = campaignList(b)
    await waitFor('B logging in again', () => tokens.waiting === 1)

    // Meanwhile an operator puts a new token in place on A.
    const rotated = sandbox.issueToken()
    expect((await put(a, rotated)).statusCode).toBe(200)
    await waitFor('B to take the rotated token', () => tokenOf(b) === rotated)
    tokens.release()

    // B's call is retried with the token in place, and its late login replaces nothing.
    expect((await call).statusCode).toBe(200)
    expect(bearerOf(sandbox.requests.filter((r) => r.path === '/api/v1/campaign/get').at(-1))).toBe(rotated)
    // The call waited for the late login; whatever that login published went out before B's word of a later put.
    const next = await expectLastChanges([a, b], rotated)
    const late = await replica(tokens)
    expect(tokenOf(late)).toBe(next)
  })

  it("an operator's token that the platform refuses is replaced by a replica's login, on every replica", async () => {
    const tokens = await endpoint()
    const a = await replica(tokens)
    const b = await replica(tokens)
    const rotated = sandbox.issueToken()
    expect((await put(a, rotated)).statusCode).toBe(200)
    await waitFor('B to take the rotated token', () => tokenOf(b) === rotated)

    sandbox.revokeToken(rotated)
    expect((await campaignList(b)).statusCode).toBe(200)
    const renewed = tokenOf(b) as string
    expect(renewed).not.toBe(rotated)
    await waitFor('replica A to take the login that replaced the refused token', () => tokenOf(a) === renewed)
    expect(changes(a).at(-1)).toMatchObject({ reason: 'shared', origin: 'relogin', actor: null, oldFingerprint: fingerprint(rotated, GATEWAY_SECRET), newFingerprint: fingerprint(renewed, GATEWAY_SECRET) })
  })
  // A login lock whose holder never releases it: its release not sent (the circuit opened
  // while the login ran), or a take whose answer came after the command timeout (the lock
  // taken in Redis, the replica logging in alone). Redis goes out of reach in these tests
  // (their lines say so): their gateways are not the file's, whose lines must not.
  describe('a login lock left behind', () => {
    const apart = useGateways()

    it('is not released when the circuit opened during the login: another replica\'s refresh is answered once it lapses', async ({ task }) => {
      const tokens = await endpoint()
      const config = replicaConfig(tokens)
      // Before, the lock lived twice platform.timeout, past this test's timeout: the refresh waited for all of it.
      expect(2 * config.platform.timeoutMs).toBeGreaterThan(task.timeout)
      const a = await apart.build(config)
      const b = await apart.build(config)
      tokens.hold()
      const refreshA = refresh(a)
      await waitFor("A's login at the token endpoint", () => tokens.waiting === 1)
      // A's circuit opens while its login runs (as any of its commands failing opens it): the lock's release is not sent.
      a.redis.breaker?.fail(new Error('Command timed out'))
      tokens.release()
      expect((await settled("A's refresh", refreshA)).statusCode).toBe(200)

      const refreshB = await settled("B's refresh, while A's lock is left behind", refresh(b))
      expect(refreshB.statusCode).toBe(200)
      expect(tokens.logins).toBe(3)
    })

    it('is taken by a command answered after its timeout: a later refresh is answered once it lapses', async ({ task }) => {
      const tokens = await endpoint()
      const config = replicaConfig(tokens)
      expect(2 * config.platform.timeoutMs).toBeGreaterThan(task.timeout)
      const a = await apart.build(config)
      // Redis answers nothing: the take's SET NX waits in its socket past the command timeout,
      // and A logs in alone (Redis out of reach).
      redis.freeze()
      try {
        expect((await settled("A's refresh while Redis is frozen", refresh(a))).statusCode).toBe(200)
      } finally {
        redis.thaw()
      }
      // Redis runs the SET once it runs again: the lock is held by an owner no replica knows.
      // A's next command answered on that connection proves it ran (Redis answers a
      // connection in order); the one that closes A's circuit does.
      await waitFor("A's circuit to close", async () => {
        await a.redis.breaker?.run(async () => a.redis.client?.ping(), null)
        return a.redis.breaker?.state === 'closed'
      })

      expect((await settled("A's second refresh, while the lock is left behind", refresh(a))).statusCode).toBe(200)
      expect(tokens.logins).toBe(3)
    })
  })
})
