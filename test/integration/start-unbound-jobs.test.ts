import { describe, expect, it } from 'vitest'
import { closeAfterTest, composeGateway, REPORT_PATH, teamsYamlWith, testConfig, TEST_GATEWAY_SECRET, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'
import { newJob } from '../../src/jobs/job.js'
import { RedisJobStore } from '../../src/jobs/redis-job-store.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { canonicalGetReport } from '../../src/reports/report-query.js'

// A replica whose start cannot listen (EADDRINUSE: main.ts exits) claims no report job:
// a job it claimed would wait out its lease (jobs.lease) before another replica took it.
// Its runner starts once it listens and serves; here a job queued in Redis before it
// started is run by the replica that does serve, at its first run.

const { available } = redisAvailability()
const PREFIX = 'rgw:'

describe.skipIf(!available)('a start that cannot listen', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()
  const { server, client } = useRedis()

  /** Report jobs the replica started (gateway_report_jobs_total{outcome="started"}). */
  const startedOn = async (gw: TestGateway): Promise<number> => {
    const text = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    return Number(/^gateway_report_jobs_total\{outcome="started"\} (\d+)$/m.exec(text)?.[1] ?? 0)
  }

  it('claims no queued job: the replica that serves runs it, its first run', async () => {
    const token = sandbox.issueToken()
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token, REDIS_URL: server.url, GATEWAY_SECRET: TEST_GATEWAY_SECRET }, teamsYamlWith({ jobs: { perReplica: 1 } }))
    const store = new RedisJobStore({ redis: client, seal: new RedisSeal(TEST_GATEWAY_SECRET), prefix: PREFIX, maxEntryBytes: 1024 * 1024, onUnverified: () => undefined })
    const report = canonicalGetReport(REPORT_PATH, 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31', { maxRangeDays: 400 })

    const unbound = await composeGateway(config())
    try {
      // Queued as a replica asks it: its key the copy's of the account the credential acts for (a composed replica runs no job before it listens).
      expect(await store.add(newJob({ id: 'queued-before', team: 'all', credential: 'default', key: unbound.reports.keyFor('default', report), report, expectedSeconds: null }, Date.now()), 20, Date.now())).toBe(true)
      const taken = Object.assign(new Error('listen EADDRINUSE: address already in use 127.0.0.1:8080'), { code: 'EADDRINUSE' })
      await expect(unbound.start(() => Promise.reject(taken))).rejects.toBe(taken)
      const serving = await gateways.build(config())
      await waitFor('the job ended', async () => ['done', 'failed'].includes((await store.get('queued-before'))?.state ?? ''))
      expect(await store.get('queued-before')).toMatchObject({ state: 'done', runs: 1 })
      expect(await startedOn(serving)).toBe(1)
      expect(await startedOn(unbound)).toBe(0)
    } finally {
      await closeAfterTest(unbound)
    }
  }, 30_000)
})
