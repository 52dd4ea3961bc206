import { describe, expect, it, onTestFinished } from 'vitest'
import { KEYS, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A fill under way (its call held at the platform's front) when the credential's token
// changes to another account's: a read that arrives after the change, on this replica or
// on another one sharing the Redis once it took the new token, joins no fill asked for the
// account before. It is answered what the platform answers the account the credential acts
// for now (its own call), and so is a conditional read naming the copy of the account
// before: no 304. Every place a read joins a fill is keyed by the cache key, which holds the
// account of the read's decision (docs/decisions/credential-account-keys.md); these pass
// on main and hold it.

const { available } = redisAvailability()

const SECRET = 'credential-account-fills-test-secret-0000'
// A settled week of Acme's advertiser 101 (account 100's child); account 200 may not read it (403).
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&byCampaign=1&dateFrom=2026-01-01&dateTo=2026-01-07'
const REPORT_PATH = '/api/v1/report/campaigns/get'

type Answer = { statusCode: number; headers: Record<string, unknown>; body: string }
const read = (gw: { proxy: { inject: (o: object) => Promise<Answer> } }, headers: Record<string, string> = {}) => gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all, ...headers } })
const outcome = (res: Answer) => ({ status: res.statusCode, cache: res.headers['x-cache'], acme: res.body.includes('101001') })

describe.skipIf(!available)('a fill under way when the credential changes account', () => {
  const sandbox = useSandbox()
  const { server } = useRedis()
  const gateways = useGateways()

  const start = () => gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, REDIS_URL: server.url, GATEWAY_SECRET: SECRET, PLATFORM_TOKEN: sandbox.issueToken() }))
  const reportCalls = () => sandbox.countRequests((r) => r.path === REPORT_PATH)
  /** Account 100's read of REPORT on `gw`, its call held at the platform. */
  async function heldRead(gw: Parameters<typeof read>[0]): Promise<{ answer: Promise<Answer> }> {
    onTestFinished(() => sandbox.releaseHeld())
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const answer = read(gw)
    await waitFor('the fill held at the platform', () => sandbox.concurrency().held === 1)
    return { answer }
  }
  /** A read arriving now, answered while account 100's call is still held (joined to that fill, it would wait for it). */
  async function answeredAside(gw: Parameters<typeof read>[0], headers: Record<string, string> = {}): Promise<Answer> {
    let answer: Answer | null = null
    void read(gw, headers).then((a) => (answer = a))
    await waitFor('the read answered while the fill of account 100 is held', () => answer !== null)
    return answer as unknown as Answer
  }

  it('answers a read arriving after the change on the same replica account 200\'s answer, not the fill of account 100, and a conditional read of account 100\'s copy no 304', async () => {
    const gw = await start()
    const filling = await heldRead(gw)
    gw.tokens.get('default').replace(sandbox.issueToken({ accountId: 200 }))
    expect(outcome(await answeredAside(gw))).toEqual({ status: 403, cache: 'BYPASS', acme: false })
    sandbox.releaseHeld()
    // The fill asked for account 100 answers its caller and is kept as account 100's.
    const filled = await filling.answer
    expect(outcome(filled)).toEqual({ status: 200, cache: 'MISS', acme: true })
    expect(outcome(await read(gw, { 'if-none-match': filled.headers.etag as string }))).toEqual({ status: 403, cache: 'BYPASS', acme: false })
    expect(reportCalls()).toBe(3)
  })

  it('answers a read arriving after the change on another replica account 200\'s answer, not the fill it would wait for through Redis', async () => {
    const leader = await start()
    const other = await start()
    const filling = await heldRead(leader)
    const before = other.reports.accountOf('default')
    // The change made on the leader reaches the other replica through Redis.
    leader.tokens.get('default').replace(sandbox.issueToken({ accountId: 200 }))
    await waitFor('the other replica took the new token', () => other.reports.accountOf('default') !== before)
    expect(outcome(await answeredAside(other))).toEqual({ status: 403, cache: 'BYPASS', acme: false })
    sandbox.releaseHeld()
    expect(outcome(await filling.answer)).toEqual({ status: 200, cache: 'MISS', acme: true })
    expect(reportCalls()).toBe(2)
  })
})
