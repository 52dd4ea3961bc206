import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useCleanups, useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { redisGate } from '../helpers/redis-gate.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { useReceivers } from '../helpers/webhook-receiver.js'

// The replica making a webhook attempt is cut off from Redis while the receiver holds the
// attempt. Its attempt ends at jobs.webhookTimeout and cannot be recorded; the other
// replica claims the delivery once the claim (webhookTimeout plus the lease) has run out,
// says so in a warn line, and delivers it with the same webhook-id: never two attempts at
// the receiver at once.

const GATEWAY_SECRET = 'webhook-partition-gateway-secret-0123456789'
const SECRET = `whsec_${randomBytes(24).toString('base64')}`
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'

const redisCheck = redisAvailability()

describe.skipIf(!redisCheck.available)('the replica making a webhook attempt cut off from Redis', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const gateways = useGateways()
  const cleanups = useCleanups()
  const receiver = useReceivers()

  it("the other replica takes the delivery over once its claim has run out, says so, and delivers it; one attempt at the receiver at a time", async () => {
    const r = await receiver(10)
    const team = TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${r.url}", secret: "${SECRET}" }\n`)
    const yaml = `${team}jobs:\n  webhookHosts: [localhost]\n  lease: 1s\n  poll: 200ms\n  webhookTimeout: 500ms\n`
    const gate = await redisGate(redis.port, cleanups)
    gate.open()
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), GATEWAY_SECRET }
    const b = await gateways.build(testConfig({ ...env, REDIS_URL: gate.url }, yaml))
    r.hold()
    const asked = await b.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?${YEAR}`, headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.statusCode).toBe(202)
    const id = (asked.json() as { id: string }).id
    await waitFor("B's attempt at the receiver", () => r.inFlight() === 1)
    gate.cut()
    // B's attempt is over at its timeout, heard back from by nobody.
    await waitFor("B's attempt gone from the receiver", () => r.inFlight() === 0)
    const a = await gateways.build(testConfig({ ...env, REDIS_URL: redis.url }, yaml))
    r.answer(204)
    await waitFor('the delivery made by A', () => r.hits.some((h) => h.status === 204), testTimeLeft(), 50)
    expect(new Set(r.hits.map((h) => h.id))).toEqual(new Set([`msg_${id}`]))
    expect(r.most()).toBe(1)
    expect(a.logs.records()).toContainEqual(
      expect.objectContaining({ level: 40, delivery: `msg_${id}`, job: id, team: 'all', from: expect.any(String), msg: expect.stringMatching(/^webhook delivery taken over/) }),
    )
  }, 60_000)
})
