import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, TEAMS_YAML, testConfig, WEEK_BY_DATE } from '../helpers/build-gateway.js'
import { onRealTimers } from '../helpers/clock.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { proxyGet } from '../helpers/gateway-calls.js'
import { redisAvailability } from '../helpers/start-redis.js'

// A team's rate-limit window across replicas whose clocks disagree: the window is read on
// Redis' clock, so a replica 30 s ahead counts in the window the others count in.

const { available } = redisAvailability('the rate limit across replicas whose clocks disagree')

describe.skipIf(!available)('a team\'s rate-limit window on replicas whose clocks disagree', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const gateways = useGateways()

  it('a replica 30 s ahead admits no more than the one call before its sync once the others spent the window', async () => {
    // `limited`: 3 calls a day, so that the two replicas' readings of Redis' clock fall in one window.
    const yaml = TEAMS_YAML.replace('rateLimit: { max: 3, window: 1m }', 'rateLimit: { max: 3, window: 1d }')
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token, REDIS_URL: redis.url }, yaml)
    const token = sandbox.issueToken()
    // Each replica's clock stands still: 20 s before a day ends by the one's, 10 s into the next by the other's.
    const nextDay = (Math.floor(Date.now() / 86_400_000) + 1) * 86_400_000
    const one = await gateways.build(config(), { clock: onRealTimers(() => nextDay - 20_000) })
    const ahead = await gateways.build(config(), { clock: onRealTimers(() => nextDay + 10_000) })
    const call = (gw: typeof one) => proxyGet(gw, `${REPORT_PATH}?${WEEK_BY_DATE}`, KEYS.limited)

    for (let i = 0; i < 3; i++) expect((await call(one)).statusCode).toBe(200)
    await one.rateLimiter.sync()
    const answered: number[] = []
    for (let i = 0; i < 3; i++) {
      answered.push((await call(ahead)).statusCode)
      await ahead.rateLimiter.sync()
    }
    expect(answered).toEqual([200, 429, 429])
  })
})
