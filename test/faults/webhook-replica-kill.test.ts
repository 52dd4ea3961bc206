import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useCleanups, useRedis, useSandbox } from '../helpers/fixtures.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// The replica that ended a report job is killed (SIGKILL) while the job's webhook delivery
// waits for a retry (the receiver answered 503). Two gateway processes (dist/main.js) on one
// redis-server: the delivery is in the Redis outbox, so the other replica delivers it once
// the receiver answers 2xx, with the same `webhook-id`; no two attempts are ever at the
// receiver at once; GET /admin/jobs of the other replica lists the delivery with every
// attempt, the killed replica's too.

const GATEWAY_SECRET = 'webhook-kill-gateway-secret-0123456789'
const ADMIN_TOKEN = 'webhook-kill-admin-token-0123456789'
const SECRET = `whsec_${randomBytes(24).toString('base64')}`
const YEAR = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'

const redisCheck = redisAvailability('the webhook delivery takeover test')

interface Hit {
  id: string
  at: number
  status: number
}

/** A receiver on 127.0.0.1 answering `answer()` to each POST after `holdMs`, noting how many attempts it held at once. */
async function receiver(answer: () => number, holdMs: number): Promise<{ url: string; hits: Hit[]; most: () => number; inFlight: () => number }> {
  const hits: Hit[] = []
  let inFlight = 0
  let most = 0
  const server = createServer((req, res) => {
    inFlight += 1
    most = Math.max(most, inFlight)
    req.resume()
    req.on('end', () => {
      setTimeout(() => {
        const status = answer()
        hits.push({ id: String(req.headers['webhook-id']), at: Date.now(), status })
        inFlight -= 1
        res.writeHead(status).end()
      }, holdMs)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  servers.push(server)
  return { url: `http://localhost:${(server.address() as AddressInfo).port}/hook`, hits, most: () => most, inFlight: () => inFlight }
}

interface Listed {
  id: string
  state: string
  attempts: number
  history: { replica: string; status: number | null }[]
}

const servers: Server[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    await new Promise((resolve) => s.close(resolve))
  }
})

describe.skipIf(!redisCheck.available)('a replica with a webhook delivery waiting for a retry is killed (gateway processes, one Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const cleanups = useCleanups()

  it('the other replica delivers it, same webhook-id, once the receiver answers 2xx; never two attempts at once', async () => {
    let up = false
    const r = await receiver(() => (up ? 204 : 503), 100)
    // The sandbox, the platform, is at 127.0.0.1: the receiver is named `localhost`, which the operator allows.
    const team = TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${r.url}", secret: "${SECRET}" }\n`)
    const yaml = `${team}jobs:\n  webhookHosts: [localhost]\n  lease: 2s\n  poll: 200ms\n`
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, GATEWAY_SECRET, ADMIN_TOKEN }
    const start = (): Promise<GatewayProcess> => spawnGateway({ env, yaml })

    const first = await start()
    cleanups.push(() => first.close())
    const asked = await fetch(`${first.url}${REPORT_PATH}?${YEAR}`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    // The job ended on the first replica (the only one), whose delivery met 503.
    await waitFor('the first attempt answered 503', () => r.hits.length >= 1, 20_000)

    const other = await start()
    cleanups.push(() => other.close())
    // Killed between two attempts: none is at the receiver then.
    await waitFor('no attempt at the receiver', () => r.inFlight() === 0, 5000, 1)
    first.kill('SIGKILL')
    const killedAt = (await first.exited).at
    const beforeKill = r.hits.length
    up = true

    await waitFor('the delivery made by the other replica', () => r.hits.some((h) => h.status === 204), 60_000, 50)
    const delivered = r.hits.find((h) => h.status === 204) as Hit
    expect(delivered.at).toBeGreaterThan(killedAt)
    expect(new Set(r.hits.map((h) => h.id))).toEqual(new Set([`msg_${id}`]))
    expect(r.most()).toBe(1)

    const listed = async () =>
      ((await (await fetch(`${other.adminUrl}/admin/jobs`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { deliveries: Listed[] }).deliveries
    await waitFor('the delivery listed as delivered', async () => (await listed())[0]?.state === 'delivered', 10_000)
    const [listing] = (await listed()) as [Listed]
    expect(listing).toMatchObject({ id: `msg_${id}`, job: id, team: 'all', state: 'delivered', attempts: r.hits.length, lastStatus: 204 })
    // Every attempt recorded, the killed replica's and the other's: the last one made by another replica than the first.
    expect(listing.history.map((a) => a.status)).toEqual(r.hits.map((h) => h.status))
    expect(listing.history.length).toBeGreaterThan(beforeKill)
    expect(listing.history.at(-1)?.replica).not.toBe(listing.history[0]?.replica)
  }, 120_000)
})
