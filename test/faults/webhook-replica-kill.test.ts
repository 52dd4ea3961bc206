import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useCleanups, useRedis, useSandbox } from '../helpers/fixtures.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

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

interface Hit {
  id: string
  at: number
  status: number
}

interface Receiver {
  url: string
  /** The attempts answered to a caller still there, in order. */
  hits: Hit[]
  /** The most attempts it held at once. */
  most: () => number
  /** Attempts arrived and not yet answered or gone. */
  inFlight: () => number
  /** From now on each attempt is held, unanswered, until `answer` is called. */
  hold: () => void
  /** Answers the held attempts and every later one `status`. */
  answer: (status: number) => void
}

/**
 * A receiver on 127.0.0.1 answering each POST after `holdMs`, 503 until told otherwise.
 * An attempt whose caller went away (its socket ended or closed: the process was killed)
 * is no hit: that caller never heard an answer, so no replica records it.
 */
async function receiver(holdMs: number): Promise<Receiver> {
  const hits: Hit[] = []
  const held = new Set<() => void>()
  let status: number | null = 503
  let inFlight = 0
  let most = 0
  const server = createServer((req, res) => {
    inFlight += 1
    most = Math.max(most, inFlight)
    let over = false
    const end = (): boolean => {
      if (over) return false
      over = true
      inFlight -= 1
      return true
    }
    res.on('close', () => end())
    const settle = (): void => {
      held.delete(settle)
      const gone = req.socket.destroyed || req.socket.readableEnded
      if (!end()) return
      if (gone) return void res.destroy()
      const answered = status as number
      hits.push({ id: String(req.headers['webhook-id']), at: Date.now(), status: answered })
      res.writeHead(answered).end()
    }
    req.resume()
    req.on('end', () => setTimeout(() => (status === null ? held.add(settle) : settle()), holdMs))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  servers.push(server)
  return {
    url: `http://localhost:${(server.address() as AddressInfo).port}/hook`,
    hits,
    most: () => most,
    inFlight: () => inFlight,
    hold: () => {
      status = null
    },
    answer: (s) => {
      status = s
      for (const settle of [...held]) settle()
    },
  }
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
  }, 120_000)
})
