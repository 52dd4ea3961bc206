import { describe, expect, it } from 'vitest'
import { closeAfterTest, composeGateway, KEYS, REPORT_PATH, teamsYamlWith, testConfig, TEST_GATEWAY_SECRET, type TestGateway } from '../helpers/build-gateway.js'
import { useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A replica listens before its job runner starts (compose.ts: bind, the token shared, the
// bus subscribed, then the runner; main.ts binds the proxy listener, then the admin one):
// a caller may ask a job in between. The runner looks at no job before its start, which
// looks at once: a job asked in that window runs when the start ends, whatever the
// runner's next look (here none comes for an hour: jobs.poll and jobs.lease), and a start
// whose bind then fails claims no job, its own or another replica's.

const { available } = redisAvailability()
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'

describe.skipIf(!available)('a job asked between listening and the runner\'s start', () => {
  const sandbox = useSandbox()
  const { server } = useRedis()

  const started = async (gw: TestGateway): Promise<number> => {
    const text = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    return Number(/^gateway_report_jobs_total\{outcome="started"\} (\d+)$/m.exec(text)?.[1] ?? 0)
  }

  const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: server.url, GATEWAY_SECRET: TEST_GATEWAY_SECRET }, teamsYamlWith({ jobs: { perReplica: 1, poll: '1h', lease: '1h' } }))

  const ask = async (gw: TestGateway, query = YEAR): Promise<string> => {
    const asked = await gw.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${query}`, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.statusCode).toBe(202)
    return (asked.json() as { id: string }).id
  }

  const state = async (gw: TestGateway, id: string): Promise<string> => ((await gw.proxy.inject({ method: 'GET', url: `/api/v1/jobs/${id}`, headers: { 'x-api-key': KEYS.all } })).json() as { state: string }).state

  it('runs once, on the replica it was asked on, without waiting for a look', async () => {
    const gw = await composeGateway(config())
    try {
      let id = ''
      await gw.start(async () => {
        await gw.proxy.ready()
        id = await ask(gw)
      })
      await waitFor(`job ${id} ended`, async () => ['done', 'failed'].includes(await state(gw, id)))
      expect(await state(gw, id)).toBe('done')
      expect(await started(gw)).toBe(1)
      expect(sandbox.countRequests((r) => r.path === REPORT_PATH)).toBe(1)
    } finally {
      await closeAfterTest(gw)
    }
  }, 30_000)

  it('a start whose bind fails after a job was asked in it claims none: the replica that serves runs them', async () => {
    const unbound = await composeGateway(config())
    const serving = await composeGateway(config())
    try {
      const ids: string[] = []
      const taken = Object.assign(new Error('listen EADDRINUSE: address already in use 127.0.0.1:9090'), { code: 'EADDRINUSE' })
      await expect(
        unbound.start(async () => {
          await unbound.proxy.ready()
          ids.push(await ask(unbound))
          throw taken
        }),
      ).rejects.toBe(taken)
      await serving.start(async () => {
        await serving.proxy.ready()
        ids.push(await ask(serving, YEAR.replace('2025-12-31', '2025-12-30')))
      })
      await waitFor('both jobs ended', async () => (await Promise.all(ids.map((id) => state(serving, id)))).every((s) => s === 'done' || s === 'failed'))
      expect(await Promise.all(ids.map((id) => state(serving, id)))).toEqual(['done', 'done'])
      expect(await started(unbound)).toBe(0)
      expect(await started(serving)).toBe(2)
    } finally {
      await closeAfterTest(unbound)
      await closeAfterTest(serving)
    }
  }, 30_000)
})
