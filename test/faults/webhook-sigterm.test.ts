import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useCleanups, useRedis, useSandbox } from '../helpers/fixtures.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'
import { useReceivers } from '../helpers/webhook-receiver.js'

// A rolling restart's SIGTERM reaches the replica while its webhook push is at the
// receiver, unanswered. docs/jobs.md: a replica that stops leaves its deliveries in the
// Redis outbox, another makes them, at least once, never two attempts at once. Two
// gateway processes (dist/main.js) on one redis-server: the stopped replica exits 0
// within its drain and grace, recording the attempt its stop cut as cut by the stop; the
// push is made by the other one once the receiver answers, with the same `webhook-id`,
// and delivered once; GET /admin/jobs lists it delivered.

const GATEWAY_SECRET = 'webhook-stop-gateway-secret-0123456789'
const ADMIN_TOKEN = 'webhook-stop-admin-token-0123456789'
const SECRET = `whsec_${randomBytes(24).toString('base64')}`
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'

const redisCheck = redisAvailability('the webhook push under SIGTERM test')

describe.skipIf(!redisCheck.available)('SIGTERM to a replica with a webhook push at the receiver (gateway processes, one Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const cleanups = useCleanups()
  const receiver = useReceivers()

  it('the replica exits 0 and the other one delivers the push once, same webhook-id, never two attempts at once', async () => {
    const r = await receiver(0)
    r.hold()
    const team = TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${r.url}", secret: "${SECRET}" }\n`)
    const yaml = `${team}jobs:\n  webhookHosts: [localhost]\n  lease: 2s\n  poll: 200ms\nshutdownDrain: 200ms\nshutdownGrace: 2s\n`
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, GATEWAY_SECRET, ADMIN_TOKEN }
    const start = (): Promise<GatewayProcess> => spawnGateway({ env, yaml })

    const first = await start()
    cleanups.push(() => first.close())
    const asked = await fetch(`${first.url}${REPORT_PATH}?${YEAR}`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    await waitFor('the first attempt at the receiver, unanswered', () => r.inFlight() === 1)

    first.kill('SIGTERM')
    const exit = await first.exited
    expect(exit.code, first.output()).toBe(0)
    await waitFor("the stopped replica's attempt gone from the receiver", () => r.inFlight() === 0, testTimeLeft(), 1)
    expect(r.hits).toEqual([])

    const other = await start()
    cleanups.push(() => other.close())
    r.answer(204)
    await waitFor('the push made by the other replica', () => r.hits.some((h) => h.status === 204), testTimeLeft(), 50)
    const listed = async () =>
      ((await (await fetch(`${other.adminUrl}/admin/jobs`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { deliveries: { id: string; state: string; history: { replica: string; status: number | null; error: string | null }[] }[] })
        .deliveries
    await waitFor('the delivery listed as delivered', async () => (await listed())[0]?.state === 'delivered')
    expect(r.hits.map((h) => [h.id, h.status])).toEqual([[`msg_${id}`, 204]])
    expect(r.most()).toBe(1)
    // The attempt the stop cut is recorded by the stopped replica as what it was, not as a receiver out of reach.
    const [delivery] = await listed()
    expect(delivery).toMatchObject({ id: `msg_${id}`, state: 'delivered' })
    expect(delivery?.history.map((a) => [a.status, a.error])).toEqual([
      [null, 'the attempt was cut off: this replica was stopping'],
      [204, null],
    ])
    expect(delivery?.history[0]?.replica).not.toBe(delivery?.history[1]?.replica)
  }, startsTimeout(2))
})
