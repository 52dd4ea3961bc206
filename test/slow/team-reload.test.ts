import { freshAddress } from '../helpers/admin-addresses.js'
import { createHash } from 'node:crypto'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import type { GatewayDeps } from '../../src/compose.js'
import { fingerprint } from '../../src/observe/fingerprint.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { type ConfigMapDir, useConfigMaps } from '../helpers/config-map.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { TEST_GATEWAY_SECRET, type TestGateway } from '../helpers/build-gateway.js'

// Keys without restarts: the teams of CONFIG_FILE reload when the file
// changes (as a ConfigMap update swaps it), on POST /admin/reload (every replica, through
// Redis) and on SIGHUP; a file that does not validate is refused whole.

const ADMIN_TOKEN = 'team-reload-admin-token-000000000'
const OLD = 'rgw_reload_old_key_00000000000000000000000000'
const NEW = 'rgw_reload_new_key_11111111111111111111111111'
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-02'

function yaml(keys: string[], poll = '100ms', extra = ''): string {
  return `teamsReload: { poll: ${poll} }\nteams:\n  growth:\n    keys: [${keys.join(', ')}]\n    advertisers: ["*"]\n${extra}`
}
const plain = (key: string) => `"${hashApiKey(key)}"`
const TOKEN_FILE_LEFT = 'CONFIG_FILE reload took the teams; a token file it read is left to its watcher, which keeps the token in use'

const sandbox = useSandbox()
const redis = useRedis()
const gateways = useGateways()
const configMap = useConfigMaps()

async function replica(dir: ConfigMapDir, withRedis = true, deps: GatewayDeps = {}): Promise<TestGateway> {
  const env = {
    CONFIG_FILE: dir.path,
    PLATFORM_BASE_URL: sandbox.url,
    PLATFORM_TOKEN: sandbox.issueToken(),
    ADMIN_TOKEN,
    LOG_LEVEL: 'info',
    ...(withRedis ? { REDIS_URL: redis.server.url, GATEWAY_SECRET: TEST_GATEWAY_SECRET } : {}),
  }
  return gateways.build(loadConfig({ env }), { configSource: { env }, ...deps })
}

async function status(gw: TestGateway, key: string): Promise<number> {
  return (await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': key } })).statusCode
}

async function metric(gw: TestGateway, line: string): Promise<number> {
  const text = (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
  const found = text.split('\n').find((l) => l.startsWith(`${line} `))
  return found ? Number(found.split(' ')[1]) : 0
}

describe('keys without restarts', () => {
  // A revocation's time is the poll's: each replica reads its files again every teamsReload.poll
  // (besides their watch). The tests wait for the revocation itself and check the poll.
  it('takes a key added and drops a key revoked by a ConfigMap update, on each replica, read again every teamsReload.poll', async () => {
    const dir = configMap(yaml([plain(OLD)]))
    const a = await replica(dir)
    const b = await replica(dir)
    expect(await status(a, OLD)).toBe(200)
    expect(await status(b, OLD)).toBe(200)
    expect(await status(b, NEW)).toBe(401)

    for (const gw of [a, b]) expect(gw.config.teamsReload.pollMs).toBe(100)
    dir.update(yaml([plain(NEW)]))
    for (const gw of [a, b]) {
      await waitFor('the new key to work and the old one to stop', async () => (await status(gw, NEW)) === 200 && (await status(gw, OLD)) === 401, testTimeLeft(), 50)
    }
    expect(await metric(a, 'gateway_config_reloads_total{result="applied"}')).toBe(1)
    const audit = a.logs.records().find((r) => r.action === 'teams-reload')
    expect(audit).toMatchObject({ kind: 'audit', trigger: 'file', addedKeys: [`growth/${hashApiKey(NEW).slice(7, 19)}`], removedKeys: [`growth/${hashApiKey(OLD).slice(7, 19)}`] })
  })

  it('names a key whose hash was swapped inside its entry (its id kept) as removed and added: the reload says what it did', async () => {
    const dir = configMap(yaml([`{ hash: ${plain(OLD)}, id: growth-2026, expiresAt: 2099-01-01 }`], '1h'))
    const gw = await replica(dir, false)
    dir.update(yaml([`{ hash: ${plain(NEW)}, id: growth-2026, expiresAt: 2099-01-01 }`], '1h'))
    const res = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.json()).toMatchObject({ result: 'applied', addedKeys: ['growth/growth-2026'], removedKeys: ['growth/growth-2026'] })
    expect(await status(gw, OLD)).toBe(401)
    expect(await status(gw, NEW)).toBe(200)
  })

  it('refuses an expired key with 401 saying it expired, and names the key by its id in log lines', async () => {
    const dir = configMap(yaml([`{ hash: ${plain(OLD)}, id: growth-2025, expiresAt: 2025-01-01 }`, `{ hash: ${plain(NEW)}, id: growth-2099, expiresAt: 2099-01-01 }`]))
    const gw = await replica(dir)
    const res = await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': OLD } })
    expect(res.statusCode).toBe(401)
    expect(res.json()).toMatchObject({ code: 'GW_UNAUTHORIZED', message: 'API key growth-2025 expired at 2025-01-01T00:00:00.000Z; ask for a new key' })
    expect(res.body).not.toContain(OLD)
    expect(await status(gw, NEW)).toBe(200)
    expect(gw.logs.records().filter((r) => r.msg === 'request').map((r) => r.keyId)).toEqual([null, 'growth-2099'])
    // An expiry written into the file later takes effect without a restart too.
    dir.update(yaml([`{ hash: ${plain(NEW)}, id: growth-2099, expiresAt: 2020-06-01 }`]))
    await waitFor('the key to expire', async () => (await status(gw, NEW)) === 401, testTimeLeft(), 50)
  })

  it('lists each key with an end in gateway_api_key_expiry_seconds, and follows a reload without a restart', async () => {
    const series = async (gw: TestGateway) =>
      (await gw.admin.inject({ method: 'GET', url: '/metrics' })).body
        .split('\n')
        .filter((l) => l.startsWith('gateway_api_key_expiry_seconds{'))
        .map((l) => l.split(' ')[0])
    const dir = configMap(yaml([`{ hash: ${plain(OLD)}, id: growth-2098, expiresAt: 2098-01-01 }`, plain(NEW)]))
    const gw = await replica(dir, false)
    expect(await series(gw)).toEqual(['gateway_api_key_expiry_seconds{team="growth",key="growth-2098"}'])
    const left = await metric(gw, 'gateway_api_key_expiry_seconds{team="growth",key="growth-2098"}')
    expect(Math.abs(left - (Date.parse('2098-01-01T00:00:00Z') - Date.now()) / 1000)).toBeLessThan(60)
    dir.update(yaml([`{ hash: ${plain(NEW)}, id: growth-2099, expiresAt: 2099-01-01 }`]))
    await waitFor('the reloaded key in the gauge', async () => (await series(gw)).join() === 'gateway_api_key_expiry_seconds{team="growth",key="growth-2099"}', testTimeLeft(), 50)
  })

  it('refuses a broken file whole, keeps the old teams, and logs and counts each problem', async () => {
    const dir = configMap(yaml([plain(OLD)]))
    const gw = await replica(dir, false)
    dir.update(`${yaml([plain(NEW), '"sha256:not-hex"'])}  broken:\n    keys: []\n    advertisers: [0]\n`)
    await waitFor('the refusal', async () => (await metric(gw, 'gateway_config_reloads_total{result="refused"}')) === 1, testTimeLeft(), 50)
    expect(await status(gw, OLD)).toBe(200)
    expect(await status(gw, NEW)).toBe(401)
    const problems = gw.logs.records().filter((r) => r.msg === 'CONFIG_FILE reload refused: the running teams stay')
    expect(problems.length).toBeGreaterThanOrEqual(2)
    expect(problems.map((r) => r.problem).join('\n')).toMatch(/teams\.growth\.keys\.1/)
    expect(await metric(gw, 'gateway_config_reload_problems_total')).toBe(problems.length)
    expect(await metric(gw, 'gateway_config_last_reload_successful')).toBe(0)
    // Refused once, not on every poll, while the file stays as it is.
    await new Promise((r) => setTimeout(r, 300))
    expect(await metric(gw, 'gateway_config_reloads_total{result="refused"}')).toBe(1)

    const res = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toMatchObject({ code: 'GW_CONFIG_INVALID' })
    expect(await status(gw, OLD)).toBe(200)
  })

  it('POST /admin/reload reloads every replica (each re-reads its own file), revoking a key', async () => {
    // Polling is off (1 h, longer than the test): only the admin call and the Redis bus can bring the change.
    const dirA = configMap(yaml([plain(OLD)], '1h'))
    const dirB = configMap(yaml([plain(OLD)], '1h'))
    const a = await replica(dirA)
    const b = await replica(dirB)
    expect(await status(b, OLD)).toBe(200)
    dirA.update(yaml([plain(NEW)], '1h'))
    dirB.update(yaml([plain(NEW)], '1h'))
    expect(await status(b, OLD)).toBe(200)

    const res = await a.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ result: 'applied', teams: ['growth'], keys: 1, replicas: 'all' })
    expect(await status(a, OLD)).toBe(401)
    await waitFor('the second replica to drop the key', async () => (await status(b, OLD)) === 401, testTimeLeft(), 50)
    expect(await status(b, NEW)).toBe(200)
    expect(a.logs.records().find((r) => r.action === 'teams-reload')).toMatchObject({ trigger: 'admin', actor: 'admin' })
    // The other replica's audit line names who asked, as the log level's and the token's do.
    expect(b.logs.records().find((r) => r.action === 'teams-reload')).toMatchObject({ trigger: 'replica', actor: 'admin' })

    // Nothing changed: said so, nothing replaced.
    const again = await a.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(again.json()).toMatchObject({ result: 'unchanged' })
  })

  it('a replica whose file does not validate at POST /admin/reload keeps serving its running teams and says so in /readyz and the cluster view (degraded teams-reload), until its file is fixed', async ({ task }) => {
    // Polling is off (1 h, longer than the test): the admin call alone brings the change.
    const dirA = configMap(yaml([plain(OLD)], '1h'))
    const dirB = configMap(yaml([plain(OLD)], '1h'))
    // The replicas announce themselves at their start and then only when their state
    // changes: their periodic announcement comes after the test.
    const announceMs = 3_600_000
    expect(announceMs).toBeGreaterThan(task.timeout)
    const a = await replica(dirA, true, { announceMs })
    const b = await replica(dirB, true, { announceMs })
    dirA.update(yaml([plain(NEW)], '1h'))
    dirB.update(`${yaml([plain(NEW)], '1h')}  broken:\n    keys: []\n    advertisers: [0]\n`)
    const degraded = async (gw: TestGateway) => (await gw.admin.inject({ method: 'GET', url: '/readyz' })).json<{ degraded: string[] }>().degraded
    expect(await degraded(b)).toEqual([])

    const res = await a.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.json()).toMatchObject({ result: 'applied' })
    await waitFor('the second replica to refuse its file', async () => (await metric(b, 'gateway_config_last_reload_successful')) === 0, testTimeLeft(), 50)
    // It keeps serving, with the teams it runs: the key revoked elsewhere still works there.
    expect(await status(b, OLD)).toBe(200)
    const ready = await b.admin.inject({ method: 'GET', url: '/readyz' })
    expect(ready.statusCode).toBe(200)
    expect(ready.json<{ degraded: string[] }>().degraded).toEqual(['teams-reload'])
    expect(await degraded(a)).toEqual([])
    // The other replica's cluster view (the console's) names it.
    const listed = async () => (await a.admin.inject({ method: 'GET', url: '/admin/cluster', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json<{ replicas: { self: boolean; degraded: string[] }[] }>().replicas
    // A replica announces its state when a reload is refused there, as it is taken again.
    const named = async (degradedB: string[]) => JSON.stringify((await listed()).map((r) => [r.self, r.degraded])) === JSON.stringify([[true, []], [false, degradedB]])
    await waitFor('the cluster view to name the replica that refused', () => named(['teams-reload']), testTimeLeft(), 100)

    dirB.update(yaml([plain(NEW)], '1h'))
    const again = await b.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(again.json()).toMatchObject({ result: 'applied' })
    expect(await status(b, OLD)).toBe(401)
    expect(await degraded(b)).toEqual([])
    await waitFor('the cluster view to name no replica', () => named([]), testTimeLeft(), 100)
  })

  it('a renamed setting moved to its new name with its value, or a value written another way, is no change for the next restart; a new value is', async () => {
    const dir = configMap(yaml([plain(OLD)], '1h', 'platform: { permitLease: 2s }\n'))
    const gw = await replica(dir, false)
    const reload = async () => (await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json<{ result: string; restartNeeded: string[] }>()
    const restartNeeded = () => gw.logs.records().filter((r) => String(r.msg).endsWith('they take effect at the next restart'))
    dir.update(yaml([plain(NEW)], '1h', 'platform: { seatLease: 2s }\n'))
    expect(await reload()).toMatchObject({ result: 'applied', restartNeeded: [] })
    expect(restartNeeded()).toEqual([])
    // The same value written another way is no change either: values compare as they run.
    dir.update(yaml([plain(OLD)], '1h', 'platform: { seatLease: 2000ms }\n'))
    expect(await reload()).toMatchObject({ result: 'applied', restartNeeded: [] })
    expect(restartNeeded()).toEqual([])
    dir.update(yaml([plain(NEW)], '1h', 'platform: { seatLease: 3s }\n'))
    expect(await reload()).toMatchObject({ result: 'applied', restartNeeded: ['platform.seatLease'] })
    expect(restartNeeded()).toEqual([
      expect.objectContaining({
        level: 40,
        file: dir.path,
        settings: ['platform.seatLease'],
        msg: 'CONFIG_FILE reload: settings other than the teams and the admin tokens changed (platform.seatLease); they take effect at the next restart',
      }),
    ])
  })

  it('says a setting that waits for the next restart when it is the only change, the teams the same: by the admin call and by the file poll', async () => {
    const dir = configMap(yaml([plain(OLD)], '1h', 'platform: { seatLease: 2s }\n'))
    const gw = await replica(dir, false)
    const restartNeeded = () => gw.logs.records().filter((r) => String(r.msg).endsWith('they take effect at the next restart'))
    dir.update(yaml([plain(OLD)], '1h', 'platform: { seatLease: 3s }\n'))
    const res = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.json()).toMatchObject({ result: 'unchanged', restartNeeded: ['platform.seatLease'] })
    expect(restartNeeded()).toEqual([
      expect.objectContaining({ level: 40, file: dir.path, settings: ['platform.seatLease'], msg: 'CONFIG_FILE reload: settings other than the teams and the admin tokens changed (platform.seatLease); they take effect at the next restart' }),
    ])
    // The poll that finds the file changed says it too (it says nothing of teams unchanged).
    const polled = configMap(yaml([plain(OLD)], '100ms', 'platform: { seatLease: 2s }\n'))
    const other = await replica(polled, false)
    polled.update(yaml([plain(OLD)], '100ms', 'platform: { seatLease: 4s }\n'))
    await waitFor('the poll to say the setting waits', () => other.logs.records().some((r) => String(r.msg).endsWith('they take effect at the next restart')), testTimeLeft(), 50)
    expect(other.logs.records().filter((r) => String(r.msg).endsWith('they take effect at the next restart'))).toEqual([expect.objectContaining({ settings: ['platform.seatLease'] })])
  })

  it('says of ownership.creativeSets.check: pass at each reload applied that leaves a scoped team able to write, one line, no secret in it', async () => {
    const teams = (key: string, advertisers: string) => `teamsReload: { poll: 1h }\nownership:\n  creativeSets: { check: pass }\nteams:\n  growth:\n    keys: [${plain(key)}]\n    advertisers: ${advertisers}\n    write: true\n`
    const dir = configMap(teams(OLD, '["*"]'))
    const gw = await replica(dir, false)
    const reload = async () => (await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json<{ result: string }>().result
    const said = () => gw.logs.records().filter((r) => String(r.msg).startsWith('ownership.creativeSets.check is pass'))
    dir.update(teams(NEW, '[101]'))
    expect(await reload()).toBe('applied')
    expect(said()).toEqual([
      expect.objectContaining({
        level: 40,
        msg: "ownership.creativeSets.check is pass: a team limited to some advertisers may attach any advertiser's creative sets (creativeSetIds are sent unchecked; scoped teams that may write: growth); set check: lookup (with listPath) to check them, or refuse",
      }),
    ])
    expect(JSON.stringify(said())).not.toMatch(new RegExp([OLD, NEW, hashApiKey(NEW).slice(7)].join('|')))
    expect(await reload()).toBe('unchanged')
    expect(said()).toHaveLength(1)
    dir.update(teams(NEW, '["*"]'))
    expect(await reload()).toBe('applied')
    expect(said()).toHaveLength(1)
  })

  it('refuses a team\'s webhook at a host only the new file\'s jobs.webhookHosts allows: the running list holds until a restart, the running teams stay', async () => {
    const secret = `whsec_${Buffer.from('team-reload-webhook-key-0123456789').toString('base64')}`
    const hook = (host: string) => `    webhook: { url: "http://${host}:9/hook", secret: "${secret}" }\n`
    const dir = configMap(`${yaml([plain(OLD)], '1h', hook('localhost'))}jobs: { webhookHosts: [localhost] }\n`)
    const gw = await replica(dir, false)
    dir.update(`${yaml([plain(NEW)], '1h', hook('hooks.example.org'))}jobs: { webhookHosts: [localhost, hooks.example.org] }\n`)
    const res = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.statusCode).toBe(422)
    expect(res.json<{ message: string }>().message).toMatch(/teams\.growth\.webhook\.url: hooks\.example\.org is not in jobs\.webhookHosts as the gateway runs; a change of jobs\.webhookHosts needs a restart/)
    expect(await status(gw, OLD)).toBe(200)
    expect(await status(gw, NEW)).toBe(401)
  })

  it('keeps reloading the teams of a file that drops a credential whose variable is still set, and says once that the next start refuses that variable', async () => {
    const partnerToken = sandbox.issueToken()
    const dir = configMap(`${yaml([plain(OLD)], '1h')}credentials:\n  partner: {}\n`)
    const env = { CONFIG_FILE: dir.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), CREDENTIAL_PARTNER_TOKEN: partnerToken, ADMIN_TOKEN, LOG_LEVEL: 'info' }
    const gw = await gateways.build(loadConfig({ env }), { configSource: { env } })
    const reload = async () => (await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json<{ result: string }>().result
    const said = () => gw.logs.records().filter((r) => String(r.msg).includes('the next start refuses'))
    dir.update(yaml([plain(NEW)], '1h'))
    // The revocation takes effect: the running credential keeps its variable until a restart.
    expect(await reload()).toBe('applied')
    expect(await status(gw, OLD)).toBe(401)
    expect(said()).toEqual([
      expect.objectContaining({
        level: 40,
        variables: ['CREDENTIAL_PARTNER_TOKEN'],
        msg: 'CONFIG_FILE reload: the next start refuses CREDENTIAL_PARTNER_TOKEN, variables of no credential the files declare now (the running credentials read theirs until a restart); remove them, or declare their credentials again',
      }),
    ])
    expect(await reload()).toBe('unchanged')
    expect(said()).toHaveLength(1)
    expect(JSON.stringify(gw.logs.records())).not.toContain(partnerToken)
  })

  it('answers 409 to POST /admin/reload without a CONFIG_FILE', async () => {
    const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN }
    const gw = await gateways.build(loadConfig({ env }), { configSource: { env } })
    const res = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toMatchObject({ code: 'GW_RELOAD_UNAVAILABLE' })
  })
})

// Every file a reload reads is watched, a refused reload is tried again
// until it succeeds, and each replica (polling its own mount, no Redis) drops a revoked
// key or admin token at its next poll of the file (teamsReload.poll) or the file's watch.
describe('a team is its name', () => {
  // Jobs are kept by their team's name: a team removed whole and added again under that
  // name, with other keys, finds the jobs of the name still kept, read within its scope as
  // it is then (docs/operations/teams-and-keys.md, "Remove a team").
  it('gives a team added again under a removed team\'s name the jobs of the name still kept; their results within its new scope', async () => {
    const growth = (keys: string[], advertisers: string) => `teamsReload: { poll: 100ms }\nteams:\n  growth:\n    keys: [${keys.join(', ')}]\n    advertisers: ${advertisers}\n`
    const dir = configMap(growth([plain(OLD)], '[101]'))
    const gw = await replica(dir)
    const asked = await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': OLD, prefer: 'respond-async' } })
    expect(asked.statusCode).toBe(202)
    const job = String(asked.headers.location)
    const stateWith = async (key: string) => (await gw.proxy.inject({ method: 'GET', url: job, headers: { 'x-api-key': key } })).json<{ state?: string }>().state
    await waitFor('the job done', async () => (await stateWith(OLD)) === 'done', testTimeLeft(), 25)

    dir.update('teamsReload: { poll: 100ms }\nteams: {}\n')
    await waitFor('the team removed', async () => (await status(gw, OLD)) === 401, testTimeLeft(), 25)
    dir.update(growth([plain(NEW)], '[102]'))
    await waitFor('the name added again', async () => (await status(gw, NEW)) === 403, testTimeLeft(), 25)

    expect(await stateWith(NEW)).toBe('done')
    const result = await gw.proxy.inject({ method: 'GET', url: `${job}/result`, headers: { 'x-api-key': NEW } })
    expect(result.statusCode).toBe(403)
    expect(result.json<{ message: string }>().message).toBe("team growth may not use advertiser 101: a team's keys use only the advertisers its settings list; ask the gateway's operators to add it to team growth's advertisers")
    dir.update(growth([plain(NEW)], '[101, 102]'))
    await waitFor('advertiser 101 given back', async () => (await status(gw, NEW)) === 200, testTimeLeft(), 25)
    expect((await gw.proxy.inject({ method: 'GET', url: `${job}/result`, headers: { 'x-api-key': NEW } })).statusCode).toBe(200)
  })
})

describe('a revocation always takes effect', () => {
  const OPERATOR = 'revocation-operator-token-0000000'
  const OTHER_OPERATOR = 'revocation-operator-token-1111111'
  // The poll is short: the tests are about each file being watched, not how often.
  const POLL_MS = 200
  const POLL = `${POLL_MS}ms`
  const adminLine = (name: string, token: string) => `${name}:sha256:${createHash('sha256').update(token).digest('hex')}\n`

  interface Files {
    dir: ConfigMapDir
    admins: string
    token: string
  }

  function files(text: string): Files {
    const dir = configMap(text)
    const f = { dir, admins: join(dir.dir, 'admin-tokens'), token: join(dir.dir, 'platform-token') }
    writeFileSync(f.admins, adminLine('alice', OPERATOR))
    writeFileSync(f.token, sandbox.issueToken())
    return f
  }

  // Polling only: no Redis, so each replica learns of a change from its own files.
  async function fileReplica(f: Files): Promise<TestGateway> {
    const env = { CONFIG_FILE: f.dir.path, ADMIN_TOKENS_FILE: f.admins, PLATFORM_TOKEN_FILE: f.token, PLATFORM_BASE_URL: sandbox.url, LOG_LEVEL: 'info' }
    return gateways.build(loadConfig({ env }), { configSource: { env } })
  }

  const admin = async (gw: TestGateway, token: string) => (await gw.admin.inject({ method: 'GET', url: '/admin/credentials', headers: { authorization: `Bearer ${token}` } })).statusCode
  const refusals = (gw: TestGateway) => gw.logs.records().filter((r) => r.msg === 'CONFIG_FILE reload refused: the running teams stay').length

  /** Waits for each replica to hold the revocation, polling its own files every POLL_MS. */
  async function revokedOnEvery(replicas: TestGateway[], what: string, revoked: (gw: TestGateway) => Promise<boolean>): Promise<void> {
    for (const gw of replicas) expect(gw.config.teamsReload.pollMs).toBe(POLL_MS)
    for (const gw of replicas) await waitFor(what, () => revoked(gw), testTimeLeft(), 20)
  }

  it('drops an admin token removed from ADMIN_TOKENS_FILE alone, on every replica', async () => {
    const f = files(yaml([plain(OLD)], POLL))
    const replicas = [await fileReplica(f), await fileReplica(f)]
    for (const gw of replicas) expect(await admin(gw, OPERATOR)).toBe(200)
    writeFileSync(f.admins, `# alice left\n${adminLine('bob', OTHER_OPERATOR)}`)
    await revokedOnEvery(replicas, 'the removed admin token to be refused', async (gw) => (await admin(gw, OPERATOR)) === 401)
    for (const gw of replicas) expect(await admin(gw, OTHER_OPERATOR)).toBe(200)
  })

  it('retries a reload refused for a bad ADMIN_TOKENS_FILE line: fixing that file alone applies the revoked key', async () => {
    const f = files(yaml([plain(OLD), plain(NEW)], POLL))
    const replicas = [await fileReplica(f), await fileReplica(f)]
    writeFileSync(f.admins, `${adminLine('alice', OPERATOR)}not a line\n`)
    f.dir.update(yaml([plain(NEW)], POLL))
    for (const gw of replicas) await waitFor('the refusal', async () => (await metric(gw, 'gateway_config_last_reload_successful')) === 0, testTimeLeft(), 20)
    for (const gw of replicas) expect(await status(gw, OLD)).toBe(200)
    // Logged once for this content, not on every poll.
    const logged = refusals(replicas[0] as TestGateway)
    // No condition to wait on for a line not logged: the time of three polls and more.
    await new Promise((r) => setTimeout(r, 3 * POLL_MS + 200))
    expect(refusals(replicas[0] as TestGateway)).toBe(logged)
    expect(await metric(replicas[0] as TestGateway, 'gateway_config_reloads_total{result="refused"}')).toBe(1)

    writeFileSync(f.admins, adminLine('alice', OPERATOR))
    await revokedOnEvery(replicas, 'the removed key to be refused', async (gw) => (await status(gw, OLD)) === 401)
    for (const gw of replicas) {
      expect(await status(gw, NEW)).toBe(200)
      expect(await metric(gw, 'gateway_config_last_reload_successful')).toBe(1)
    }
  })

  it('takes a revocation while PLATFORM_TOKEN_FILE is broken (empty, missing, Bearer …): the token in use stays, the teams do not wait for that file', async () => {
    // A key for each way the token file breaks, and one kept to the end.
    const keys = ['empty', 'missing', 'bearer', 'kept'].map((name) => `rgw_reload_${name}_key_`.padEnd(45, '2'))
    const f = files(yaml(keys.map(plain), POLL))
    const replicas = [await fileReplica(f), await fileReplica(f)]
    const good = readFileSync(f.token, 'utf8')
    const breaks = [() => writeFileSync(f.token, ''), () => rmSync(f.token), () => writeFileSync(f.token, `Bearer ${good}`)]
    for (const [i, breakIt] of breaks.entries()) {
      breakIt()
      f.dir.update(yaml(keys.slice(i + 1).map(plain), POLL))
      await revokedOnEvery(replicas, `the key removed while the token file was broken (${i}) to be refused`, async (gw) => (await status(gw, keys[i] as string)) === 401)
      for (const gw of replicas) {
        // The token in use is the last good one: the calls of the keys left still succeed.
        expect(await status(gw, keys[3] as string)).toBe(200)
        expect(await metric(gw, 'gateway_config_last_reload_successful')).toBe(1)
      }
      writeFileSync(f.token, good)
    }
    for (const gw of replicas) {
      expect(refusals(gw)).toBe(0)
      // Each reload says what it left to the token file's watcher.
      expect(gw.logs.records().filter((r) => r.msg === TOKEN_FILE_LEFT).map((r) => String(r.problem).split(':')[0])).toEqual(['PLATFORM_TOKEN_FILE', 'PLATFORM_TOKEN_FILE', 'PLATFORM_TOKEN_FILE'])
    }
  })
})

// Teams in a file of their own (TEAMS_FILE; the chart mounts it from a Secret whose
// change restarts nothing): watched like every other file a reload reads, so a key
// removed from it is refused by each replica at its next poll (teamsReload.poll), with or without CONFIG_FILE.
describe('teams in TEAMS_FILE', () => {
  // The poll is short: the tests are about the file being watched, not how often.
  const POLL = '200ms'
  const SETTINGS = `teamsReload: { poll: ${POLL} }\n`
  const teams = (keys: string[]) => `teams:\n  growth:\n    keys: [${keys.join(', ')}]\n    advertisers: ["*"]\n`

  interface Mounts {
    settings: ConfigMapDir
    teams: ConfigMapDir
  }

  const mounts = (keys: string[]): Mounts => ({ settings: configMap(SETTINGS), teams: configMap(teams(keys), 'teams.yaml') })

  // Polling only: no Redis, so each replica learns of a change from its own files.
  async function teamsReplica(m: Mounts, { configFile = true } = {}): Promise<TestGateway> {
    const env = { ...(configFile ? { CONFIG_FILE: m.settings.path } : {}), TEAMS_FILE: m.teams.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, LOG_LEVEL: 'info' }
    return gateways.build(loadConfig({ env }), { configSource: { env } })
  }

  const reload = (gw: TestGateway) => gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })

  it('takes a key added to TEAMS_FILE and refuses one removed from it, on every replica at its next poll, without a restart', async () => {
    const m = mounts([plain(OLD)])
    const replicas = [await teamsReplica(m), await teamsReplica(m)]
    for (const gw of replicas) expect([await status(gw, OLD), await status(gw, NEW)]).toEqual([200, 401])

    m.teams.update(teams([plain(OLD), plain(NEW)]))
    for (const gw of replicas) await waitFor('the added key to work', async () => (await status(gw, NEW)) === 200, testTimeLeft(), 20)

    m.teams.update(teams([plain(NEW)]))
    for (const gw of replicas) expect(gw.config.teamsReload.pollMs).toBe(200)
    for (const gw of replicas) await waitFor('the removed key to be refused', async () => (await status(gw, OLD)) === 401, testTimeLeft(), 20)
    for (const gw of replicas) {
      expect(await status(gw, NEW)).toBe(200)
      expect(gw.logs.records().filter((r) => r.action === 'teams-reload').map((r) => r.trigger)).toEqual(['file', 'file'])
    }
  })

  it('reloads TEAMS_FILE without any CONFIG_FILE: POST /admin/reload applies it', async () => {
    const m = mounts([plain(OLD)])
    const gw = await teamsReplica(m, { configFile: false })
    m.teams.update(teams([plain(NEW)]))
    const res = await reload(gw)
    expect(res.statusCode).toBe(200)
    // `unchanged` when the poll (1 s) applied the file before the call came.
    expect(res.json()).toMatchObject({ result: expect.stringMatching(/^(applied|unchanged)$/), teams: ['growth'], keys: 1 })
    expect(await status(gw, OLD)).toBe(401)
    expect(await status(gw, NEW)).toBe(200)
  })

  // As a refused start says it (ConfigError.located): a file of forty teams is fixed at a line.
  it('names TEAMS_FILE in what a refusal logs and answers when it is the only file, and the line there of each refused setting (the log line\'s problem kept as it was beside), and audits an admin\'s refused reload with its actor', async () => {
    const m = mounts([plain(OLD)])
    const gw = await teamsReplica(m, { configFile: false })
    m.teams.update(`${teams([plain(NEW)])}  broken:\n    keys: []\n    advertisers: [0]\n`)
    const res = await reload(gw)
    expect(res.statusCode).toBe(422)
    expect(res.json().message).toMatch(/^the new configuration was refused, the running teams stay: TEAMS_FILE: /)
    const at = `; line 7 of TEAMS_FILE (${m.teams.path})`
    expect(res.json().message).toContain(`teams.broken.advertisers.0: must be`)
    expect(res.json().message).toContain(at)
    // The same, each problem apart, for a console or a script to point at the line.
    expect(res.json().errors).toEqual([{ message: expect.stringMatching(/^teams\.broken\.advertisers\.0: must be .*\)$/), path: 'teams.broken.advertisers.0', variable: 'TEAMS_FILE', file: m.teams.path, line: 7 }])
    const records = gw.logs.records()
    const refused = records.filter((r) => r.msg === 'TEAMS_FILE reload refused: the running teams stay')
    // Operator input the gateway refuses, no fault of its own: a warn line, not an error.
    expect(refused).toEqual([expect.objectContaining({ level: 40, problem: expect.stringMatching(/^teams\.broken\.advertisers\.0: must be .*\)$/) })])
    expect(refused[0]?.located).toBe(`${String(refused[0]?.problem)}${at}`)
    expect(records.some((r) => String(r.msg).startsWith('CONFIG_FILE'))).toBe(false)
    expect(records.filter((r) => r.kind === 'audit' && r.action === 'teams-reload')).toEqual([
      expect.objectContaining({ outcome: 'refused', trigger: 'admin', actor: expect.any(String), msg: 'admin reload refused: TEAMS_FILE did not validate' }),
    ])
    expect(await status(gw, OLD)).toBe(200)
  })

  it('refuses teams declared in both files, naming both, and applies TEAMS_FILE again once CONFIG_FILE gives them up', async () => {
    const m = mounts([plain(OLD)])
    const gw = await teamsReplica(m)
    m.settings.update(`${SETTINGS}${teams([plain(NEW)])}`)
    await waitFor('the refusal', async () => (await metric(gw, 'gateway_config_last_reload_successful')) === 0, testTimeLeft(), 20)
    expect(await status(gw, OLD)).toBe(200)
    expect(await status(gw, NEW)).toBe(401)
    const both = `TEAMS_FILE: teams are declared both in CONFIG_FILE (${m.settings.path}) and in TEAMS_FILE (${m.teams.path}); keep them in TEAMS_FILE alone (remove teams: from CONFIG_FILE)`
    expect(gw.logs.records().filter((r) => r.msg === 'CONFIG_FILE and TEAMS_FILE reload refused: the running teams stay').map((r) => r.problem)).toEqual([both])
    const res = await reload(gw)
    expect(res.statusCode).toBe(422)
    expect(res.json()).toMatchObject({ code: 'GW_CONFIG_INVALID', message: `the new configuration was refused, the running teams stay: ${both}` })
    // A problem of no one setting, written on no line of its own.
    expect(res.json().errors).toEqual([{ message: both, path: null, variable: null, file: null, line: null }])

    m.settings.update(SETTINGS)
    m.teams.update(teams([plain(NEW)]))
    await waitFor('the key removed from TEAMS_FILE to be refused', async () => (await status(gw, OLD)) === 401, testTimeLeft(), 20)
    expect(await status(gw, NEW)).toBe(200)
    expect(await metric(gw, 'gateway_config_last_reload_successful')).toBe(1)
  })
})

// The admin tokens of ADMIN_TOKEN_FILE, ADMIN_VIEWER_TOKEN_FILE and ADMIN_TOKENS_FILE
// (the chart mounts them from its Secret) are re-read with the teams: a new token is in
// use within the poll and a reload, audited with the fingerprints that changed, and no
// setting waits for a restart.
describe('admin tokens in their files', () => {
  const FIRST = 'admin-token-file-first-000000000000'
  const SECOND = 'admin-token-file-second-11111111111'
  const CAROL = 'admin-tokens-file-carol-2222222222'
  const CAROL_NEW = 'admin-tokens-file-carol-3333333333'
  // Keyed (no GATEWAY_SECRET here: by this process's key), never the plain SHA-256 prefix a viewer could check a guess against.
  const fp = (token: string) => fingerprint(token, null)
  const plainPrefix = (token: string) => createHash('sha256').update(token).digest('hex').slice(0, 12)
  const named = (name: string, token: string) => `${name}:sha256:${createHash('sha256').update(token).digest('hex')}:viewer\n`
  // Polled until a reload takes a token: each call from an address of its own, so that the wrong ones polled lock none out.
  const whoami = async (gw: TestGateway, token: string) => (await gw.admin.inject({ method: 'GET', url: '/admin/whoami', headers: { authorization: `Bearer ${token}` }, remoteAddress: freshAddress() })).statusCode

  it('takes a new ADMIN_TOKEN_FILE at its next poll (teamsReload.poll, 1 s), audits the fingerprints that changed, and warns of no restart nor of a CONFIG_FILE that is not set', async () => {
    const teams = configMap(`teams:\n  growth:\n    keys: [${plain(OLD)}]\n    advertisers: ["*"]\n`, 'teams.yaml')
    const tokenFile = join(teams.dir, 'admin-token')
    const tokensFile = join(teams.dir, 'admin-tokens')
    writeFileSync(tokenFile, FIRST)
    writeFileSync(tokensFile, named('carol', CAROL))
    const env = { TEAMS_FILE: teams.path, ADMIN_TOKEN_FILE: tokenFile, ADMIN_TOKENS_FILE: tokensFile, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), LOG_LEVEL: 'info' }
    const gw = await gateways.build(loadConfig({ env }), { configSource: { env } })
    expect(await whoami(gw, FIRST)).toBe(200)
    const before = gw.logs.records().length

    expect(gw.config.teamsReload.pollMs).toBe(1000)
    writeFileSync(tokenFile, SECOND)
    await waitFor('the new admin token in use, the old one refused', async () => (await whoami(gw, SECOND)) === 200 && (await whoami(gw, FIRST)) === 401, testTimeLeft(), 50)
    const audits = () => gw.logs.records().slice(before).filter((r) => r.action === 'teams-reload')
    expect(audits()).toEqual([
      expect.objectContaining({ kind: 'audit', trigger: 'file', msg: 'TEAMS_FILE reloaded: new admin tokens in use', adminTokenChanges: [{ name: 'admin', role: 'operator', before: fp(FIRST), after: fp(SECOND) }] }),
    ])
    expect(JSON.stringify(audits())).not.toMatch(new RegExp([FIRST, SECOND].map(plainPrefix).join('|')))
    // The teams did not change, and no setting waits for a restart: no warning but the refusals of the old token.
    const warnings = () => gw.logs.records().slice(before).filter((r) => (r.level as number) >= 40 && r.action !== 'admin-auth')
    expect(warnings()).toEqual([])
    // The configuration in force names the token now in use.
    const config = (await gw.admin.inject({ method: 'GET', url: '/admin/config', headers: { authorization: `Bearer ${SECOND}` } })).json<{ settings: { setting: string; fingerprint?: string }[] }>()
    expect(config.settings.find((s) => s.setting === 'admin.token')?.fingerprint).toBe(fp(SECOND))

    // A named token replaced and one added in ADMIN_TOKENS_FILE: each named with its fingerprints.
    writeFileSync(tokensFile, named('carol', CAROL_NEW) + named('dave', CAROL))
    await waitFor('the named tokens reloaded', async () => (await whoami(gw, CAROL_NEW)) === 200, testTimeLeft(), 50)
    expect(audits()[1]).toMatchObject({
      adminTokenChanges: [
        { name: 'carol', role: 'viewer', before: fp(CAROL), after: fp(CAROL_NEW) },
        { name: 'dave', role: 'viewer', before: null, after: fp(CAROL) },
      ],
    })
    expect(warnings()).toEqual([])
  })

  it('refuses an ADMIN_TOKEN_FILE rewritten with `Bearer <token>` (a header pasted into it), keeping the token in use: the admin listener would match it for no caller', async () => {
    const teams = configMap(`teams:\n  growth:\n    keys: [${plain(OLD)}]\n    advertisers: ["*"]\n`, 'teams.yaml')
    const tokenFile = join(teams.dir, 'admin-token')
    writeFileSync(tokenFile, FIRST)
    const env = { TEAMS_FILE: teams.path, ADMIN_TOKEN_FILE: tokenFile, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), LOG_LEVEL: 'info' }
    const gw = await gateways.build(loadConfig({ env }), { configSource: { env } })
    const before = gw.logs.records().length
    writeFileSync(tokenFile, `Bearer ${SECOND}\n`)
    await waitFor('the reload refused', () => gw.logs.records().slice(before).some((r) => r.msg === 'TEAMS_FILE reload refused: the running teams stay'), testTimeLeft(), 50)
    expect(gw.logs.records().slice(before).filter((r) => r.action === 'teams-reload')).toEqual([])
    expect(await whoami(gw, FIRST)).toBe(200)
    const refused = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${FIRST}` } })
    expect(refused.statusCode).toBe(422)
    expect(refused.json()).toMatchObject({ code: 'GW_CONFIG_INVALID', message: expect.stringContaining('ADMIN_TOKEN: starts with "Bearer "') })
    expect(refused.body).not.toContain(SECOND)
  })
})

describe('SIGHUP on the built gateway', () => {
  let gateway: GatewayProcess | null = null
  afterEach(async () => {
    await gateway?.close()
    gateway = null
  })

  it('reloads the teams without a restart', async () => {
    const dir = configMap(yaml([plain(OLD)], '1h'))
    // spawnGateway: a port another suite took meanwhile is tried again, not a failed start.
    const proc = await spawnGateway({
      env: { CONFIG_FILE: dir.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), LOG_LEVEL: 'info' },
      yaml: '',
    })
    gateway = proc
    const call = async (key: string) => (await fetch(`${proc.url}${REPORT}`, { headers: { 'x-api-key': key } })).status
    expect(await call(OLD)).toBe(200)

    dir.update(yaml([plain(NEW)], '1h'))
    expect(await call(OLD)).toBe(200)
    proc.kill('SIGHUP')
    await waitFor('the reload', () => proc.output().includes('CONFIG_FILE reloaded'), testTimeLeft(), 25)
    expect(await call(OLD)).toBe(401)
    expect(await call(NEW)).toBe(200)
    expect(proc.child.exitCode).toBeNull()
    expect(proc.output()).toMatch(/"trigger":"signal"/)
  }, 90_000)
})

// The start warns when the memory budgets cannot fit the container's limit; without Redis
// the report jobs' results are among them, bounded per team (jobs.resultBytesPerTeam, 256
// MiB unless jobs.resultsRoom bounds them all): teams a reload adds are counted then.
describe('the memory warning at a reload', () => {
  it('says the teams a reload adds take a replica without Redis past its container\'s memory limit', async () => {
    const MiB = 1024 * 1024
    const team = (name: string, key: string) => `  ${name}:\n    keys: ["${hashApiKey(key)}"]\n    advertisers: ["*"]\n`
    const dir = configMap(`teamsReload: { poll: 1h }\nteams:\n${team('growth', OLD)}`)
    const env = { CONFIG_FILE: dir.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, LOG_LEVEL: 'info' }
    // 1 GiB: one team's results (256 MiB) beside the cache, the answers, the connections and the rest fit; three teams' do not.
    const source = { env, memoryLimit: () => 1024 * MiB }
    const config = loadConfig(source)
    expect(config.warnings.filter((w) => w.includes('memory limit'))).toEqual([])
    const gw = await gateways.build(config, { configSource: source })
    dir.update(`teamsReload: { poll: 1h }\nteams:\n${team('growth', OLD)}${team('finance', NEW)}${team('ops', 'rgw_reload_ops_key_222222222222222222222222222')}`)
    const res = await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(res.json()).toMatchObject({ result: 'applied' })
    const said = gw.logs.records().filter((r) => r.level === 40 && String(r.msg).includes('memory limit'))
    expect(said).toHaveLength(1)
    expect(String(said[0]!.msg)).toContain('jobs.resultBytesPerTeam for 3 teams')
    // The warning is the teams', not a setting waiting for a restart.
    expect(gw.logs.records().filter((r) => String(r.msg).includes('at the next restart'))).toEqual([])
    // Said once per change: a reload that leaves it so says nothing more.
    await gw.admin.inject({ method: 'POST', url: '/admin/reload', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(gw.logs.records().filter((r) => r.level === 40 && String(r.msg).includes('memory limit'))).toHaveLength(1)
  })
})
