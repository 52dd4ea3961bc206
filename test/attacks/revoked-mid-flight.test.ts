import { mkdtempSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { loadConfig } from '../../src/config.js'
import { CREDENTIAL_KEYS, credentialTeams, KEYS, listen, REPORT_PATH, TEAMS_YAML, TEST_GATEWAY_SECRET, teamsYamlWith, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { waitFor } from '../helpers/wait.js'
import { seatsOf } from '../helpers/governors.js'
import { ADMIN_TOKEN } from './attack-gateway.js'

// A key revoked (taken out of the teams file, the reload acknowledged) while a call of
// its is under way: a report read held at the platform, a read joining another's fill, a
// write whose body is still coming or that waits for a seat, a job status held by ?wait.
// The promise is that a removed key is refused; a call admitted before the reload and
// answered after it was answered in full, and a write admitted before it was sent after it.

const CREATE = '/api/v1/campaign/banner/create'
const ASYNC = { prefer: 'respond-async' }
/** A create the sandbox refuses (no creative sets: the scoped writer may name none by default): a write all the same. */
const CREATE_BODY = JSON.stringify({ userId: 101, name: 'After the key', adDomain: 'example.com', clickUrl: 'https://example.com/', autoStart: false, dates: { from: '2026-03-01', to: '2026-03-31' }, country: 'KE', bid: 1, budget: { daily: 10, total: 100 } })

/** Writes `bytes` on a new connection; resolves once they are written, to the whole answer (read until the gateway closes). */
async function sent(port: number, bytes: string): Promise<{ answer: Promise<string> }> {
  const socket = connect(port, '127.0.0.1')
  let text = ''
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')))
  const answer = new Promise<string>((resolve, reject) => {
    socket.on('error', reject)
    socket.on('close', () => resolve(text))
  })
  await new Promise<void>((resolve, reject) => socket.write(bytes, (err) => (err ? reject(err) : resolve())))
  return { answer }
}

/** The teams with `key` replaced by another key of its team: the reload removes it, the team runs on. */
function without(yaml: string, key: string): string {
  return yaml.replace(hashApiKey(key), hashApiKey(`${key.slice(0, -4)}next`))
}

describe('a key revoked while its call is under way', () => {
  const sandbox = useSandbox()
  const redis = useRedis()
  const gateways = useGateways()

  /** A gateway reading its teams from a file (`more`: its other settings), and how to take a key out of it (resolves once the reload is acknowledged). */
  async function gatewayWithFile(yaml: string, more: Record<string, string> = {}): Promise<{ gw: TestGateway & { url: string; port: number }; revoke: (key: string, change?: (teams: string) => string) => Promise<void> }> {
    const file = join(mkdtempSync(join(tmpdir(), 'revoked-')), 'config.yaml')
    writeFileSync(file, yaml)
    const env = { CONFIG_FILE: file, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, ...more }
    const gw = await listen(await gateways.build(loadConfig({ env }), { configSource: { env } }))
    sandbox.clearRequests()
    // `change`: the teams the reload takes on (default: `key` taken out).
    const revoke = async (key: string, change: (teams: string) => string = (teams) => without(teams, key)) => {
      writeFileSync(file, change(yaml))
      const reload = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect(reload.json()).toMatchObject({ result: 'applied' })
    }
    return { gw, revoke }
  }
  const metrics = async (gw: TestGateway) => (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
  const reportCalls = () => sandbox.requests.filter((r) => r.path === REPORT_PATH).length
  /** The platform calls counted for `team` (its usage). */
  const teamCalls = async (gw: TestGateway, team: string) => Number(new RegExp(`gateway_team_platform_calls_total\\{team="${team}"\\} (\\d+)`).exec(await metrics(gw))?.[1] ?? 0)
  /** The team's `platformCalls` today, as `GET /admin/usage` says them. */
  const usageCalls = async (gw: TestGateway, team: string) => {
    const res = await gw.admin.inject({ method: 'GET', url: `/admin/usage?team=${team}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    return (res.json() as { usage: { platformCalls: number }[] }).usage.reduce((n, row) => n + row.platformCalls, 0)
  }
  /** The answer is the refusal a new call would get (401 for a key removed, 403 for an account out of scope), without the report. */
  async function refusedAsRevoked(res: Response, [status, code]: readonly [number, string] = [401, 'GW_UNAUTHORIZED']): Promise<void> {
    const body = await res.text()
    expect(res.status, body).toBe(status)
    expect(JSON.parse(body)).toMatchObject({ code })
    expect(body).not.toContain('"data"')
  }

  it('a report read held at the platform is answered 401 once the reload is acknowledged, not with the report; another key of the team reads it', async () => {
    const { gw, revoke } = await gatewayWithFile(TEAMS_YAML)
    const query = 'advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07'
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const held = fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.growth } })
    await waitFor('the read at the platform', () => reportCalls() === 1)
    await revoke(KEYS.growth)
    sandbox.releaseHeld()
    await refusedAsRevoked(await held)
    // Sent while its key ran, the call ran to its end at the platform: charged to its team.
    expect(await teamCalls(gw, 'growth')).toBe(1)
    // The copy its call filled is the team's all the same: a running key of a team that reads 101 has it.
    expect((await fetch(`${gw.url}${REPORT_PATH}?${query}`, { headers: { 'x-api-key': KEYS.all } })).headers.get('x-cache')).toBe('HIT')
  })

  it('the 401 of a call under way is a new call\'s: no rate-limit fields of the team the key no longer names', async () => {
    const { gw, revoke } = await gatewayWithFile(TEAMS_YAML)
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const held = fetch(`${gw.url}${REPORT_PATH}?advertiserId=103&dateFrom=2026-02-01&dateTo=2026-02-07`, { headers: { 'x-api-key': KEYS.limited } })
    await waitFor('the read at the platform', () => reportCalls() === 1)
    await revoke(KEYS.limited)
    sandbox.releaseHeld()
    const res = await held
    const fresh = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=103&dateFrom=2026-02-01&dateTo=2026-02-07`, { headers: { 'x-api-key': KEYS.limited } })
    for (const answer of [res, fresh]) {
      expect(answer.status).toBe(401)
      expect(answer.headers.get('ratelimit')).toBeNull()
      expect(answer.headers.get('ratelimit-policy')).toBeNull()
    }
    expect(await res.text()).toBe(await fresh.text())
  })

  // A reload that leaves the key running but changes what its team reads: an advertiser
  // taken out of its scope, or the team moved to another credential (whose token reads
  // other accounts than the one that fetched the report).
  for (const { change, yaml, env, key, advertiser, reload } of [
    { change: 'takes its advertiser out of the team\'s scope', yaml: TEAMS_YAML, env: () => ({}), key: KEYS.growth, advertiser: 102, reload: (teams: string) => teams.replace('advertisers: [101, 102]', 'advertisers: [101]') },
    { change: 'moves its team to another credential', yaml: credentialTeams('partner'), env: () => ({ CREDENTIAL_PARTNER_TOKEN: sandbox.issueToken() }), key: CREDENTIAL_KEYS.partner, advertiser: 103, reload: (teams: string) => teams.replace('    credential: partner', '') },
  ]) {
    it(`a report read held at the platform when a reload ${change} is 403, not the report`, async () => {
      const { gw, revoke } = await gatewayWithFile(yaml, env())
      sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
      const held = fetch(`${gw.url}${REPORT_PATH}?advertiserId=${advertiser}&dateFrom=2026-02-01&dateTo=2026-02-07`, { headers: { 'x-api-key': key } })
      await waitFor('the read at the platform', () => reportCalls() === 1)
      await revoke(key, reload)
      sandbox.releaseHeld()
      await refusedAsRevoked(await held, [403, 'GW_FORBIDDEN'])
    })
  }

  it('a read of a URL seen before, joining a fill under way before the router, is answered 401 too', async () => {
    const { gw, revoke } = await gatewayWithFile(TEAMS_YAML)
    const url = `${gw.url}${REPORT_PATH}?advertiserId=102&dateFrom=2026-02-01&dateTo=2026-02-07`
    const read = () => fetch(url, { headers: { 'x-api-key': KEYS.growth } })
    expect((await read()).status).toBe(200)
    const purge = await gw.admin.inject({ method: 'DELETE', url: '/admin/cache?advertiserId=102', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(purge.statusCode).toBe(200)
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const filling = read()
    await waitFor('the fill at the platform', () => reportCalls() === 2)
    // Written whole before the reload: the entrance reads it, and joins the fill, as it arrives.
    const joined = await sent(gw.port, `GET ${new URL(url).pathname}${new URL(url).search} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.growth}\r\nconnection: close\r\n\r\n`)
    await new Promise(setImmediate)
    await revoke(KEYS.growth)
    sandbox.releaseHeld()
    await refusedAsRevoked(await filling)
    const answer = await joined.answer
    expect(answer).toMatch(/^HTTP\/1\.1 401 /)
    expect(answer).toContain('GW_UNAUTHORIZED')
    expect(answer).not.toContain('"data"')
    expect(reportCalls()).toBe(2)
  })

  it('a read of a URL seen before whose copy is read from Redis before the router is answered 401 when the reload comes during that read', async () => {
    // No copies in memory: every hit is a read of Redis (one GETRANGE) before the router.
    const { gw, revoke } = await gatewayWithFile(teamsYamlWith({ cache: { l1MaxBytes: 0 } }), { REDIS_URL: redis.server.url, GATEWAY_SECRET: TEST_GATEWAY_SECRET })
    const read = () => fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07`, { headers: { 'x-api-key': KEYS.growth } })
    expect((await read()).headers.get('x-cache')).toBe('MISS')
    expect((await read()).headers.get('x-cache')).toBe('HIT')
    // The next read of Redis's copy is held until the reload is acknowledged.
    const client = gw.redis.client as unknown as { getrangeBuffer: (...args: unknown[]) => Promise<Buffer | null> }
    const getrange = client.getrangeBuffer.bind(client)
    let reads = 0
    let release = (): void => undefined
    const reloaded = new Promise<void>((resolve) => (release = resolve))
    client.getrangeBuffer = async (...args) => {
      reads += 1
      if (reads === 1) await reloaded
      return getrange(...args)
    }
    const held = read()
    await waitFor('the copy\'s read of Redis under way', () => reads === 1)
    await revoke(KEYS.growth)
    release()
    await refusedAsRevoked(await held)
    expect(reportCalls()).toBe(1)
  })

  // The key removed, or given to another team (here one whose scope holds none of the report's accounts).
  it.each([
    ['removes its key', (teams: string) => without(teams, KEYS.growth)],
    ['gives its key to another team', (teams: string) => `${without(teams, KEYS.growth).trimEnd()}\n  moved:\n    keys: ["${hashApiKey(KEYS.growth)}"]\n    advertisers: [999]\n`],
  ])('a pipelined answer made before a reload that %s, waiting behind a held answer, is not sent: the connection closes there', async (_what, change) => {
    const { gw, revoke } = await gatewayWithFile(TEAMS_YAML)
    const cached = `${REPORT_PATH}?advertiserId=101&dateFrom=2026-05-01&dateTo=2026-05-07`
    expect((await fetch(`${gw.url}${cached}`, { headers: { 'x-api-key': KEYS.growth } })).status).toBe(200)
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const head = (target: string, last = false) => `GET ${target} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.growth}\r\n${last ? 'connection: close\r\n' : ''}\r\n`
    // The first waits at the platform; the second, a copy in memory, is answered at once, behind it.
    const pipelined = await sent(gw.port, head(`${REPORT_PATH}?advertiserId=101&dateFrom=2026-06-01&dateTo=2026-06-07`) + head(cached, true))
    await waitFor('the first read at the platform', () => reportCalls() === 2)
    await revoke(KEYS.growth, change)
    sandbox.releaseHeld()
    const answers = (await pipelined.answer).split(/(?=HTTP\/1\.1 )/)
    expect(answers[0]).toMatch(/^HTTP\/1\.1 401 /)
    expect(answers.slice(1).join('')).not.toContain('"data"')
    // Its access line was written when its answer was made (a 200 from the copy); the
    // operator is told, under the same reqId, that the answer never left.
    const logged = gw.logs.records()
    const cachedLine = logged.find((r) => r.msg === 'request' && r.status === 200 && r.cache === 'HIT' && r.team === 'growth')
    expect(cachedLine).toBeDefined()
    expect(logged).toContainEqual(expect.objectContaining({ msg: 'pipelined answer not sent: its key no longer runs for its team', reqId: cachedLine?.reqId, team: 'growth', method: 'GET', path: REPORT_PATH, status: 200 }))
  })

  it('a pipelined write that reached the platform before the reload is answered at its turn: its caller learns its outcome', async () => {
    const { gw, revoke } = await gatewayWithFile(TEAMS_YAML)
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const write = `POST ${CREATE} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.writer}\r\ncontent-type: application/json\r\ncontent-length: ${CREATE_BODY.length}\r\nconnection: close\r\n\r\n${CREATE_BODY}`
    const read = `GET ${REPORT_PATH}?advertiserId=101&dateFrom=2026-06-01&dateTo=2026-06-07 HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${KEYS.writer}\r\n\r\n`
    const pipelined = await sent(gw.port, read + write)
    await waitFor('the read held and the write made', () => reportCalls() === 1 && sandbox.requests.some((r) => r.path === CREATE))
    await revoke(KEYS.writer)
    sandbox.releaseHeld()
    const answers = (await pipelined.answer).split(/(?=HTTP\/1\.1 )/)
    expect(answers[0]).toMatch(/^HTTP\/1\.1 401 /)
    // The platform's own refusal of the create (no creative sets): what the write came to.
    expect(answers[1]).toMatch(/^HTTP\/1\.1 422 /)
  })

  it('a write whose body comes after the reload never reaches the platform: 401', async () => {
    const { gw, revoke } = await gatewayWithFile(TEAMS_YAML)
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(gw.port, '127.0.0.1')
      let text = ''
      socket.on('data', (chunk: Buffer) => {
        const first = text === ''
        text += chunk.toString('latin1')
        // Invited once admitted (its key read): the body follows the reload.
        if (first && text.startsWith('HTTP/1.1 100')) revoke(KEYS.writer).then(() => socket.write(CREATE_BODY), reject)
      })
      socket.on('error', reject)
      socket.on('close', () => resolve(text))
      setTimeout(() => socket.destroy(), 10_000).unref()
      socket.write(`POST ${CREATE} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\nx-api-key: ${KEYS.writer}\r\ncontent-type: application/json\r\ncontent-length: ${CREATE_BODY.length}\r\nexpect: 100-continue\r\n\r\n`)
    })
    expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 401 /)
    expect(answer).toContain('GW_UNAUTHORIZED')
    expect(sandbox.requests.filter((r) => r.path === CREATE)).toEqual([])
  })

  it('a write waiting for a seat when the reload comes never reaches the platform: 401', async () => {
    const { gw, revoke } = await gatewayWithFile(teamsYamlWith({ platform: { adaptive: false, maxConcurrent: 1 } }))
    sandbox.setRouteFailure('/api/v1/campaign/get', { kind: 'held', times: 1 })
    const holding = fetch(`${gw.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.growth, 'content-type': 'application/json' }, body: '{"userId":102}' })
    await waitFor('the one seat held', () => sandbox.requests.some((r) => r.path === '/api/v1/campaign/get'))
    const write = fetch(`${gw.url}${CREATE}`, { method: 'POST', headers: { 'x-api-key': KEYS.writer, 'content-type': 'application/json' }, body: CREATE_BODY })
    await waitFor('the write waiting for a seat', async () => /gateway_platform_waiting_calls\{[^}]*team="writer"[^}]*\} 1/.test(await metrics(gw)))
    await revoke(KEYS.writer)
    sandbox.releaseHeld()
    expect((await holding).status).toBe(200)
    await refusedAsRevoked(await write)
    expect(sandbox.requests.filter((r) => r.path === CREATE)).toEqual([])
    // Nothing reached the platform: no platform call is counted for the writer.
    expect(await teamCalls(gw, 'writer')).toBe(0)
  })

  it('a read refused once it has its seat (its key removed while it waited) gives the seat back at once: the team behind it is sent then, not after the kind\'s expected time', async () => {
    const { gw, revoke } = await gatewayWithFile(teamsYamlWith({ platform: { adaptive: false, maxConcurrent: 1 } }))
    const read = (key: string, userId: number) => fetch(`${gw.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ userId }) })
    sandbox.setRouteFailure('/api/v1/campaign/get', { kind: 'held', times: 1 })
    const holding = read(KEYS.growth, 102)
    await waitFor('the one seat held', () => sandbox.requests.some((r) => r.path === '/api/v1/campaign/get'))
    const refused = read(KEYS.writer, 101)
    await waitFor('the writer waiting for a seat', async () => /gateway_platform_waiting_calls\{[^}]*team="writer"[^}]*\} 1/.test(await metrics(gw)))
    const behind = read(KEYS.all, 101)
    await waitFor('the other team waiting behind it', async () => /gateway_platform_waiting_calls\{[^}]*team="all"[^}]*\} 1/.test(await metrics(gw)))
    await revoke(KEYS.writer)
    // The held read's answer teaches the route's kind what it takes: all the time the others waited.
    sandbox.releaseHeld()
    expect((await holding).status).toBe(200)
    await refusedAsRevoked(await refused)
    // Nothing was sent for the writer: its seat is free, and its team charged no seat-time.
    expect([seatsOf(gw).running('writer'), seatsOf(gw).seatSeconds('writer')]).toEqual([0, 0])
    expect((await behind).status).toBe(200)
    // Nor is a platform call counted for it, in its team's usage or its metric.
    expect([await teamCalls(gw, 'writer'), await teamCalls(gw, 'all')]).toEqual([0, 1])
    expect(await usageCalls(gw, 'writer')).toBe(0)
    expect(sandbox.requests.filter((r) => r.path === '/api/v1/campaign/get')).toHaveLength(2)
  })

  /** A gateway of one seat, held at the platform by a read of team growth until `release`; `fill(key)`: a read of a report of 101 not yet cached, whose fill waits for that seat. */
  async function oneSeatHeld() {
    const { gw, revoke } = await gatewayWithFile(teamsYamlWith({ platform: { adaptive: false, maxConcurrent: 1 } }))
    sandbox.setRouteFailure('/api/v1/campaign/get', { kind: 'held', times: 1 })
    const holding = fetch(`${gw.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.growth, 'content-type': 'application/json' }, body: '{"userId":102}' })
    await waitFor('the one seat held', () => sandbox.requests.some((r) => r.path === '/api/v1/campaign/get'))
    const fill = (key: string) => fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2026-04-01&dateTo=2026-04-07`, { headers: { 'x-api-key': key } })
    const release = async () => {
      sandbox.releaseHeld()
      expect((await holding).status).toBe(200)
    }
    return { gw, revoke, fill, release }
  }

  it('a report fill whose only caller\'s key is removed while it waits for a seat is never sent: 401, its seat free at once, no platform call counted', async () => {
    const { gw, revoke, fill, release } = await oneSeatHeld()
    const refused = fill(KEYS.writer)
    await waitFor('the fill waiting for a seat', async () => /gateway_platform_waiting_calls\{[^}]*team="writer"[^}]*\} 1/.test(await metrics(gw)))
    await revoke(KEYS.writer)
    await release()
    await refusedAsRevoked(await refused)
    expect(reportCalls()).toBe(0)
    expect([seatsOf(gw).running('writer'), seatsOf(gw).seatSeconds('writer')]).toEqual([0, 0])
    // No report call counted (the proxied call that held the seat counts as call="proxy").
    expect(await metrics(gw)).not.toMatch(/gateway_platform_calls_total\{call="report"[^}]*\} [1-9]/)
    expect(await teamCalls(gw, 'writer')).toBe(0)
  })

  it('a report fill whose first caller\'s key is removed while it waits goes on for another team\'s caller that joined it, charged to that team', async () => {
    const { gw, revoke, fill, release } = await oneSeatHeld()
    const refused = fill(KEYS.writer)
    await waitFor('the fill waiting for a seat', async () => /gateway_platform_waiting_calls\{[^}]*team="writer"[^}]*\} 1/.test(await metrics(gw)))
    // Team limited (3 calls a minute): its rate count says when the gateway has read its request, which joins the fill.
    const limited = gw.config.teams.find((t) => t.name === 'limited')!
    const joined = fill(KEYS.limited)
    await waitFor('the joiner admitted', () => gw.rateLimiter.peek(limited).remaining === 2)
    await revoke(KEYS.writer)
    await release()
    await refusedAsRevoked(await refused)
    const answer = await joined
    expect([answer.status, answer.headers.get('x-cache')]).toEqual([200, 'MISS'])
    expect(reportCalls()).toBe(1)
    expect([await teamCalls(gw, 'writer'), await teamCalls(gw, 'limited')]).toEqual([0, 1])
  })

  it('a job status held by ?wait is answered 401 once the reload is taken, while its job still runs: the wait ends then, its place given back', async () => {
    const { gw, revoke } = await gatewayWithFile(TEAMS_YAML)
    sandbox.setRouteFailure(REPORT_PATH, { kind: 'held', times: 1 })
    const asked = await fetch(`${gw.url}${REPORT_PATH}?advertiserId=101&dateFrom=2026-03-01&dateTo=2026-03-07`, { headers: { 'x-api-key': KEYS.growth, ...ASYNC } })
    expect(asked.status).toBe(202)
    const { id } = (await asked.json()) as { id: string }
    await waitFor('the job at the platform', () => reportCalls() === 1)
    const waiting = fetch(`${gw.url}/api/v1/jobs/${id}?wait=30`, { headers: { 'x-api-key': KEYS.growth } })
    await waitFor('the wait held', async () => /gateway_report_job_waits\{team="growth"\} 1/.test(await metrics(gw)))
    await revoke(KEYS.growth)
    await refusedAsRevoked(await waiting)
    expect(await metrics(gw)).not.toMatch(/gateway_report_job_waits\{team="growth"\} [1-9]/)
    sandbox.releaseHeld()
  })
})

describe('an admin token removed while its change is under way', () => {
  // Two operators in ADMIN_TOKENS_FILE; `leaving` is taken out of it by the other one's
  // reload while its PUT /admin/token is under way. That token change would point every
  // team's calls at the platform account of a token the one who left chose.
  const sandbox = useSandbox()
  const gateways = useGateways()
  const LEAVING = 'leaving-operator-token-0123456789'
  const STAYING = 'staying-operator-token-0123456789'
  const line = (name: string, token: string) => `${name}:${hashApiKey(token)}\n`

  async function gatewayWithAdmins(): Promise<{ gw: TestGateway & { url: string; port: number }; adminPort: number; removeLeaving: () => Promise<void>; fingerprint: () => Promise<string> }> {
    const dir = mkdtempSync(join(tmpdir(), 'revoked-admin-'))
    const teams = join(dir, 'teams.yaml')
    const admins = join(dir, 'admin-tokens')
    writeFileSync(teams, TEAMS_YAML)
    writeFileSync(admins, line('leaving', LEAVING) + line('staying', STAYING))
    const env = { TEAMS_FILE: teams, ADMIN_TOKENS_FILE: admins, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }
    const gw = await listen(await gateways.build(loadConfig({ env }), { configSource: { env } }))
    await gw.admin.listen({ host: '127.0.0.1', port: 0 })
    const address = gw.admin.server.address()
    const adminPort = typeof address === 'object' && address !== null ? address.port : 0
    sandbox.clearRequests()
    const removeLeaving = async () => {
      writeFileSync(admins, line('staying', STAYING))
      const reload = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${STAYING}` } })
      expect(reload.statusCode).toBe(200)
      expect((await gw.admin.inject({ method: 'GET', url: '/admin/token', headers: { authorization: `Bearer ${LEAVING}` } })).statusCode).toBe(401)
    }
    const fingerprint = async () => (await gw.admin.inject({ method: 'GET', url: '/admin/token', headers: { authorization: `Bearer ${STAYING}` } })).json<{ fingerprint: string }>().fingerprint
    return { gw, adminPort, removeLeaving, fingerprint }
  }

  it('a PUT /admin/token whose body comes after the reload changes nothing: 401', async () => {
    const { adminPort, removeLeaving, fingerprint } = await gatewayWithAdmins()
    const before = await fingerprint()
    const body = JSON.stringify({ token: sandbox.issueToken() })
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(adminPort, '127.0.0.1')
      let text = ''
      socket.on('data', (chunk: Buffer) => {
        const first = text === ''
        text += chunk.toString('latin1')
        if (first && text.startsWith('HTTP/1.1 100')) removeLeaving().then(() => socket.write(body), reject)
      })
      socket.on('error', reject)
      socket.on('close', () => resolve(text))
      setTimeout(() => socket.destroy(), 10_000).unref()
      socket.write(`PUT /admin/token HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\nauthorization: Bearer ${LEAVING}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nexpect: 100-continue\r\n\r\n`)
    })
    expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 401 /)
    expect(await fingerprint()).toBe(before)
  })

  it('a PUT /admin/token waiting for the platform to accept the token when the reload comes changes nothing: 401', async () => {
    const { gw, removeLeaving, fingerprint } = await gatewayWithAdmins()
    const before = await fingerprint()
    sandbox.setRouteFailure('/api/v1/campaign/get', { kind: 'held', times: 1 })
    const put = gw.admin.inject({ method: 'PUT', url: '/admin/token', headers: { authorization: `Bearer ${LEAVING}` }, payload: { token: sandbox.issueToken() } })
    await waitFor('the new token probed at the platform', () => sandbox.requests.some((r) => r.path === '/api/v1/campaign/get'))
    await removeLeaving()
    sandbox.releaseHeld()
    const res = await put
    expect(res.statusCode, res.body).toBe(401)
    expect(res.json()).toMatchObject({ code: 'GW_UNAUTHORIZED' })
    expect(await fingerprint()).toBe(before)
  })
})
