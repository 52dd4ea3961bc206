import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, listen, REPORT_PATH, TEAMS_YAML, teamsYamlWith, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { onRealTimers } from '../helpers/clock.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { useReceivers } from '../helpers/webhook-receiver.js'

// Report jobs shared by two replicas (in this process) on one real redis-server: a job
// asked on one is read, waited for and fetched on the other, and identical jobs asked on
// both join one platform call.

const { available } = redisAvailability('the report jobs across replicas')
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'
const WEBHOOK_SECRET = 'whsec_c2tld2VkLWNsb2NrLXRlc3Qtc2VjcmV0LTAxMjM0NQ=='
// Another team's: each team's deliveries are signed with a key of its own.
const OTHER_WEBHOOK_SECRET = `whsec_${Buffer.from('skewed-clock-test-secret-other').toString('base64')}`

describe.skipIf(!available)('report jobs across replicas (one Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const gateways = useGateways()
  const receivers = useReceivers()
  afterEach(() => sandbox.releaseHeld())

  const config = (token: string) => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token, REDIS_URL: redis.url }, teamsYamlWith({ jobs: { poll: '100ms' } }))

  async function replicas(): Promise<[TestGateway & { url: string }, TestGateway & { url: string }]> {
    const token = sandbox.issueToken()
    const one = await listen(await gateways.build(config(token)))
    const two = await listen(await gateways.build(config(token)))
    sandbox.clearRequests()
    return [one, two]
  }

  const get = (gw: { url: string }, path: string, headers: Record<string, string> = {}, key = KEYS.all) => fetch(`${gw.url}${path}`, { headers: { 'x-api-key': key, ...headers } })

  it('a job asked on one replica is read, waited for and fetched on the other; identical jobs on both make one platform call', async () => {
    const [one, two] = await replicas()
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const first = await get(one, `${REPORT_PATH}?${YEAR}`, { prefer: 'respond-async' })
    expect(first.status).toBe(202)
    const location = first.headers.get('location') as string
    await waitFor('the job at the platform', () => sandbox.countRequests((r) => r.path === REPORT_PATH) === 1)
    const twin = await get(two, `${REPORT_PATH}?${YEAR}`, { prefer: 'respond-async' })
    expect(twin.status).toBe(202)
    const twinLocation = twin.headers.get('location') as string

    const seen = (await (await get(two, location)).json()) as { state: string }
    expect(seen.state).toBe('running')
    const waiting = get(two, `${location}?wait=20`)
    sandbox.releaseHeld()
    expect(((await (await waiting).json()) as { state: string }).state).toBe('done')
    await waitFor('the twin done', async () => ((await (await get(one, twinLocation)).json()) as { state: string }).state === 'done', testTimeLeft(), 20)

    const result = await get(two, `${location}/result`)
    expect(result.status).toBe(200)
    const twinResult = await get(one, `${twinLocation}/result`)
    expect(await twinResult.text()).toBe(await result.text())
    expect(sandbox.countRequests((r) => r.path === REPORT_PATH)).toBe(1)
  })

  // A replica's clock 30 s off, twice jobs.lease: a looker ahead of a job's runner, or a
  // runner behind the looker, would read the runner's lease as run out.
  it.each([
    ['the replica that looks at it is 30 s ahead', 0, 30_000],
    ['the replica that runs it is 30 s behind', -30_000, 0],
  ])('a running job is not taken over when %s: leases are on Redis\' clock', async (_, runnerSkewMs, lookerSkewMs) => {
    const token = sandbox.issueToken()
    const skewed = (ms: number) => (ms === 0 ? {} : { clock: onRealTimers(() => Date.now() + ms) })
    const runner = await listen(await gateways.build(config(token), skewed(runnerSkewMs)))
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const running = await get(runner, `${REPORT_PATH}?${YEAR}`, { prefer: 'respond-async' })
    expect(running.status).toBe(202)
    await waitFor('the job at the platform', () => sandbox.countRequests((r) => r.path === REPORT_PATH) === 1)

    // The looker's own job is due after the running one on the looker's clock: once it is
    // done, the looker has looked past the running job.
    const looker = await listen(await gateways.build(config(token), skewed(lookerSkewMs)))
    const own = await get(looker, `${REPORT_PATH}?advertiserId=102&dateFrom=2025-01-01&dateTo=2025-03-31`, { prefer: 'respond-async' })
    expect(own.status).toBe(202)
    const ownLocation = own.headers.get('location') as string
    await waitFor('the looker\'s own job done', async () => ((await (await get(looker, ownLocation)).json()) as { state: string }).state === 'done', testTimeLeft(), 20)

    sandbox.releaseHeld()
    const location = running.headers.get('location') as string
    await waitFor('the running job done', async () => ((await (await get(looker, location)).json()) as { state: string }).state === 'done', testTimeLeft(), 20)
    expect(looker.logs.records().filter((r) => String(r.msg).startsWith('report job taken over'))).toEqual([])
    const said = (runnerSkewMs === 0 ? looker : runner).logs.records().filter((r) => String(r.msg).startsWith("this replica's clock is"))
    expect(said.map((r) => String(r.msg).replace(/[\d.]+ s/, 'N s'))).toEqual([`this replica's clock is N s ${runnerSkewMs === 0 ? 'ahead of' : 'behind'} Redis': the times replicas share (job leases, webhook claims, announcements, rate-limit windows, token changes, platform pauses) are on Redis' clock; set this machine's time (NTP)`])
    expect(Math.abs(Number(said[0]?.offsetMs) + runnerSkewMs + lookerSkewMs)).toBeLessThan(1000)
    const metrics = (await (runnerSkewMs === 0 ? looker : runner).admin.inject({ method: 'GET', url: '/metrics' })).body
    const offset = Number(/^gateway_redis_clock_offset_seconds (\S+)$/m.exec(metrics)?.[1])
    expect(Math.abs(offset + (runnerSkewMs + lookerSkewMs) / 1000)).toBeLessThan(1)
    expect(sandbox.countRequests((r) => r.path === REPORT_PATH && /advertiserId"?[=:]101\b/.test(r.query + r.body))).toBe(1)
  })

  it('a webhook attempt under way is not made again by a replica whose clock is 30 s ahead: its claim is on Redis\' clock', async () => {
    const [held, own] = [await receivers(0), await receivers(0)]
    // Team `all` pushes to `held`, team `limited` to `own`; the receivers are named `localhost`, which the operator allows.
    const teams = TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${held.url}", secret: "${WEBHOOK_SECRET}" }\n`).replace(
      '    rateLimit: { max: 3, window: 1m }\n',
      `    rateLimit: { max: 3, window: 1m }\n    webhook: { url: "${own.url}", secret: "${OTHER_WEBHOOK_SECRET}" }\n`,
    )
    const yaml = `${teams}jobs:\n  webhookHosts: [localhost]\n  poll: 100ms\n`
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token, REDIS_URL: redis.url }, yaml)
    const token = sandbox.issueToken()
    const one = await listen(await gateways.build(config()))
    held.hold()
    expect((await get(one, `${REPORT_PATH}?${YEAR}`, { prefer: 'respond-async' })).status).toBe(202)
    await waitFor('the attempt held at the receiver', () => held.inFlight() === 1)

    // Its claim holds jobs.webhookTimeout (10 s) plus jobs.lease (15 s): 25 s, less than the
    // 30 s the other clock is ahead. The other replica's own delivery is due after it on
    // that clock: once made, that replica has looked past the held one.
    const ahead = await listen(await gateways.build(config(), { clock: onRealTimers(() => Date.now() + 30_000) }))
    expect((await get(ahead, `${REPORT_PATH}?advertiserId=102&dateFrom=2025-01-01&dateTo=2025-03-31`, { prefer: 'respond-async' }, KEYS.limited)).status).toBe(202)
    own.answer(204)
    await waitFor("the other replica's own delivery made", () => own.hits.length === 1, testTimeLeft(), 20)
    expect([held.most(), held.inFlight()]).toEqual([1, 1])
    held.answer(204)
    await waitFor('the held attempt answered', () => held.hits.length === 1)
    expect(ahead.logs.records().filter((r) => String(r.msg).startsWith('webhook delivery taken over'))).toEqual([])
  })

  // One replica: alone, it fills the seats free at its last answer while Redis is out of
  // reach; beside another, one that held no seat then waits for its even part (docs/governor.md,
  // the outage rule), which a read here must not wait on.
  it('Redis out of reach: a job call is 503 GW_JOBS_UNAVAILABLE, and a read preferring respond-async is answered now', async () => {
    const one = await listen(await gateways.build(config(sandbox.issueToken())))
    const asked = await get(one, `${REPORT_PATH}?advertiserId=102&dateFrom=2025-01-01&dateTo=2025-03-31`, { prefer: 'respond-async' })
    expect(asked.status).toBe(202)
    const location = asked.headers.get('location') as string
    // Its job done and its lease given back: the read below needs a seat it does not hold.
    await waitFor('the job done', async () => ((await (await get(one, location)).json()) as { state: string }).state === 'done', testTimeLeft(), 20)
    const seatsHeld = async () => Number(/^gateway_platform_seats_held\{credential="default"\} (\S+)$/m.exec((await one.admin.inject({ method: 'GET', url: '/metrics' })).body)?.[1])
    await waitFor('no seat held', async () => (await seatsHeld()) === 0, testTimeLeft(), 50)
    await redis.stop()
    try {
      const status = await get(one, location)
      expect(status.status).toBe(503)
      expect(((await status.json()) as { code: string }).code).toBe('GW_JOBS_UNAVAILABLE')
      expect(status.headers.get('retry-after')).toBe('1')
      const now = await get(one, `${REPORT_PATH}?advertiserId=102&dateFrom=2024-01-01&dateTo=2024-03-31`, { prefer: 'respond-async' })
      expect(now.status).toBe(200)
      expect(now.headers.get('preference-applied')).toBeNull()
      await now.arrayBuffer()
    } finally {
      await redis.restart()
    }
  })

  // Either replica may run the job (both look for jobs every 100 ms): the one that asked
  // starts it at once unless the other's look came first, so the run's end is looked for on both.
  it.each([0, 1] as const)('a Redis emptied under a running job (FLUSHALL, a restart without its data): the job is gone, and its run\'s end says so in a warn line (asked on replica %i)', async (asker) => {
    const both = await replicas()
    const one = both[asker]
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const asked = await get(one, `${REPORT_PATH}?${YEAR}`, { prefer: 'respond-async' })
    expect(asked.status).toBe(202)
    const location = asked.headers.get('location') as string
    const id = location.split('/').pop() as string
    await waitFor('the job at the platform', () => sandbox.countRequests((r) => r.path === REPORT_PATH) === 1)
    const client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0 })
    try {
      await client.connect()
      await client.flushall()
    } finally {
      client.disconnect()
    }
    sandbox.releaseHeld()
    const lostRuns = async (gw: TestGateway) => Number(/gateway_report_jobs_total\{outcome="lost"\} (\d+)\n/.exec((await gw.admin.inject({ method: 'GET', url: '/metrics' })).body)?.[1] ?? 0)
    const lost = async () => (await lostRuns(both[0])) + (await lostRuns(both[1]))
    await waitFor('the run ended', async () => (await lost()) > 0, testTimeLeft(), 20)
    expect(await lost()).toBe(1)
    expect((await get(one, location)).status).toBe(404)
    const said = both.flatMap((gw) => gw.logs.records().filter((r) => r.job === id && r.level === 40))
    expect(said.map((r) => r.msg)).toEqual(['report job gone from Redis while it ran (Redis emptied, restarted without its data, or evicting keys without an expiry): its result is dropped; the team asks again'])
    expect(said[0]).toMatchObject({ team: 'all' })
  })
})
