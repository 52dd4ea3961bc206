import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH as PATH, teamsYamlWith, testConfig, WEEK_BY_DATE as Q101, type TestGateway } from '../helpers/build-gateway.js'
import { fakeClock, onRealTimers } from '../helpers/clock.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A fill under way on a replica told to stop is finished or handed over, never lost: a
// background refresh has no caller's connection to keep the listener open, and the close
// waits for it before it closes Redis; a call aborted at the end of the grace lets its
// lock go, and a waiter on another replica fills.

const { available } = redisAvailability()
const YAML = teamsYamlWith({ platform: { timeout: '5s' }, cache: { ttl: { recent: '60s', settled: '60s' }, lockTtl: '2s', refreshAhead: 0 } })

describe.skipIf(!available)('fills under way on a replica that stops', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const gateways = useGateways()
  const clock = fakeClock()
  const replica = () => gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url }, YAML), { clock: onRealTimers(clock.now) })
  const get = (gw: TestGateway) => gw.proxy.inject({ method: 'GET', url: `${PATH}?${Q101}`, headers: { 'x-api-key': KEYS.all } })
  const reportCalls = () => sandbox.countRequests((r) => r.path === PATH)

  it('finishes a stale-while-revalidate refresh before it closes Redis: the next replica finds the new copy', async () => {
    const a = await replica()
    expect((await get(a)).headers['x-cache']).toBe('MISS')
    clock.advance(65_000)
    sandbox.setLatency(500)
    expect((await get(a)).headers['x-cache']).toBe('STALE')
    await waitFor('the refresh at the platform', () => reportCalls() === 2)
    // Told to stop with the refresh at the platform and no caller waiting for it.
    await a.close()
    sandbox.setLatency(0)
    const b = await replica()
    const next = await get(b)
    expect(next.headers['x-cache']).toBe('HIT')
    expect(next.headers.age).toBe('0')
    expect(reportCalls()).toBe(2)
  })

  it('hands a fill whose call the end of the grace aborted over to a waiter on another replica', async () => {
    const [a, b] = [await replica(), await replica()]
    sandbox.setLatency(1500)
    const onA = get(a)
    await waitFor("A's call at the platform", () => reportCalls() === 1)
    const onB = get(b)
    const closing = a.close()
    // The end of A's grace (main.ts): its calls at the platform are aborted.
    a.abortPlatformCalls()
    expect((await onA).json()).toMatchObject({ code: 'GW_SHUTTING_DOWN' })
    await closing
    // A let its lock go unannounced: B's waiter took it and filled for its caller.
    const answer = await onB
    expect(answer.statusCode).toBe(200)
    expect(answer.headers['x-cache']).toBe('MISS')
    expect(reportCalls()).toBe(2)
  })
})
