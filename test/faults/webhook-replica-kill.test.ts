import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useCleanups, useRedis, useSandbox } from '../helpers/fixtures.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'
import { useReceivers, type Hit } from '../helpers/webhook-receiver.js'

// The replica that ended a report job is killed (SIGKILL) while the job's webhook delivery
// waits for a retry (the receiver answered 503), or with an attempt at the receiver it never
// hears the answer to. Two gateway processes (dist/main.js) on one redis-server: the delivery
// is in the Redis outbox, so the other replica delivers it once the receiver answers 2xx,
// with the same `webhook-id`; no two attempts are ever at the receiver at once; GET
// /admin/jobs of the other replica lists the delivery with every attempt recorded, the
// killed replica's too.

const GATEWAY_SECRET = 'webhook-kill-gateway-secret-0123456789'
const ADMIN_TOKEN = 'webhook-kill-admin-token-0123456789'
const SECRET = `whsec_${randomBytes(24).toString('base64')}`
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'

const redisCheck = redisAvailability('the webhook delivery takeover test')

interface Listed {
  id: string
  state: string
  attempts: number
  history: { replica: string; status: number | null }[]
}

describe.skipIf(!redisCheck.available)('a replica with a webhook delivery waiting for a retry is killed (gateway processes, one Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const cleanups = useCleanups()
  const receiver = useReceivers()

  it('the other replica delivers it, same webhook-id, once the receiver answers 2xx; never two attempts at once', async () => {
    const r = await receiver(100)
    // The sandbox, the platform, is at 127.0.0.1: the receiver is named `localhost`, which the operator allows.
    const team = TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${r.url}", secret: "${SECRET}" }\n`)
    const yaml = `${team}jobs:\n  webhookHosts: [localhost]\n  lease: 2s\n  poll: 200ms\n`
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, GATEWAY_SECRET, ADMIN_TOKEN }
    const start = (): Promise<GatewayProcess> => spawnGateway({ env, yaml })
    const listed = async (at: GatewayProcess) =>
      ((await (await fetch(`${at.adminUrl}/admin/jobs`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { deliveries: Listed[] }).deliveries

    const first = await start()
    cleanups.push(() => first.close())
    const asked = await fetch(`${first.url}${REPORT_PATH}?${YEAR}`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    // The job ended on the first replica (the only one), whose delivery met 503.
    await waitFor('the first attempt answered 503', () => r.hits.length >= 1)

    // No answer leaves the receiver from here, and every answer given is recorded before the
    // kill: the first replica is killed waiting for its retry, or with an attempt held at the
    // receiver that it never hears back from.
    r.hold()
    await waitFor('every answered attempt recorded', async () => (await listed(first))[0]?.attempts === r.hits.length)
    first.kill('SIGKILL')
    const killedAt = (await first.exited).at
    await waitFor("the killed replica's attempt gone from the receiver", () => r.inFlight() === 0, testTimeLeft(), 1)
    const beforeKill = r.hits.length

    const other = await start()
    cleanups.push(() => other.close())
    r.answer(204)

    await waitFor('the delivery made by the other replica', () => r.hits.some((h) => h.status === 204), testTimeLeft(), 50)
    const delivered = r.hits.find((h) => h.status === 204) as Hit
    expect(delivered.at).toBeGreaterThan(killedAt)
    expect(new Set(r.hits.map((h) => h.id))).toEqual(new Set([`msg_${id}`]))
    expect(r.most()).toBe(1)

    await waitFor('the delivery listed as delivered', async () => (await listed(other))[0]?.state === 'delivered')
    const [listing] = (await listed(other)) as [Listed]
    expect(listing).toMatchObject({ id: `msg_${id}`, job: id, team: 'all', state: 'delivered', attempts: r.hits.length, lastStatus: 204 })
    // Every attempt recorded, the killed replica's and the other's: the last one made by another replica than the first.
    expect(listing.history.map((a) => a.status)).toEqual(r.hits.map((h) => h.status))
    expect(listing.history.length).toBeGreaterThan(beforeKill)
    expect(listing.history.at(-1)?.replica).not.toBe(listing.history[0]?.replica)
  }, startsTimeout(2))
})
