import { describe, expect, it } from 'vitest'
import { KEYS, TEAMS_YAML, sandboxLoginEnv, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { tokenOf } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// The account a replica gives a token another replica shared with it through Redis: a
// password login's replica that takes the token of a rollout to another configuration
// (another login, a static token of another customer) acts for that token's account, not
// its login's, so that neither its login's copies answer the new account's reads nor the
// new account's answers are kept as its login's. Session 104's
// test/attacks/credential-account.test.ts holds the same for a token an operator put.

const { available } = redisAvailability()

const SECRET = 'credential-account-rollout-secret-000000'
const ADMIN_TOKEN = 'credential-account-rollout-admin-tok-0123'
// A settled week of Acme's advertiser 101 (account 100's child); account 200 may not read it (403).
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&byCampaign=1&dateFrom=2026-01-01&dateTo=2026-01-07'
const REPORT_PATH = '/api/v1/report/campaigns/get'
const STORE_KEY = 'rgw:token:default'
// A replica whose maintenance tick stores its token again soon after Redis lost it.
const TICKING = `${TEAMS_YAML}\nplatform:\n  maintenanceInterval: 200ms\n`

type Injecting = { inject: (o: object) => Promise<{ statusCode: number; headers: Record<string, unknown>; body: string }> }
const read = (gw: { proxy: Injecting }) => gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })
const outcome = (res: { statusCode: number; headers: Record<string, unknown>; body: string }) => ({ status: res.statusCode, cache: res.headers['x-cache'], acme: res.body.includes('101001') })

describe.skipIf(!available)('a password login\'s replica taking a token shared by a replica of another configuration', () => {
  const sandbox = useSandbox()
  const { server, client } = useRedis()
  const gateways = useGateways()

  const start = (env: Record<string, string>, yaml?: string) => gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, REDIS_URL: server.url, GATEWAY_SECRET: SECRET, ADMIN_TOKEN, ...env }, yaml))
  /** The configuration the stored record says its token was made on (its `base`, a plain field the GCM tag authenticates). */
  const storedBase = async () => {
    const raw = await client.get(STORE_KEY)
    return raw === null ? null : (JSON.parse(raw) as { base: string }).base
  }
  /** Redis loses the token record; the base of the record a running replica's maintenance tick stores again. */
  const lostAndStoredAgain = async () => {
    await client.del(STORE_KEY)
    await waitFor('the record stored again', async () => (await storedBase()) !== null)
    return storedBase()
  }
  const reportCalls = () => sandbox.countRequests((r) => r.path === REPORT_PATH)
  /**
   * Every replica given holds the token Redis holds (by fingerprint, the record's plain
   * field): each has acted on the last record stored. A replica hears a record stored only
   * as an announcement on pub/sub, and the rollout's replica answers a login's start record
   * by storing again or taking: until then what a starter holds is not yet settled.
   */
  const allHoldStored = async (...gws: Parameters<typeof tokenOf>[0][]) => {
    const raw = await client.get(STORE_KEY)
    const stored = raw === null ? null : (JSON.parse(raw) as { fingerprint: string }).fingerprint
    return gws.every((gw) => gw.tokens.get('default').current()?.fingerprint === stored)
  }

  it('gives a token a rollout of another configuration shared with a password login\'s replica that token\'s own account, not the login\'s', async () => {
    // A replica logged in as the sandbox's demo user (account 100) fills the week.
    const login = await start(sandboxLoginEnv(sandbox))
    expect(outcome(await read(login))).toEqual({ status: 200, cache: 'MISS', acme: true })
    expect(outcome(await read(login))).toEqual({ status: 200, cache: 'HIT', acme: true })
    const before = login.reports.accountOf('default')
    // A replica of the credential rolled out with account 200's token starts on the same
    // Redis: its token replaces the stored one on every replica, the login's among them.
    const northwind = sandbox.issueToken({ accountId: 200 })
    await start({ PLATFORM_TOKEN: northwind })
    await waitFor('the login\'s replica took the rolled-out token', () => login.tokens.get('default').current()?.token === northwind)
    sandbox.clearRequests()
    // The platform's answer to account 200 (403), not the login's copy (on main: 200, HIT,
    // account 100's rows: the login's replica kept its login's account for any token but
    // one an operator put).
    expect(outcome(await read(login))).toEqual({ status: 403, cache: 'BYPASS', acme: false })
    expect(login.reports.accountOf('default')).not.toBe(before)
    expect(reportCalls()).toBe(1)
  })

  // Redis lost the token record (a restart without data, a flush, a failover to an empty
  // replica) while a login's replica held a token a rollout of another configuration had
  // shared: that replica stores it again as the rollout made it, not as its login's, so a
  // replica of the login that starts after does what it would have done had Redis kept the
  // record (logs in: the stored token is another configuration's), and never answers its
  // login's copies with account 200's token.
  it('stores a rolled-out token again, after Redis lost its record, as made on the rollout\'s configuration, not on the login of the replica that held it', async () => {
    const login = await start(sandboxLoginEnv(sandbox), TICKING)
    expect(outcome(await read(login))).toEqual({ status: 200, cache: 'MISS', acme: true })
    const northwind = sandbox.issueToken({ accountId: 200 })
    const rollout = await start({ PLATFORM_TOKEN: northwind })
    await waitFor('the login\'s replica took the rolled-out token', () => tokenOf(login) === northwind)
    const rolledOutBase = await storedBase()
    expect(rolledOutBase).toMatch(/^static:/)
    // The login's replica (its maintenance tick) stores what it holds again.
    expect(await lostAndStoredAgain()).toBe(rolledOutBase)
    // A second replica of the login starts: the stored token is another configuration's,
    // so it logs in (on main it took account 200's token as its login's: 200 HIT, account
    // 100's rows, where the platform answers account 200 with 403).
    sandbox.clearRequests()
    const second = await start(sandboxLoginEnv(sandbox))
    // Its login stored, the running replicas hear it (pub/sub) and act on it: the rollout's
    // replica stores its token above the start of a static token or file its token
    // replaced, and takes a login's (on main it stored it above this login's start too, and
    // every replica, this one among them, took account 200's token back, after this line
    // read the second's token or before it: the test was flaky). What the second holds is
    // settled once every replica holds the stored token.
    await waitFor('every replica to hold the stored token', () => allHoldStored(login, rollout, second))
    const held = tokenOf(second) === northwind ? 'northwind' : 'login'
    expect({ held, ...outcome(await read(second)) }).toEqual({ held: 'login', status: 200, cache: 'HIT', acme: true })
    expect(sandbox.countRequests((r) => r.path === '/oauth/token')).toBe(1)
  })

  // Redis kept the record: a login's replica started after the rollout that replaced its
  // login (the rollout rolled back) logs in, and its token replaces the
  // rollout's on every replica. The rollout's replica, whose record names the login among
  // the configurations it replaced, does not store its token above that login's start as
  // above a static token's: a login takes a stored token made on its own login alone.
  it('lets a login the rollout replaced roll out again over the rollout\'s token', async () => {
    const login = await start(sandboxLoginEnv(sandbox))
    expect(outcome(await read(login))).toEqual({ status: 200, cache: 'MISS', acme: true })
    const northwind = sandbox.issueToken({ accountId: 200 })
    const rollout = await start({ PLATFORM_TOKEN: northwind })
    await waitFor('the login\'s replica took the rolled-out token', () => tokenOf(login) === northwind)
    sandbox.clearRequests()
    const second = await start(sandboxLoginEnv(sandbox))
    await waitFor('every replica to hold the stored token', () => allHoldStored(login, rollout, second))
    const held = [login, rollout, second].map((gw) => (tokenOf(gw) === northwind ? 'northwind' : 'login'))
    expect({ held, ...outcome(await read(second)) }).toEqual({ held: ['login', 'login', 'login'], status: 200, cache: 'HIT', acme: true })
    expect(sandbox.countRequests((r) => r.path === '/oauth/token')).toBe(1)
  })

  // The other way round: a replica of a static token holding a login's token (the login
  // rolled out over it) stores it again as the login's, so a replica of that login starting
  // after takes it as its own login's, no login, its copies its login's.
  it('stores a login\'s token again, held by a replica of another configuration, as made on that login', async () => {
    const northwind = sandbox.issueToken({ accountId: 200 })
    const other = await start({ PLATFORM_TOKEN: northwind }, TICKING)
    const login = await start(sandboxLoginEnv(sandbox))
    expect(outcome(await read(login))).toEqual({ status: 200, cache: 'MISS', acme: true })
    const loginToken = tokenOf(login)
    await waitFor('the static replica took the login\'s token', () => tokenOf(other) === loginToken)
    const loginBase = await storedBase()
    expect(loginBase).toMatch(/^login:/)
    expect(await lostAndStoredAgain()).toBe(loginBase)
    sandbox.clearRequests()
    const second = await start(sandboxLoginEnv(sandbox))
    expect(tokenOf(second)).toBe(loginToken)
    expect(outcome(await read(second))).toEqual({ status: 200, cache: 'HIT', acme: true })
    expect(sandbox.countRequests((r) => r.path === '/oauth/token')).toBe(0)
  })
})
