import { createHmac, randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { WebhookDeliveries, type WebhookDeliveriesDeps, type WebhookSettings } from '../../src/jobs/webhook-deliveries.js'
import type { LookupAll } from '../../src/jobs/webhook-target.js'
import { deflateRawSync, gzipSync } from 'node:zlib'
import { Redis } from 'ioredis'
import { MemoryDeliveryStore, type DeliveryStore, type OutboxBounds } from '../../src/jobs/delivery-store.js'
import { newDelivery, type Delivery, type DeliveryView } from '../../src/jobs/delivery.js'
import { ended, jobStatus, newJob, type Job, type JobStatus } from '../../src/jobs/job.js'
import type { JobStore } from '../../src/jobs/job-store.js'
import { JobRunner } from '../../src/jobs/job-runner.js'
import { TeamDirectory } from '../../src/access/team-auth.js'
import { RedisJobStore } from '../../src/jobs/redis-job-store.js'
import { RedisDeliveryStore } from '../../src/jobs/redis-delivery-store.js'
import { RedisSeal } from '../../src/redis/seal.js'
import { redisKey } from '../../src/redis/keys.js'
import { etagOf } from '../../src/cache/cache-entry.js'
import { canonicalGetReport } from '../../src/reports/report-query.js'
import type { TokenProvider } from '../../src/platform/tokens/token-provider.js'
import { fakeClock, onRealTimers, wokenBy, type FakeClock } from '../helpers/clock.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { KEYS, listen, REPORT_PATH, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { CLOSED_PORT, redisAvailability } from '../helpers/start-redis.js'
import { FailureLog } from '../../src/observe/failure-log.js'

// Pushing an ended report job to its team's webhook (jobs/webhook-deliveries.ts, through
// the outbox in memory here), to a real receiver on loopback: signed the Standard Webhooks way (checked here with the
// secret, computed independently), tried again after 5xx on a fake clock's backoff, a
// redirect not followed, the platform's host and a host not allowed refused, and the
// secret never in a delivery nor a log line.

const SECRET = `whsec_${randomBytes(24).toString('base64')}`
const STATUS: JobStatus = {
  id: 'job123',
  state: 'done',
  askedAt: '2026-01-01T00:00:00.000Z',
  startedAt: '2026-01-01T00:00:01.000Z',
  endedAt: '2026-01-01T00:00:02.000Z',
  placeInQueue: null,
  expectedSeconds: null,
  tookSeconds: 1.2,
  error: null,
  retry: null,
  expiresAt: '2026-01-01T01:00:02.000Z',
  result: '/api/v1/jobs/job123/result',
  settledThrough: '2025-12-29',
  provisionalDays: 'none',
}

interface Received {
  path: string
  headers: IncomingHttpHeaders
  body: string
}

/** A receiver on 127.0.0.1 answering each POST with the next of `answers` (the last one repeats). */
async function receiver(answers: { status: number; headers?: Record<string, string> }[]): Promise<{ url: string; got: Received[]; server: Server }> {
  const got: Received[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      got.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
      const answer = answers[Math.min(got.length, answers.length) - 1] ?? { status: 204 }
      res.writeHead(answer.status, answer.headers ?? {}).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  servers.push(server)
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got, server }
}

const servers: Server[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    await new Promise((resolve) => s.close(resolve))
  }
})

const SETTINGS: WebhookSettings = { hosts: ['127.0.0.1'], timeoutMs: 5000, retryForMs: 60_000 }

function deliveries(url: string, clock: FakeClock, opts: { settings?: WebhookSettings; platformUrls?: string[]; resolve?: LookupAll; store?: DeliveryStore; replica?: string; target?: WebhookDeliveriesDeps['target'] } = {}): { webhooks: WebhookDeliveries; logged: string[] } {
  const logged: string[] = []
  const log = { info: (...args: unknown[]) => void logged.push(JSON.stringify(args)), warn: (...args: unknown[]) => void logged.push(JSON.stringify(args)) }
  const settings = opts.settings ?? SETTINGS
  const store = opts.store ?? new MemoryDeliveryStore({ keepMs: 3_600_000, lifeMs: settings.retryForMs + 3_600_000, perTeam: 100 })
  const failures = new FailureLog({ log, clock })
  const webhooks = new WebhookDeliveries({ store, settings, platformUrls: opts.platformUrls ?? ['https://platform.example.com'], resolve: opts.resolve ?? (async () => ['192.0.2.1']), target: opts.target ?? ((team) => (team === 'growth' ? { url, secret: SECRET } : null)), clock, log, replica: opts.replica ?? 'here', leaseMs: 15_000, failures })
  webhooks.start()
  outboxes.set(webhooks, { store, clock })
  return { webhooks, logged }
}

const outboxes = new WeakMap<WebhookDeliveries, { store: DeliveryStore; clock: FakeClock }>()

/** The end of a job of `team` told by `status`, recorded in `webhooks`' outbox as a job store's end adds it; its deliverer looks at once. */
async function enqueue(webhooks: WebhookDeliveries, team: string, status: JobStatus): Promise<void> {
  const { store, clock } = outboxes.get(webhooks) as { store: DeliveryStore; clock: FakeClock }
  const d = webhooks.deliveryOf(team, status, clock.now())
  if (d) await store.add(d, clock.now())
  webhooks.poke()
}

/** The latest delivery listed. */
const latest = async (w: WebhookDeliveries): Promise<DeliveryView | undefined> => (await w.list())[0]
const settled = (w: WebhookDeliveries) => waitFor('the delivery settled', async () => (await latest(w))?.state === 'delivered' || (await latest(w))?.state === 'failed')

describe('webhook deliveries', () => {
  it('POSTs the job status signed with the team\'s secret, the signature verifying with it', async () => {
    const clock = fakeClock()
    const r = await receiver([{ status: 204 }])
    const { webhooks, logged } = deliveries(r.url, clock)
    await enqueue(webhooks, 'growth', STATUS)
    await settled(webhooks)
    expect(r.got).toHaveLength(1)
    const [got] = r.got as [Received]
    expect(got.headers['content-type']).toBe('application/json')
    expect(JSON.parse(got.body)).toEqual(STATUS)
    const id = got.headers['webhook-id'] as string
    const ts = got.headers['webhook-timestamp'] as string
    expect(id).toBe('msg_job123')
    expect(Number(ts)).toBe(Math.floor(clock.now() / 1000))
    const key = Buffer.from(SECRET.slice('whsec_'.length), 'base64')
    const expected = createHmac('sha256', key).update(`${id}.${ts}.${got.body}`).digest('base64')
    expect(got.headers['webhook-signature']).toBe(`v1,${expected}`)
    // The secret, in whatever form, is in no header, body or log line.
    const seen = JSON.stringify(got) + logged.join('\n') + JSON.stringify(await webhooks.list())
    expect(seen).not.toContain(SECRET)
    expect(seen).not.toContain(SECRET.slice('whsec_'.length))
    expect(got.headers.authorization).toBeUndefined()
    expect(await latest(webhooks)).toMatchObject({ id: 'msg_job123', job: 'job123', team: 'growth', state: 'delivered', attempts: 1, lastStatus: 204, lastError: null, nextAttemptAt: null })
  })

  it('tries again after 5xx, 1 s then 2 s later on the clock, the same id each time, until the receiver takes it', async () => {
    const clock = fakeClock()
    const r = await receiver([{ status: 503 }, { status: 500 }, { status: 200 }])
    const { webhooks } = deliveries(r.url, clock)
    await enqueue(webhooks, 'growth', STATUS)
    await waitFor('a second attempt scheduled', async () => (await latest(webhooks))?.lastStatus === 503)
    expect(await latest(webhooks)).toMatchObject({ state: 'pending', attempts: 1, nextAttemptAt: new Date(clock.now() + 1000).toISOString() })
    clock.advance(999)
    expect(r.got).toHaveLength(1)
    clock.advance(1)
    await waitFor('a third attempt scheduled', async () => (await latest(webhooks))?.lastStatus === 500)
    expect((await latest(webhooks))?.nextAttemptAt).toBe(new Date(clock.now() + 2000).toISOString())
    clock.advance(2000)
    await settled(webhooks)
    expect(await latest(webhooks)).toMatchObject({ state: 'delivered', attempts: 3, lastStatus: 200 })
    expect(new Set(r.got.map((g) => g.headers['webhook-id']))).toEqual(new Set(['msg_job123']))
  })

  it('two deliverers on one outbox: a stopped one\'s retry is made by the other, the same webhook-id', async () => {
    const clock = fakeClock()
    const r = await receiver([{ status: 503 }, { status: 204 }])
    const store = new MemoryDeliveryStore({ keepMs: 3_600_000, lifeMs: 7_200_000, perTeam: 100 })
    const a = deliveries(r.url, clock, { store, replica: 'a' }).webhooks
    const b = deliveries(r.url, clock, { store, replica: 'b' }).webhooks
    await enqueue(a, 'growth', STATUS)
    await waitFor('the first attempt answered 503', async () => (await latest(a))?.lastStatus === 503)
    a.stop()
    // Its retry is due 1 s later: the stopped one makes none, the other makes it (it looks
    // at the earliest due delivery's time, at least once a lease).
    await waitFor('the other replica delivered', async () => {
      clock.advance(100)
      return (await latest(b))?.state === 'delivered'
    })
    const [only, ...more] = await b.list()
    expect(more).toEqual([])
    expect(only).toMatchObject({ state: 'delivered', attempts: 2, lastStatus: 204 })
    expect(only?.history.map((h) => [h.replica, h.status])).toEqual([['a', 503], ['b', 204]])
    expect(r.got.map((g) => g.headers['webhook-id'])).toEqual(['msg_job123', 'msg_job123'])
  })

  it('tries again at the team\'s webhook as the teams say now: a reload that moved it sends the pending retry to the new URL, signed with the new secret, and lists it there', async () => {
    const clock = fakeClock()
    const before = await receiver([{ status: 503 }])
    const after = await receiver([{ status: 204 }])
    const newSecret = `whsec_${randomBytes(24).toString('base64')}`
    let target = { url: `${before.url}?token=old-receiver`, secret: SECRET }
    const { webhooks } = deliveries(before.url, clock, { target: (team) => (team === 'growth' ? target : null) })
    await enqueue(webhooks, 'growth', STATUS)
    await waitFor('the first attempt answered 503', async () => (await latest(webhooks))?.lastStatus === 503)
    // The operator moves the team's webhook (a reload) before the retry is due.
    target = { url: after.url, secret: newSecret }
    clock.advance(1000)
    await settled(webhooks)
    expect(before.got).toHaveLength(1)
    expect(after.got).toHaveLength(1)
    const [got] = after.got as [Received]
    const ts = got.headers['webhook-timestamp'] as string
    const key = Buffer.from(newSecret.slice('whsec_'.length), 'base64')
    expect(got.headers['webhook-signature']).toBe(`v1,${createHmac('sha256', key).update(`msg_job123.${ts}.${got.body}`).digest('base64')}`)
    expect(await latest(webhooks)).toMatchObject({ state: 'delivered', attempts: 2, lastStatus: 204, url: new URL(after.url).origin })
  })

  it('gives up once webhookRetryFor has passed since the first attempt', async () => {
    const clock = fakeClock()
    const r = await receiver([{ status: 502 }])
    const { webhooks } = deliveries(r.url, clock, { settings: { ...SETTINGS, retryForMs: 2500 } })
    await enqueue(webhooks, 'growth', STATUS)
    await waitFor('a retry scheduled', async () => (await latest(webhooks))?.attempts === 1 && (await latest(webhooks))?.lastStatus === 502)
    clock.advance(1000)
    await settled(webhooks)
    // 1 s, then 2 s more would pass the 2.5 s: given up after the second attempt.
    expect(await latest(webhooks)).toMatchObject({ state: 'failed', attempts: 2, lastStatus: 502, nextAttemptAt: null })
  })

  it('follows no redirect: a 3xx is a failed delivery, its location never asked', async () => {
    const clock = fakeClock()
    const r = await receiver([{ status: 307, headers: { location: '/elsewhere' } }])
    const { webhooks } = deliveries(r.url, clock)
    await enqueue(webhooks, 'growth', STATUS)
    await settled(webhooks)
    expect(await latest(webhooks)).toMatchObject({ state: 'failed', attempts: 1, lastStatus: 307 })
    expect(r.got.map((g) => g.path)).toEqual(['/hook'])
  })

  it.each([
    ['a 429 with retry-after: 30', 429, '30', 30_000],
    ['a 503 with retry-after: 45', 503, '45', 45_000],
    ['a 429 with retry-after: 86400, held to the backoff\'s longest wait (5 min)', 429, '86400', 300_000],
    ['a 429 whose retry-after is an HTTP date 20 s on', 429, 'date+20', 20_000],
  ])('tries %s again no sooner than the receiver asked, not 1 s later', async (_what, status, retryAfter, waitMs) => {
    const clock = fakeClock(Math.floor(Date.now() / 1000) * 1000)
    const header = retryAfter === 'date+20' ? new Date(clock.now() + 20_000).toUTCString() : retryAfter
    const r = await receiver([{ status, headers: { 'retry-after': header } }, { status: 204 }])
    const { webhooks } = deliveries(r.url, clock, { settings: { ...SETTINGS, retryForMs: 3_600_000 } })
    await enqueue(webhooks, 'growth', STATUS)
    await waitFor('a retry scheduled', async () => (await latest(webhooks))?.lastStatus === status)
    const at = clock.now()
    expect(await latest(webhooks)).toMatchObject({ state: 'pending', attempts: 1, nextAttemptAt: new Date(at + waitMs).toISOString() })
    clock.advance(waitMs - 1)
    expect(r.got).toHaveLength(1)
    clock.advance(1)
    await settled(webhooks)
    expect(await latest(webhooks)).toMatchObject({ state: 'delivered', attempts: 2, lastStatus: 204 })
  })

  /** A receiver on 127.0.0.1 whose `n`th attempt (from 1) is answered by `answer`; the webhook-ids it got. */
  async function answering(answer: (res: ServerResponse, n: number) => void): Promise<{ url: string; got: string[] }> {
    const got: string[] = []
    const server = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        got.push(String(req.headers['webhook-id']))
        answer(res, got.length)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    servers.push(server)
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got }
  }

  it.each([
    ['its body cut by the receiver\'s close', 'cut'],
    ['its body not ended within webhookTimeout', 'trickle'],
  ])('takes a 2xx as delivered, %s: the receiver said it took the push', async (_what, how) => {
    const clock = fakeClock()
    const { url, got } = await answering((res) => {
      res.writeHead(200, { 'content-length': '100' })
      // Its head and the first bytes on the wire, then (cut) the connection closed.
      res.write('0123456789', () => (how === 'cut' ? res.destroy() : undefined))
    })
    const { webhooks } = deliveries(url, clock, { settings: { ...SETTINGS, timeoutMs: 300 } })
    await enqueue(webhooks, 'growth', STATUS)
    await waitFor('the attempt recorded', async () => (await latest(webhooks))?.attempts === 1)
    expect(await latest(webhooks)).toMatchObject({ state: 'delivered', attempts: 1, lastStatus: 200, lastError: null, nextAttemptAt: null })
    expect(got).toEqual(['msg_job123'])
  })

  it('takes a receiver that closes the connection before its answer as not reached: tried again, the same webhook-id', async () => {
    const clock = fakeClock()
    const { url, got } = await answering((res, n) => (n === 1 ? res.destroy() : res.writeHead(204).end()))
    const { webhooks } = deliveries(url, clock)
    await enqueue(webhooks, 'growth', STATUS)
    await waitFor('the first attempt recorded', async () => (await latest(webhooks))?.attempts === 1)
    expect(await latest(webhooks)).toMatchObject({ state: 'pending', lastStatus: null, lastError: expect.stringMatching(/^the receiver could not be reached/) })
    clock.advance(1000)
    await settled(webhooks)
    expect(await latest(webhooks)).toMatchObject({ state: 'delivered', attempts: 2, lastStatus: 204 })
    expect(got).toEqual(['msg_job123', 'msg_job123'])
  })

  it('takes a 410 as final: not tried again', async () => {
    const clock = fakeClock()
    const r = await receiver([{ status: 410 }, { status: 204 }])
    const { webhooks } = deliveries(r.url, clock)
    await enqueue(webhooks, 'growth', STATUS)
    await settled(webhooks)
    expect(await latest(webhooks)).toMatchObject({ state: 'failed', attempts: 1, lastStatus: 410, nextAttemptAt: null })
    clock.advance(600_000)
    expect(r.got).toHaveLength(1)
  })

  it('says why a receiver could not be reached: the connection\'s error code, as a platform call\'s failure says it, not fetch\'s "fetch failed"', async () => {
    const clock = fakeClock()
    // A receiver that is not there: a port nothing listens on (a closed receiver's port may be another suite's server's by then).
    const { webhooks } = deliveries(`http://127.0.0.1:${CLOSED_PORT}/hook`, clock)
    await enqueue(webhooks, 'growth', STATUS)
    await waitFor('the attempt failed', async () => (await latest(webhooks))?.lastError !== null)
    expect(await latest(webhooks)).toMatchObject({ state: 'pending', attempts: 1, lastStatus: null, lastError: 'the receiver could not be reached (ECONNREFUSED)' })
  })

  it("says a receiver written https:// that answers in plain HTTP is that, not the platform's", async () => {
    const clock = fakeClock()
    const r = await receiver([{ status: 204 }])
    const { webhooks } = deliveries(r.url.replace('http://', 'https://'), clock)
    await enqueue(webhooks, 'growth', STATUS)
    await waitFor('the attempt failed', async () => (await latest(webhooks))?.lastError !== null)
    expect(await latest(webhooks)).toMatchObject({
      state: 'pending',
      attempts: 1,
      lastStatus: null,
      lastError: "the receiver could not be reached (ERR_SSL_WRONG_VERSION_NUMBER (TLS failed: the receiver's address answers in plain HTTP, not TLS))",
    })
  })

  it('is bounded: a receiver that does not answer is cut off after webhookTimeout, one that answers without end is read up to 64 KiB', async () => {
    const clock = fakeClock()
    const held = createServer(() => undefined)
    const endless = createServer((_req, res) => {
      res.writeHead(200)
      const chunk = Buffer.alloc(16 * 1024, 'x')
      const more = (): void => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', more)
      }
      more()
    })
    for (const s of [held, endless]) {
      await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
      servers.push(s)
    }
    const urlOf = (s: Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}/hook`
    const silent = deliveries(urlOf(held), clock, { settings: { ...SETTINGS, timeoutMs: 200 } }).webhooks
    await enqueue(silent, 'growth', STATUS)
    await waitFor('the attempt cut off', async () => (await latest(silent))?.lastError !== null)
    expect(await latest(silent)).toMatchObject({ state: 'pending', attempts: 1, lastStatus: null, lastError: 'no answer within 200ms' })
    // The platform's name not resolved: the attempt's bound holds the lookup too; no request made, tried again.
    const unresolved = deliveries(urlOf(held), clock, { settings: { ...SETTINGS, timeoutMs: 200 }, resolve: () => new Promise<string[]>(() => undefined) }).webhooks
    await enqueue(unresolved, 'growth', STATUS)
    await waitFor('the lookup cut off', async () => (await latest(unresolved))?.lastError !== null)
    expect(await latest(unresolved)).toMatchObject({ state: 'pending', attempts: 0, lastError: 'the platform\'s addresses were not resolved within 200ms' })
    const flood = deliveries(urlOf(endless), clock, { settings: { ...SETTINGS, timeoutMs: 10_000 } }).webhooks
    await enqueue(flood, 'growth', STATUS)
    await settled(flood)
    expect(await latest(flood)).toMatchObject({ state: 'delivered', attempts: 1, lastStatus: 200 })
  })

  /** A receiver on 127.0.0.1, named `localhost` in its URL, that counts the connections it is opened; `big`: its first answer has no end. */
  async function counting(big = false): Promise<{ url: string; port: number; got: string[]; connections: () => number }> {
    const got: string[] = []
    let connections = 0
    const server = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        got.push(String(req.headers['webhook-id']))
        if (!(big && got.length === 1)) return void res.writeHead(204).end()
        // An answer without end: its connection cannot carry another.
        res.writeHead(200, { 'content-type': 'text/plain' })
        const more = (): void => {
          while (!res.destroyed && res.write(Buffer.alloc(16 * 1024, 'x')));
          if (!res.destroyed) res.once('drain', more)
        }
        more()
      })
    })
    server.on('connection', () => void (connections += 1))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    servers.push(server)
    const port = (server.address() as AddressInfo).port
    return { url: `http://localhost:${port}/hook`, port, got, connections: () => connections }
  }

  /** Delivers the ends of jobs `ids` one after another, each settled before the next. */
  async function deliverEach(webhooks: WebhookDeliveries, ids: string[]): Promise<void> {
    for (const id of ids) {
      await enqueue(webhooks, 'growth', { ...STATUS, id })
      await waitFor(`the delivery of ${id} settled`, async () => ['delivered', 'failed'].includes((await webhooks.list()).find((d) => d.job === id)?.state ?? ''))
    }
  }

  it.each([
    ['reuses its connection to a receiver from one delivery to the next: three deliveries, one connection', false, 1],
    ['keeps no connection whose answer it cut at 64 KiB (one without end): the next delivery opens its own, which the one after reuses', true, 2],
  ])('%s', async (_what, endless, connections) => {
    const clock = fakeClock()
    const r = await counting(endless)
    const { webhooks } = deliveries(r.url, clock, { settings: { ...SETTINGS, hosts: ['localhost'] } })
    await deliverEach(webhooks, ['j1', 'j2', 'j3'])
    expect((await webhooks.list()).map((d) => d.state)).toEqual(['delivered', 'delivered', 'delivered'])
    expect([r.got.length, r.connections()]).toEqual([3, connections])
    await webhooks.close()
  })

  it('sends nothing over a kept connection once the platform\'s addresses are its socket: the next attempt resolves them, and is refused', async () => {
    const clock = fakeClock()
    const r = await counting()
    let platform = ['192.0.2.1']
    const { webhooks } = deliveries(r.url, clock, { settings: { ...SETTINGS, hosts: ['localhost'] }, platformUrls: [`http://platform.example.com:${r.port}`], resolve: async () => platform })
    await deliverEach(webhooks, ['j1'])
    expect(await latest(webhooks)).toMatchObject({ state: 'delivered' })
    // The platform's name now resolves to the receiver's address, at its port.
    platform = ['127.0.0.1']
    await deliverEach(webhooks, ['j2'])
    expect(await latest(webhooks)).toMatchObject({ job: 'j2', state: 'failed', attempts: 0, lastError: `refused: localhost resolves to the platform's address (127.0.0.1:${r.port})` })
    expect(r.got).toEqual(['msg_j1'])
    await webhooks.close()
  })

  it('sends nothing to the platform\'s host, nor to a host not allowed, nor for a team without a webhook', async () => {
    const clock = fakeClock()
    const r = await receiver([{ status: 204 }])
    const platform = deliveries(r.url, clock, { platformUrls: ['http://127.0.0.1:9'] }).webhooks
    await enqueue(platform, 'growth', STATUS)
    await settled(platform)
    expect(await latest(platform)).toMatchObject({ state: 'failed', attempts: 0, lastError: expect.stringMatching(/^refused: 127\.0\.0\.1 is the platform's own host, not a receiver: .*; on the platform's own machine, name the receiver otherwise: http:\/\/localhost:<its port>\/…, with localhost in jobs\.webhookHosts$/) })
    const off = deliveries(r.url, clock, { settings: { ...SETTINGS, hosts: [] } }).webhooks
    await enqueue(off, 'growth', STATUS)
    await settled(off)
    expect(await latest(off)).toMatchObject({ state: 'failed', attempts: 0 })
    const other = deliveries(r.url, clock).webhooks
    await enqueue(other, 'another-team', STATUS)
    expect(await other.list()).toEqual([])
    expect(r.got).toHaveLength(0)
  })
})

const ADMIN_TOKEN = 'job-webhooks-admin-token-0123456789'

/** TEAMS_YAML with team `all` pushing to `url` (named `localhost`: the sandbox, the platform, is at 127.0.0.1), which the operator allows. */
function webhookYaml(url: string, jobs: Record<string, unknown> = {}): string {
  const team = TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${url}", secret: "${SECRET}" }\n`)
  return `${team}jobs:\n  webhookHosts: [localhost]\n${Object.entries(jobs).map(([k, v]) => `  ${k}: ${String(v)}\n`).join('')}`
}

const listDeliveries = async (gw: { admin: { inject: (o: object) => Promise<{ json(): unknown }> } }) =>
  ((await gw.admin.inject({ method: 'GET', url: '/admin/jobs', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json() as { deliveries: { job: string; state: string }[] }).deliveries

describe('a gateway pushing its ended jobs (demo mode, the sandbox over real HTTP)', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()

  it('POSTs the ended job\'s status as GET /api/v1/jobs/{id} answers it, with no token, key or secret; GET /admin/jobs lists the delivery', async () => {
    const r = await receiver([{ status: 204 }])
    // The sandbox is the platform at 127.0.0.1: the receiver is named `localhost`, which the
    // operator allows; its URL carries the receiver's own token, which a viewer never reads.
    const url = `${r.url.replace('127.0.0.1', 'localhost')}?token=receivers-own#part`
    const yaml = webhookYaml(url)
    const platformToken = sandbox.issueToken()
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: platformToken, ADMIN_TOKEN }, yaml)))
    const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    await waitFor('the job pushed to the receiver', () => r.got.length === 1)
    const [got] = r.got as [Received]
    expect(got.path).toBe('/hook?token=receivers-own')
    const status = await (await fetch(`${gw.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.all } })).json()
    expect(JSON.parse(got.body)).toEqual(status)
    expect(JSON.parse(got.body)).toMatchObject({ id, state: 'done' })
    const ts = got.headers['webhook-timestamp'] as string
    const expected = createHmac('sha256', Buffer.from(SECRET.slice('whsec_'.length), 'base64')).update(`msg_${id}.${ts}.${got.body}`).digest('base64')
    expect(got.headers['webhook-signature']).toBe(`v1,${expected}`)
    for (const secret of [platformToken, KEYS.all, SECRET, ADMIN_TOKEN]) expect(JSON.stringify(got)).not.toContain(secret)

    const listed = await gw.admin.inject({ method: 'GET', url: '/admin/jobs', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(listed.statusCode).toBe(200)
    await waitFor('the delivery settled', () => gw.admin.inject({ method: 'GET', url: '/admin/jobs', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then((res) => (res.json() as { deliveries: { state: string }[] }).deliveries[0]?.state === 'delivered'))
    const answered = (await gw.admin.inject({ method: 'GET', url: '/admin/jobs', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json() as { deliveries: unknown[] }
    expect(answered.deliveries).toEqual([expect.objectContaining({ id: `msg_${id}`, job: id, team: 'all', state: 'delivered', jobState: 'done', url: new URL(r.url.replace('127.0.0.1', 'localhost')).origin, attempts: 1, lastStatus: 204 })])
    expect(JSON.stringify(answered)).not.toContain(SECRET)
    expect(JSON.stringify(answered)).not.toContain('receivers-own')
    expect((await gw.admin.inject({ method: 'GET', url: '/admin/jobs' })).statusCode).toBe(401)
    expect(gw.logs.text()).not.toContain(SECRET)
    expect(gw.logs.text()).toContain('report job pushed to its team')
  })

  it('pushes a job the platform refused (its 422) with the platform\'s status, GW_PLATFORM_ANSWER, not a 502; the pushed body holds no answer body', async () => {
    const r = await receiver([{ status: 204 }])
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, webhookYaml(r.url.replace('127.0.0.1', 'localhost')))))
    const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&spentBased=EUR&dateFrom=2025-02-01&dateTo=2025-12-31`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    await waitFor('the job pushed to the receiver', () => r.got.length === 1)
    const pushed = JSON.parse((r.got[0] as Received).body) as JobStatus
    expect(pushed).toEqual(await (await fetch(`${gw.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.all } })).json())
    expect(pushed).toMatchObject({ id, state: 'failed', error: { code: 'GW_PLATFORM_ANSWER', statusCode: 422 }, result: `/api/v1/jobs/${id}/result` })
    expect(Object.keys(pushed.error ?? {}).sort()).toEqual(['code', 'message', 'statusCode'])
    // The receiver reads why it failed where the push says: the platform's own answer.
    expect((await fetch(`${gw.url}${pushed.result ?? ''}`, { headers: { 'x-api-key': KEYS.all } })).status).toBe(422)
  })

  it('pushes a job whose result a purge reached while its call was at the platform as GET /api/v1/jobs/{id} answers it: expired, no result to follow', async () => {
    const r = await receiver([{ status: 204 }])
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, webhookYaml(r.url.replace('127.0.0.1', 'localhost')))))
    sandbox.clearRequests()
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    await waitFor('the job\'s call at the platform', () => sandbox.countRequests((req) => req.path === REPORT_PATH) === 1)
    const purge = await gw.admin.inject({ method: 'DELETE', url: '/admin/cache?advertiserId=101', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(purge.statusCode).toBe(200)
    sandbox.releaseHeld()

    await waitFor('the job pushed to the receiver', () => r.got.length === 1)
    const pushed = JSON.parse((r.got[0] as Received).body) as JobStatus
    expect(pushed).toEqual(await (await fetch(`${gw.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.all } })).json())
    expect(pushed).toMatchObject({ id, state: 'expired', result: null })
    expect((await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })).status).toBe(410)
  })
  it('pushes a job whose platform answer carried the token back in raw deflate as GW_UPSTREAM: its status, result, push and log hold nothing of the token', async () => {
    const r = await receiver([{ status: 204 }])
    const platformToken = sandbox.issueToken()
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: platformToken, ADMIN_TOKEN }, webhookYaml(r.url.replace('127.0.0.1', 'localhost')))))
    const body = deflateRawSync(JSON.stringify({ message: 'The given data was invalid.', headers: { authorization: [`Bearer ${platformToken}`] } }))
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'raw', answer: `HTTP/1.1 422 Unprocessable Content\r\ncontent-type: application/json\r\ncontent-encoding: deflate\r\ncontent-length: ${body.length}\r\n\r\n${body.toString('latin1')}`, times: 1 })
    const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-03-01&dateTo=2025-03-31`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    await waitFor('the job pushed to the receiver', () => r.got.length === 1)
    const pushed = JSON.parse((r.got[0] as Received).body) as JobStatus
    expect(pushed).toMatchObject({ id, state: 'failed', error: { code: 'GW_UPSTREAM', statusCode: 502 } })
    const result = await fetch(`${gw.url}/api/v1/jobs/${id}/result`, { headers: { 'x-api-key': KEYS.all } })
    const seen = [JSON.stringify(r.got), Buffer.from(await result.arrayBuffer()).toString('latin1'), gw.logs.text()]
    for (const text of seen) expect(text).not.toContain(platformToken)
    expect(seen[1]).not.toContain(body.subarray(0, 24).toString('latin1'))
  })

  // A short outage of the platform (a deploy, a restart): a try that got no answer or a 5xx
  // gives the job back, tried again after the pauses' backoff (1 s, 2 s…); its status says
  // so while it waits, and its webhook fires once, at its end.
  for (const [what, failure] of [
    ['answers 503', { kind: 'status', status: 503 }],
    ['resets every connection (no answer)', { kind: 'reset' }],
  ] as const) {
    it(`a job rides out a platform that ${what} then recovers: queued with its retry said, tried again 1 s then 2 s later, done, pushed once`, async () => {
      const r = await receiver([{ status: 204 }])
      const clock = fakeClock()
      const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, webhookYaml(r.url.replace('127.0.0.1', 'localhost'), { retries: 3 })), { clock: wokenBy(clock) }))
      const statusOf = async (id: string) => (await (await fetch(`${gw.url}/api/v1/jobs/${id}`, { headers: { 'x-api-key': KEYS.all } })).json()) as JobStatus
      sandbox.setRouteFailure(REPORT_PATH, failure)
      const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-04-01&dateTo=2025-04-30`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
      expect(asked.status).toBe(202)
      const { id } = (await asked.json()) as { id: string }
      // Each try is due at the time the clock is moved to, its timer run by the move (`wokenBy`).
      for (const [tries, waitMs] of [[1, 1000], [2, 2000]] as const) {
        await waitFor(`try ${tries} given back`, async () => (await statusOf(id)).retry?.tries === tries)
        expect(await statusOf(id)).toMatchObject({ state: 'queued', endedAt: null, error: null, result: null, retry: { tries, nextTryAt: new Date(clock.now() + waitMs).toISOString(), lastError: { code: 'GW_UPSTREAM', statusCode: 502 } } })
        expect(r.got).toHaveLength(0)
        if (tries === 2) sandbox.clearRouteFailures()
        clock.advance(waitMs)
      }
      await waitFor('the job pushed to the receiver', () => r.got.length === 1)
      const pushed = JSON.parse((r.got[0] as Received).body) as JobStatus
      expect(pushed).toMatchObject({ id, state: 'done', error: null, retry: null })
      expect(pushed).toEqual(await statusOf(id))
      expect(gw.logs.text()).toContain('report job got no answer or a 5xx from the platform: tried again later')
      const delivered = () => listDeliveries(gw).then((ds) => ds.filter((d) => d.job === id))
      await waitFor('the delivery settled', async () => (await delivered())[0]?.state === 'delivered')
      expect(await delivered()).toHaveLength(1)
    })
  }

  it('a job the platform refused with a 4xx fails at once, tried once, pushed once: a later try would be refused the same way', async () => {
    const r = await receiver([{ status: 204 }])
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, webhookYaml(r.url.replace('127.0.0.1', 'localhost'), { retries: 3 }))))
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'status', status: 400, body: { message: 'bad' } })
    const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-05-01&dateTo=2025-05-31`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    const { id } = (await asked.json()) as { id: string }
    await waitFor('the job pushed to the receiver', () => r.got.length === 1)
    expect(JSON.parse((r.got[0] as Received).body)).toMatchObject({ id, state: 'failed', error: { code: 'GW_PLATFORM_ANSWER', statusCode: 400 }, retry: null })
    expect(sandbox.countRequests((q) => q.path === REPORT_PATH)).toBe(1)
  })

  // The push is the job's status as GET /api/v1/jobs/{id} answers it: its finality is that
  // of its figures' fetch (figuresAt), not of its end, which comes after midnight here.
  it('pushes the finality of the copy a job answered with, fetched before the midnight it ended after', async () => {
    const r = await receiver([{ status: 204 }])
    const clock = fakeClock(Date.parse('2026-03-10T23:59:50Z'))
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, webhookYaml(r.url.replace('127.0.0.1', 'localhost'), { perReplica: 1 })), { clock: onRealTimers(clock.now) }))
    const ask = async (query: string) => ((await (await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })).json()) as { id: string }).id
    const year = 'advertiserId=101&byDate=1&dateFrom=2025-01-01&dateTo=2025-12-31'
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    try {
      await ask('advertiserId=102&dateFrom=2025-01-01&dateTo=2025-06-30')
      await waitFor('the first job at the platform', () => sandbox.countRequests((q) => q.path === REPORT_PATH) === 1)
      // One job runs at a time (perReplica 1): this one waits behind the held one, and a read fills the copy it answers with.
      const id = await ask(year)
      const read = await fetch(`${gw.url}${REPORT_PATH}?${year}`, { headers: { 'x-api-key': KEYS.growth } })
      expect([read.status, read.headers.get('x-cache')]).toEqual([200, 'MISS'])
      clock.advance(20_000)
      sandbox.releaseHeld()
      const pushedOf = () => r.got.map((g) => JSON.parse(g.body) as JobStatus).find((s) => s.id === id)
      await waitFor(`job ${id} pushed`, () => pushedOf() !== undefined)
      const pushed = pushedOf() as JobStatus
      expect([pushed.tookSeconds, pushed.endedAt?.slice(0, 10)]).toEqual([0, '2026-03-11'])
      expect([pushed.settledThrough, pushed.provisionalDays]).toEqual([read.headers.get('report-settled-through'), read.headers.get('report-provisional-days')])
    } finally {
      sandbox.releaseHeld()
    }
  })
})

const { available } = redisAvailability('job webhooks across replicas')

describe.skipIf(!available)('job webhooks across replicas (one Redis)', () => {
  const sandbox = useSandbox()
  const { server: redis } = useRedis()
  const gateways = useGateways()

  it('each ended job is pushed once, however the two replicas share the jobs; both list every delivery', async () => {
    const r = await receiver([{ status: 204 }])
    const token = sandbox.issueToken()
    const config = () => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: token, REDIS_URL: redis.url, ADMIN_TOKEN }, webhookYaml(r.url.replace('127.0.0.1', 'localhost'), { poll: '100ms', perReplica: 1 }))
    const one = await listen(await gateways.build(config()))
    const two = await listen(await gateways.build(config()))
    const ids: string[] = []
    for (const [i, gw] of [one, two, one, two].entries()) {
      const res = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2025-0${i + 1}-01&dateTo=2025-0${i + 1}-28`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
      expect(res.status).toBe(202)
      ids.push(((await res.json()) as { id: string }).id)
    }
    // One outbox: either replica lists every delivery, once.
    const listed = () => listDeliveries(one)
    await waitFor('every job pushed and its delivery settled', async () => (await listed()).filter((d) => d.state === 'delivered').length === ids.length, testTimeLeft(), 20)
    expect((await listed()).map((d) => d.job).sort()).toEqual([...ids].sort())
    expect(await listDeliveries(two)).toEqual(await listed())
    expect(r.got.map((g) => g.headers['webhook-id']).sort()).toEqual(ids.map((id) => `msg_${id}`).sort())
  })
})

describe.skipIf(!available)('a job\'s end and its delivery on one Redis', () => {
  const { server: redis } = useRedis()
  const clients: Redis[] = []
  afterEach(() => {
    for (const c of clients.splice(0)) c.disconnect()
  })

  const PREFIX = 'outbox-gap:'
  const LEASE = 15_000
  const BOUNDS: OutboxBounds = { keepMs: 3_600_000, lifeMs: 7_200_000, perTeam: 100 }
  const report = canonicalGetReport('/api/v1/report/campaigns/get', 'advertiserId=101&dateFrom=2025-01-01&dateTo=2025-12-31', { maxRangeDays: 400 })
  const finality = { settledThrough: '2025-12-29', provisionalDays: 'none' as const }

  /** One replica's jobs and outbox, on its own connection to the one Redis. */
  async function replica(name: string, url: string, clock: FakeClock): Promise<{ client: Redis; jobs: RedisJobStore; outbox: RedisDeliveryStore; webhooks: WebhookDeliveries }> {
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1, lazyConnect: true })
    client.on('error', () => undefined)
    await client.connect()
    clients.push(client)
    const seal = new RedisSeal('outbox-gap-test-secret-0123456789')
    const outbox = new RedisDeliveryStore({ redis: client, seal, prefix: PREFIX, bounds: BOUNDS, onUnverified: () => undefined })
    const jobs = new RedisJobStore({ redis: client, seal, prefix: PREFIX, maxEntryBytes: 1024 * 1024, onUnverified: () => undefined, outbox })
    const { webhooks } = deliveries(url, clock, { store: outbox, replica: name })
    return { client, jobs, outbox, webhooks }
  }

  /** `store` of a replica that dies (its connection to Redis cut) as soon as the store took its end of a job. */
  function dyingAtTheEnd(store: JobStore, client: Redis): JobStore {
    const swap = async (...args: Parameters<JobStore['swap']>): Promise<boolean> => {
      const taken = await store.swap(...args)
      if (taken && ended(args[1])) client.disconnect()
      return taken
    }
    return new Proxy(store, { get: (target, name) => (name === 'swap' ? swap : (Reflect.get(target, name) as (...a: unknown[]) => unknown).bind(target)) })
  }

  it('a replica that dies right after the store took its end of a job: another replica pushes the job once, msg_<job>', async () => {
    const r = await receiver([{ status: 204 }])
    const clock = fakeClock()
    const a = await replica('a', r.url, clock)
    const b = await replica('b', r.url, clock)
    const job = newJob({ id: 'ended-then-died', team: 'growth', credential: 'default', key: 'k', report, expectedSeconds: null }, clock.now())
    await a.jobs.add(job, 10, clock.now())
    const identity = Buffer.from('{"data":[]}')
    const now = clock.now()
    const entry = { contentType: 'application/json', gzip: gzipSync(identity), identity, fetchedAt: now, freshUntil: now + 60_000, staleUntil: now + 120_000, errorUntil: now + 180_000, advertiserIds: [101], etag: etagOf(identity) }
    const runner = new JobRunner({
      store: dyingAtTheEnd(a.jobs, a.client),
      reads: { read: async () => ({ kind: 'entry', entry, status: 'MISS' }) as never },
      provider: () => ({ name: 'default' }) as TokenProvider,
      settings: { maxOpenPerTeam: 10, maxKeptPerTeam: 10_000, resultBytesPerTeam: 1024 * 1024, keepMs: 3_600_000, leaseMs: LEASE, pollMs: 1000, perReplica: 1, retryMs: 5000, retries: 10, maxPauseMs: 60_000 },
      clock,
      log: { warn: (...a: unknown[]) => console.log('WARNDBG', JSON.stringify(a).slice(0, 600)), info: () => undefined },
      runner: 'a',
      maxEntryBytes: 1024 * 1024,
      failures: { warn: () => undefined },
      pushOf: (ended: Job, now: number) => a.webhooks.deliveryOf(ended.team, jobStatus(ended, null, now, finality), now),
      onEnded: () => a.webhooks.poke(),
      teams: new TeamDirectory([]),
    })
    runner.start()
    await waitFor('the job ended in Redis', async () => (await b.jobs.get(job.id))?.state === 'done')
    a.webhooks.stop()
    // Replica b looks at the outbox at least once a lease; the clock stands still once b holds
    // the delivery, so that no lease of its runs out while its attempt is on its way.
    await waitFor('replica b to claim the delivery', async () => {
      const delivery = await b.outbox.get(`msg_${job.id}`)
      if (delivery?.runner === 'b' || (delivery?.tries ?? 0) > 0 || r.got.length > 0) return true
      clock.advance(LEASE)
      return false
    })
    await waitFor('its delivery settled', async () => (await b.outbox.get(`msg_${job.id}`))?.state === 'delivered')
    clock.advance(10 * LEASE)
    expect(r.got.map((g) => g.headers['webhook-id'])).toEqual([`msg_${job.id}`])
    expect(JSON.parse((r.got[0] as Received).body)).toMatchObject({ id: job.id, state: 'done' })
    expect((await b.outbox.get(`msg_${job.id}`))?.attempts.map((x) => x.replica)).toEqual(['b'])
    b.webhooks.stop()
  })

  it('a delivery an earlier build recorded with its webhook\'s whole URL (the receiver\'s token in its query): listed as its origin alone, pushed to the team\'s webhook, and kept without the token from its claim on', async () => {
    const r = await receiver([{ status: 204 }])
    const clock = fakeClock()
    const token = `tok-${randomBytes(12).toString('hex')}`
    const whole = `${r.url}?tok=${token}`
    const b = await replica('b', whole, clock)
    // As an earlier build kept it: the whole URL, a retry due in a second.
    const earlier: Delivery = { ...newDelivery({ job: 'recorded-earlier', team: 'growth', jobState: 'done', url: r.url, body: JSON.stringify(STATUS) }, clock.now()), url: whole, nextAttemptAt: clock.now() + 1000 }
    expect(await b.outbox.add(earlier, clock.now())).toBe(true)
    const key = redisKey.delivery(PREFIX, earlier.id)
    expect(await b.client.get(key)).toContain(token)
    expect(await latest(b.webhooks)).toMatchObject({ id: earlier.id, state: 'pending', url: new URL(r.url).origin })
    clock.advance(1000)
    b.webhooks.poke()
    await waitFor('the delivery made', async () => (await b.outbox.get(earlier.id))?.state === 'delivered')
    expect(r.got.map((g) => g.path)).toEqual([`/hook?tok=${token}`])
    expect(await b.client.get(key)).not.toContain(token)
    expect(await latest(b.webhooks)).toMatchObject({ id: earlier.id, state: 'delivered', url: new URL(r.url).origin })
    b.webhooks.stop()
  })
})
