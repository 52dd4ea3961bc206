import { describe, expect, it } from 'vitest'
import { REPORT_PATH, teamsYamlWith, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { distinctReport, proxyGet } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'

// Which concurrent misses of one report share one platform call (docs/contract.md,
// "Reports"): a cached answer is every replica's; an answer the cache does not keep (a
// platform 4xx) reaches only the reads of the replica that called, so each replica makes
// one call; a report past cache.maxEntryBytes is held for one reader, so each read makes
// one. The counts hold however the reads interleave. Two gateway instances in this
// process stand for two replicas, on one real redis-server.

const GATEWAY_SECRET = 'unkept-gateway-secret-0123456789abc'
// Past 4 KiB a report is passed on uncached (BYPASS).
const YAML = teamsYamlWith({ cache: { maxEntryBytes: '4KiB', refreshAhead: false } })

const redisCheck = redisAvailability()
if (redisCheck.notice) console.warn(redisCheck.notice)

describe.skipIf(!redisCheck.available)('concurrent misses of an answer the cache does not keep, across replicas (Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const gateways = useGateways()

  const replicas = async (): Promise<[TestGateway, TestGateway]> => {
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, GATEWAY_SECRET }, YAML)
    return [await gateways.build(config()), await gateways.build(config())]
  }
  const reportCalls = () => sandbox.countRequests((r) => r.path === REPORT_PATH)

  it('makes one call for a cached report, one per replica for a platform 422, one per read for a report past cache.maxEntryBytes', async () => {
    const [a, b] = await replicas()
    // Each read overlaps the others' calls on a quiet machine; the counts do not depend on it.
    sandbox.setLatency(300)
    const at = async (report: string, gws: TestGateway[]) => {
      const before = reportCalls()
      const answers = await Promise.all(gws.map((gw) => proxyGet(gw, report)))
      return { calls: reportCalls() - before, answers: answers.map((r) => [r.statusCode, r.headers['x-cache']]) }
    }

    const cached = await at(distinctReport(1), [a, b])
    expect(cached.answers.map(([status]) => status)).toEqual([200, 200])
    expect(cached.calls).toBe(1)

    sandbox.setFailure({ kind: 'status', status: 422, body: { message: 'The date from field is invalid.', errors: { dateFrom: ['invalid'] } } })
    expect(await at(distinctReport(2), [a, b])).toEqual({ calls: 2, answers: [[422, 'BYPASS'], [422, 'BYPASS']] })

    sandbox.setFailure({ kind: 'large', bytes: 20_000 })
    expect(await at(distinctReport(3), [a, a, b, b])).toEqual({ calls: 4, answers: Array.from({ length: 4 }, () => [200, 'BYPASS']) })
  })
})
