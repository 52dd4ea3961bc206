import { describe, expect, it } from 'vitest'
import { KEYS, listen, REPORT_PATH, testConfig, TEAMS_YAML, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// shared-fill-queue.test.ts across replicas: a team that holds its own seats busy on one
// replica asks first the report another team reads on another replica. The other replica
// waits for the fill of the one that holds its lock; that fill waits for a seat of the
// waiting team too. Team `all` is held to one call in flight; growth reads advertiser 101 too.

const { available } = redisAvailability('a shared fill across replicas')
const BUSY = 'advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-07'
const SHARED = 'advertiserId=101&dateFrom=2026-04-01&dateTo=2026-04-07'

describe.skipIf(!available)('a report fill led on one replica, waited for on another', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const gateways = useGateways()

  it('is sent on a seat of the team waiting on the other replica, while the leading team\'s seats are busy', async () => {
    const token = sandbox.issueToken()
    const yaml = TEAMS_YAML.replace('    refresh: true\n  growth:', '    refresh: true\n    maxConcurrent: 1\n  growth:')
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token, REDIS_URL: redis.url }, yaml)
    const [one, two] = [await listen(await gateways.build(config())), await listen(await gateways.build(config()))]
    sandbox.clearRequests()
    const sent = (query: string) => sandbox.requests.some((r) => r.query === query)
    const get = (gw: { url: string }, query: string, key: string) => fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': key } }).then((res) => res.status)
    sandbox.setFailure({ kind: 'held' })
    const answers: Promise<number>[] = []
    try {
      answers.push(get(one, BUSY, KEYS.all))
      await waitFor('the busy call at the platform', () => sent(BUSY))
      answers.push(get(one, SHARED, KEYS.all))
      await waitFor('all\'s read of the shared report queued on replica one', () => one.governors.views().some((g) => g.queued > 0))
      answers.push(get(two, SHARED, KEYS.growth))
      await waitFor('the shared report sent while all\'s call is still held', () => sent(SHARED))
      expect(sent(BUSY)).toBe(true)
    } finally {
      sandbox.setFailure({ kind: 'none' })
      sandbox.releaseHeld()
    }
    expect(await Promise.all(answers)).toEqual([200, 200, 200])
    expect(sandbox.requests.filter((r) => r.query === SHARED)).toHaveLength(1)
  })

  it('once the caller that started it left, is counted for the team on the other replica whose seat it is sent on, not the team that left', async () => {
    const token = sandbox.issueToken()
    const yaml = TEAMS_YAML.replace('    refresh: true\n  growth:', '    refresh: true\n    maxConcurrent: 1\n  growth:').replace('    advertisers: [101, 102]\n', '    advertisers: [101, 102]\n    maxConcurrent: 1\n')
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token, REDIS_URL: redis.url }, yaml)
    const [one, two] = [await listen(await gateways.build(config())), await listen(await gateways.build(config()))]
    sandbox.clearRequests()
    const sent = (query: string) => sandbox.requests.some((r) => r.query === query)
    const get = (gw: { url: string }, query: string, key: string, signal?: AbortSignal) => fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': key }, ...(signal ? { signal } : {}) })
    const queued = () => one.governors.views().reduce((n, g) => n + g.queued, 0)
    const teamCalls = async (gw: TestGateway, team: string) => Number(new RegExp(`gateway_team_platform_calls_total\\{team="${team}"\\} (\\d+)`).exec((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body)?.[1] ?? 0)
    const BUSY_GROWTH = 'advertiserId=102&dateFrom=2026-03-01&dateTo=2026-03-07'
    sandbox.setFailure({ kind: 'held' })
    const busy: Promise<Response>[] = []
    let shared: Promise<Response> | undefined
    try {
      // Both teams' one seat busy on replica one.
      busy.push(get(one, BUSY, KEYS.all), get(one, BUSY_GROWTH, KEYS.growth))
      await waitFor('both busy calls at the platform', () => sent(BUSY) && sent(BUSY_GROWTH))
      const leaves = new AbortController()
      const started = get(one, SHARED, KEYS.all, leaves.signal).catch(() => null)
      await waitFor('all\'s read of the shared report queued on replica one', () => queued() === 1)
      shared = get(two, SHARED, KEYS.growth)
      await waitFor('the fill waiting in growth\'s queue too', () => queued() === 2)
      leaves.abort()
      await started
      await waitFor('all\'s place given up', () => queued() === 1)
    } finally {
      sandbox.setFailure({ kind: 'none' })
      sandbox.releaseHeld()
    }
    expect((await shared!).status).toBe(200)
    expect((await Promise.all(busy)).map((r) => r.status)).toEqual([200, 200])
    expect(sandbox.requests.filter((r) => r.query === SHARED)).toHaveLength(1)
    expect([await teamCalls(one, 'all'), await teamCalls(one, 'growth')]).toEqual([1, 2])
  })
})
