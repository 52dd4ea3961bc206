import { randomBytes } from 'node:crypto'
import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import type { Redis } from 'ioredis'
import { KEYS, listen, REPORT_PATH, TEAMS_YAML, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// A team's webhook aimed where no delivery may go (docs/jobs.md, "Pushed when done"): the
// platform's own socket under another name, an address in another spelling, a user in the
// URL, another scheme. The sandbox is the platform at 127.0.0.1; the deliveries are made
// by a real gateway on a real Redis.

// A fixed key holding `+` and `/`: the spellings a caller's text may carry it in (as it is, a
// `+` read as a space, percent-encoded) are the same on every run.
const SECRET = `whsec_${Buffer.concat([Buffer.from('webhook-attacks-k-'), Buffer.from([0xfb, 0xef, 0xbe, 0xff, 0xff, 0xff])]).toString('base64')}`
// Another team's: each team's deliveries are signed with a key of its own.
const OTHER_SECRET = `whsec_${Buffer.from('webhook-attacks-other-team-key').toString('base64')}`
const ADMIN_TOKEN = 'webhook-attacks-admin-token-0123456789'

function webhookYaml(url: string, hosts: string[]): string {
  const team = TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${url}", secret: "${SECRET}" }\n`)
  return `${team}jobs:\n  webhookHosts: [${hosts.map((h) => JSON.stringify(h)).join(', ')}]\n`
}

/** Every value Redis holds, of every key and type, as text. */
async function everyValue(client: Redis): Promise<string[]> {
  const values: string[] = []
  for (const key of await client.keys('*')) {
    const type = await client.type(key)
    if (type === 'string') values.push((await client.getBuffer(key))?.toString('latin1') ?? '')
    else if (type === 'zset') values.push(...(await client.zrange(key, 0, -1)))
    else if (type === 'hash') values.push(...Object.entries(await client.hgetall(key)).flat())
    else if (type === 'set') values.push(...(await client.smembers(key)))
    else if (type === 'list') values.push(...(await client.lrange(key, 0, -1)))
    values.push(key)
  }
  return values
}

describe('webhooks aimed at what they may not reach', () => {
  const sandbox = useSandbox()
  const { server: redis, client: redisClient } = useRedis()
  const gateways = useGateways()
  const receivers: Server[] = []
  afterEach(async () => {
    for (const s of receivers.splice(0)) {
      s.closeAllConnections()
      await new Promise((resolve) => s.close(resolve))
    }
  })

  it('a webhook host that resolves to the platform\'s address and port gets no delivery: refused, final, nothing reaches the platform', async () => {
    const port = new URL(sandbox.url).port
    // `localhost` is allowed and is not the platform's host name, but it is its address.
    const yaml = webhookYaml(`http://localhost:${port}/api/v1/campaign/banner/create`, ['localhost'])
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, ADMIN_TOKEN }, yaml)))
    const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-01-01&dateTo=2025-01-31`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const listed = async () => ((await gw.admin.inject({ method: 'GET', url: '/admin/jobs', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json() as { deliveries: { state: string; attempts: number; lastError: string | null }[] }).deliveries
    await waitFor('the delivery settled', async () => ['failed', 'delivered'].includes((await listed())[0]?.state ?? ''), testTimeLeft(), 20)
    expect((await listed())[0]).toMatchObject({ state: 'failed', attempts: 0, lastError: expect.stringMatching(/^refused: localhost resolves to the platform's address/) })
    expect(sandbox.requests.filter((r) => r.path === '/api/v1/campaign/banner/create')).toEqual([])
  })

  it('a webhook at this host\'s other addresses (0.0.0.0, any loopback) at the platform\'s port gets no delivery when the platform is on this host: refused, final', async () => {
    const port = new URL(sandbox.url).port
    // The sandbox listens on 127.0.0.1; a connection to 0.0.0.0 reaches it on Linux.
    const yaml = webhookYaml(`http://0.0.0.0:${port}/api/v1/campaign/banner/create`, ['0.0.0.0'])
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, ADMIN_TOKEN }, yaml)))
    const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-03-01&dateTo=2025-03-31`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const listed = async () => ((await gw.admin.inject({ method: 'GET', url: '/admin/jobs', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json() as { deliveries: { state: string; attempts: number; lastError: string | null }[] }).deliveries
    await waitFor('the delivery settled', async () => ['failed', 'delivered'].includes((await listed())[0]?.state ?? ''), testTimeLeft(), 20)
    expect((await listed())[0]).toMatchObject({ state: 'failed', attempts: 0, lastError: expect.stringMatching(/^refused: 0\.0\.0\.0 resolves to the platform's address/) })
    expect(sandbox.requests.filter((r) => r.path === '/api/v1/campaign/banner/create')).toEqual([])
  })

  // Oracle Cloud's instance metadata over IPv6, Akamai's (Linode's) metadata service over
  // IPv6 and Alibaba Cloud's instance metadata over IPv6: each outside link-local, where a
  // name in the allow-list whose DNS a team controls could point as well as its literal.
  it('a webhook at a cloud\'s metadata service over IPv6 (Oracle Cloud, Akamai, Alibaba Cloud) gets no delivery: refused, final, no connection made', async () => {
    for (const [i, address] of ['fd00:c1::a9fe:a9fe', 'fd00:a9fe:a9fe::1', 'fd00:100::100:200'].entries()) {
      const yaml = `${webhookYaml(`http://[${address}]/hook`, [`[${address}]`])}  webhookTimeout: 2s\n`
      const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, ADMIN_TOKEN }, yaml)))
      const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-0${i + 4}-01&dateTo=2025-0${i + 4}-28`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
      expect(asked.status).toBe(202)
      const listed = async () => ((await gw.admin.inject({ method: 'GET', url: '/admin/jobs', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json() as { deliveries: { url: string; state: string; attempts: number; lastError: string | null }[] }).deliveries.filter((d) => d.url === `http://[${address}]`)
      await waitFor('the first attempt recorded', async () => ((await listed())[0]?.lastError ?? null) !== null, testTimeLeft(), 20)
      expect((await listed())[0], address).toMatchObject({ state: 'failed', attempts: 0, lastError: `refused: [${address}] resolves to a cloud's metadata or credential service (${address}), never a receiver` })
    }
  })

  it('keeps no receiver token in Redis nor shows one to a viewer: a delivery\'s record and GET /admin/jobs hold its webhook\'s origin only, not its path (Slack\'s, Discord\'s, Zapier\'s hooks carry their token there) nor its query; the receiver gets both all the same', async () => {
    const inPath = `path${randomBytes(12).toString('hex')}`
    const inQuery = `tok${randomBytes(12).toString('hex')}`
    const got: string[] = []
    const server = createServer((req, res) => {
      got.push(req.url ?? '')
      res.writeHead(204).end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    receivers.push(server)
    const origin = `http://localhost:${(server.address() as AddressInfo).port}`
    const hook = `/services/T0001/B0001/${inPath}?tok=${inQuery}`
    const viewer = 'webhook-attacks-viewer-token-0123456789'
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, ADMIN_TOKEN, ADMIN_VIEWER_TOKEN: viewer }
    const gw = await listen(await gateways.build(testConfig(env, webhookYaml(`${origin}${hook}`, ['localhost']))))
    const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-02-01&dateTo=2025-02-28`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const jobs = async () => (await gw.admin.inject({ method: 'GET', url: '/admin/jobs', headers: { authorization: `Bearer ${viewer}` } })).body
    const listed = async () => (JSON.parse(await jobs()) as { deliveries: { state: string; url: string }[] }).deliveries
    await waitFor('the delivery made', async () => (await listed())[0]?.state === 'delivered', testTimeLeft(), 20)
    expect(got).toEqual([hook])
    expect((await listed())[0]?.url).toBe(origin)
    for (const secret of [inPath, inQuery]) expect(await jobs()).not.toContain(secret)
    const stored = await everyValue(redisClient)
    expect(stored.filter((v) => v.includes(inPath) || v.includes(inQuery))).toEqual([])
    expect(stored.some((v) => v.includes(`"url":"${origin}"`))).toBe(true)
  })

  it('scrubs the webhook secret\'s key (the base64 after whsec_, the HMAC key itself) from every log line as it scrubs the whole secret', async () => {
    const yaml = webhookYaml('http://hooks.example.org/jobs', ['hooks.example.org'])
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), LOG_LEVEL: 'trace' }, yaml))
    const key = SECRET.slice('whsec_'.length)
    for (const spelling of [key, encodeURIComponent(key)]) {
      const res = await gw.proxy.inject({ method: 'GET', url: `/api/v1/campaign/${encodeURIComponent(spelling)}`, headers: { 'x-api-key': KEYS.all, 'user-agent': `receiver-dev ${spelling}` } })
      expect(res.statusCode).toBeLessThan(500)
    }
    const text = gw.logs.text()
    // Each user-agent logged with the key redacted: the key alone, or the whole text where only
    // decoding shows the key (a `+`, a percent-escape).
    expect(text.match(/"userAgent":"(receiver-dev )?\[REDACTED\]"/g)?.length ?? 0).toBeGreaterThanOrEqual(2)
    expect(text).not.toContain(key)
    expect(text).not.toContain(encodeURIComponent(key))
  })

  it('refuses at load a webhook URL with a user, another scheme, or the platform\'s host in another spelling', () => {
    const port = new URL(sandbox.url).port
    const refused: [string, string[]][] = [
      [`http://user:pw@localhost:${port}/hook`, ['localhost']],
      ['ftp://localhost/hook', ['localhost']],
      ['file:///etc/passwd', ['localhost']],
      [`http://2130706433:${port}/hook`, ['2130706433', '127.0.0.1']],
      [`http://0x7f.0.0.1:${port}/hook`, ['0x7f.0.0.1', '127.0.0.1']],
      [`http://0177.0.0.1:${port}/hook`, ['0177.0.0.1', '127.0.0.1']],
      [`http://127.1:${port}/hook`, ['127.1', '127.0.0.1']],
      [`http://127.0.0.1.:${port}/hook`, ['127.0.0.1.', '127.0.0.1']],
      ['http://localhost./hook', ['localhost']],
      ['http://hooks.example.org@localhost/hook', ['hooks.example.org']],
    ]
    for (const [url, hosts] of refused) {
      expect(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: 'x'.repeat(40) }, webhookYaml(url, hosts)), url).toThrow(/webhook\.url/)
    }
    // An IPv4-mapped spelling a URL writes otherwise ([::ffff:7f00:1]) is no entry of the list;
    // listed as a URL writes it, its connection to the platform's socket is refused (platformSockets).
    expect(() => testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: 'x'.repeat(40) }, webhookYaml(`http://[::ffff:127.0.0.1]:${port}/hook`, ['[::ffff:127.0.0.1]']))).toThrow(/jobs\.webhookHosts\.0: must be a host as a URL writes it .*\(got "\[::ffff:127\.0\.0\.1\]"; a URL writes it \[::ffff:7f00:1\]\)/)
  })

  // A team's receiver holds its key: were another team's deliveries signed with it, that
  // team's receiver would take a push the first forged (a job's end it never had).
  it('refuses at load two teams whose deliveries one key signs, in any spelling of its base64, naming neither the key nor its spelling', () => {
    const key = Buffer.from('webhook-attacks-shared-k').subarray(0, 19)
    const padded = `whsec_${key.toString('base64')}`
    // The last character before `==` carries 2 bits of the key and 4 that decoders drop: another text, the same key.
    const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
    const last = padded.length - 3
    const otherBits = `${padded.slice(0, last)}${BASE64[BASE64.indexOf(padded[last]!) ^ 1]}${padded.slice(last + 1)}`
    const spellings = [
      [padded, padded],
      [padded, otherBits],
    ]
    for (const [a, b] of spellings) {
      const yaml = `teams:\n  a:\n    keys: []\n    advertisers: [101]\n    webhook: { url: "https://hooks.example.org/a", secret: "${a}" }\n  b:\n    keys: []\n    advertisers: [102]\n    webhook: { url: "https://hooks.example.org/b", secret: "${b}" }\njobs:\n  webhookHosts: ["hooks.example.org"]\n`
      let thrown = ''
      try {
        testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: 'x'.repeat(40) }, yaml)
      } catch (err) {
        thrown = (err as Error).message
      }
      expect(thrown, b).toMatch(/teams\.b\.webhook\.secret: the key of team a's webhook secret/)
      expect(thrown).not.toContain(key.toString('base64').replace(/=+$/, ''))
    }
  })
})

describe('a slow receiver', () => {
  const sandbox = useSandbox()
  const gateways = useGateways()
  const held: ServerResponse[] = []
  const servers: Server[] = []
  afterEach(async () => {
    for (const res of held.splice(0)) res.destroy()
    for (const s of servers.splice(0)) {
      s.closeAllConnections()
      await new Promise((resolve) => s.close(resolve))
    }
  })

  /** A receiver on 127.0.0.1: `answer` false holds every request unanswered. */
  async function receiver(answer: boolean): Promise<{ url: string; got: string[] }> {
    const got: string[] = []
    const server = createServer((req, res) => {
      got.push(String(req.headers['webhook-id']))
      if (answer) res.writeHead(204).end()
      else held.push(res)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    servers.push(server)
    return { url: `http://localhost:${(server.address() as AddressInfo).port}/hook`, got }
  }

  /**
   * A gateway where team `all`'s receiver never answers (each attempt held a minute) and team
   * `growth`'s answers at once; `ask` begins a report job of a team from `from` (a date).
   */
  async function slowAndQuick(maxOpenPerTeam: number) {
    const slow = await receiver(false)
    const quick = await receiver(true)
    const yaml = `${TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${slow.url}", secret: "${SECRET}" }\n`).replace('    advertisers: [101, 102]\n', `    advertisers: [101, 102]\n    webhook: { url: "${quick.url}", secret: "${OTHER_SECRET}" }\n`)}jobs:\n  webhookHosts: [localhost]\n  webhookTimeout: 1m\n  maxOpenPerTeam: ${maxOpenPerTeam}\n`
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, yaml)))
    const ask = async (key: string, from: string) => {
      const res = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=${from}&dateTo=2025-09-28`, { headers: { 'x-api-key': key, prefer: 'respond-async' } })
      expect(res.status).toBe(202)
    }
    return { slow, quick, gw, ask }
  }

  /** The `n`th day from 2025-01-01, as a report's date. */
  const day = (n: number) => new Date(Date.UTC(2025, 0, 1) + n * 86_400_000).toISOString().slice(0, 10)

  it('holds none of another team\'s deliveries: a team whose receiver never answers leaves room for the others\'', async () => {
    const { slow, quick, ask } = await slowAndQuick(50)
    for (let n = 0; n < 12; n++) await ask(KEYS.all, day(n))
    await waitFor('the slow receiver holding attempts', () => slow.got.length >= 2)
    await ask(KEYS.growth, day(200))
    // Pushed while every attempt to the slow receiver is still held (a minute each).
    await waitFor('the quick team\'s delivery', () => quick.got.length === 1, testTimeLeft(), 20)
  })

  it('holds none of another team\'s deliveries behind a backlog of a hundred of its own: the other team\'s push is found past them', async () => {
    const { slow, quick, gw, ask } = await slowAndQuick(200)
    for (let n = 0; n < 100; n++) await ask(KEYS.all, day(n))
    const pending = async () => ((await gw.admin.inject({ method: 'GET', url: '/admin/jobs', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json() as { deliveries: { state: string }[] }).deliveries.filter((d) => d.state === 'pending').length
    await waitFor('the slow team\'s hundred deliveries pending, two held', async () => slow.got.length >= 2 && (await pending()) === 100, testTimeLeft(), 20)
    await ask(KEYS.growth, day(200))
    // Pushed while every attempt to the slow receiver is still held (a minute each), its 98 others due before it.
    await waitFor('the quick team\'s delivery', () => quick.got.length === 1, testTimeLeft(), 20)
    expect(slow.got.length).toBe(2)
  })

  it('ends an attempt whose receiver answers its head, then trickles its body, at webhookTimeout: its connection closed, the push delivered on its 2xx', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      const drip = setInterval(() => res.write('.'), 20)
      res.on('close', () => clearInterval(drip))
      held.push(res)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    servers.push(server)
    const url = `http://localhost:${(server.address() as AddressInfo).port}/hook`
    const yaml = `${TEAMS_YAML.replace('    refresh: true\n', `    refresh: true\n    webhook: { url: "${url}", secret: "${SECRET}" }\n`)}jobs:\n  webhookHosts: [localhost]\n  webhookTimeout: 300ms\n`
    const gw = await listen(await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }, yaml)))
    const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2025-08-01&dateTo=2025-08-28`, { headers: { 'x-api-key': KEYS.all, prefer: 'respond-async' } })
    expect(asked.status).toBe(202)
    const first = async () => ((await gw.admin.inject({ method: 'GET', url: '/admin/jobs', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json() as { deliveries: { lastError: string | null; state: string }[] }).deliveries[0]
    await waitFor('the first attempt recorded', async () => (await first())?.state === 'delivered', testTimeLeft(), 20)
    expect(await first()).toMatchObject({ state: 'delivered', attempts: 1, lastStatus: 200, lastError: null })
    // The bound held: the trickle's connection was closed by the gateway, not read on.
    await waitFor('the trickling answer closed', () => held.length === 1 && (held[0] as ServerResponse).destroyed, testTimeLeft(), 20)
  })
})
