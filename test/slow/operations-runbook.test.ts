/**
 * The tested runbook of the operations guide (docs/operations/runbook.md). Each `<!-- runbook: NAME -->`
 * sh block is run as it is written, in order, in one folder, by `sh -e`, against a
 * gateway process (dist/main.js) with Redis in front of the platform sandbox; only
 * `npm run --silent <script> --` is spelled as the script it runs. Each block's output is
 * then checked for what the guide says it shows.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSandbox, type Sandbox } from '../../src/sandbox/sandbox.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { startRedis, type RedisServer } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const ADMIN_TOKEN = 'runbook-admin-token-0123456789'

/** The runbook's blocks by name, in the guide's order. */
function runbook(): Map<string, string> {
  const guide = readFileSync(join(ROOT, 'docs/operations/runbook.md'), 'utf8')
  return new Map([...guide.matchAll(/<!-- runbook: ([\w-]+) -->\n```sh\n([\s\S]*?)```/g)].map((m) => [m[1]!, m[2]!]))
}

let sandbox: Sandbox
let redis: RedisServer
let gw: GatewayProcess
const dir = mkdtempSync(join(tmpdir(), 'rgw-runbook-'))
const teamsFile = join(dir, 'teams.yaml')

/** Runs a block without blocking this process, where the sandbox answers the gateway. */
async function run(name: string): Promise<string> {
  const script = runbook()
    .get(name)!
    .replace(/npm run --silent (\w+) --/g, (_all, script: string) => `node ${ROOT}dist/cli/${script}.js`)
  const child = spawn('sh', ['-e', '-c', script], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', ADMIN: gw.adminUrl, ADMIN_TOKEN, GATEWAY: gw.url, TEAMS_FILE: teamsFile },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c))
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c))
  const status = await new Promise<number | null>((resolve) => child.once('close', resolve))
  expect(status, `runbook ${name}:\n${stdout}\n${stderr}`).toBe(0)
  return stdout
}

const key = () => /rgw_[A-Za-z0-9_-]+/.exec(readFileSync(join(dir, 'growth-key.txt'), 'utf8'))![0]
const report = (apiKey: string) => fetch(`${gw.url}/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-11-01&dateTo=2026-11-07`, { headers: { 'x-api-key': apiKey } })

beforeAll(async () => {
  sandbox = await startSandbox()
  redis = await startRedis()
  // As the chart runs it: the settings in CONFIG_FILE (spawnGateway's, empty), the teams
  // alone in TEAMS_FILE, where the runbook's append lands under `teams:`.
  writeFileSync(teamsFile, 'teams:\n  ops:\n    keys: []\n    advertisers: ["*"]\n')
  gw = await spawnGateway({
    yaml: '',
    env: { TEAMS_FILE: teamsFile, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.url, ADMIN_TOKEN, GATEWAY_SECRET: 'runbook-gateway-secret-0123456789' },
  })
}, 120_000)

afterAll(async () => {
  await gw?.close()
  await redis?.stop()
  await sandbox?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('docs/operations/runbook.md, tested runbook', () => {
  it('has the blocks the guide promises', () => {
    expect([...runbook().keys()]).toEqual(['add-team', 'rotate-key', 'watch-rotation', 'retire-key', 'rotate-token', 'warm', 'purge', 'usage', 'keys', 'read-alert'])
  })

  it('adds a team: the reload names it and its key reads reports', async () => {
    const out = (await run('add-team'))
    // `unchanged` when the file poll (1 s) applied the change before the call came.
    expect(JSON.parse(out.slice(out.lastIndexOf('{"result"')))).toMatchObject({ result: expect.stringMatching(/^(applied|unchanged)$/), teams: expect.arrayContaining(['growth', 'ops']) })
    expect((await report(key())).status).toBe(200)
  })

  it('rotates a key with overlap: both keys work during the grace, the old one names its successor, and is 401 naming it once the grace has ended', async () => {
    const old = key()
    const out = await run('rotate-key')
    const outcome = JSON.parse(out.slice(out.lastIndexOf('{"result"'))) as { result: string; addedKeys: string[]; removedKeys: string[] }
    // The file poll may have applied it first: then the call finds nothing left to change.
    if (outcome.result === 'applied') expect([outcome.addedKeys, outcome.removedKeys]).toEqual([['growth/growth-2'], []])
    else expect(outcome.result).toBe('unchanged')
    const next = key()
    expect(next).not.toBe(old)
    expect((await report(old)).status).toBe(200)
    expect((await report(next)).status).toBe(200)
    type Row = { id: string; state: string; lineage: string; replaces: string | null; successor: string | null; graceUntil: string | null; requestsLastHour: number }
    const watched = async () => (JSON.parse(await run('watch-rotation')) as { keys: Row[] }).keys
    const during = await watched()
    expect(during.map((k) => [k.id, k.state, k.lineage, k.replaces, k.successor])).toEqual([
      ['growth-1', 'grace', 'growth-1', null, 'growth-2'],
      ['growth-2', 'active', 'growth-1', 'growth-1', null],
    ])
    expect(Date.parse(during[0]!.graceUntil!) - Date.now()).toBeGreaterThan(6 * 86_400_000)
    expect(during[0]!.requestsLastHour).toBeGreaterThan(0)

    // A week later, as far as the file knows: its grace is over.
    writeFileSync(teamsFile, readFileSync(teamsFile, 'utf8').replace(/graceUntil: "[^"]+"/, 'graceUntil: "2026-01-01T00:00:00Z"'))
    await fetch(`${gw.adminUrl}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    const refused = await report(old)
    expect(refused.status).toBe(401)
    expect(((await refused.json()) as { message: string }).message).toBe('API key growth-1 was replaced by growth-2: its grace ended at 2026-01-01T00:00:00.000Z; use the key growth-2 (your team was given it)')
    expect((await report(next)).status).toBe(200)
    expect((await watched()).map((k) => k.state)).toEqual(['ended', 'active'])
  })

  it('removes the old key: the reload names it, and the new key keeps its lineage', async () => {
    const out = await run('retire-key')
    const outcome = JSON.parse(out.slice(out.lastIndexOf('{"result"'))) as { result: string; addedKeys: string[]; removedKeys: string[] }
    if (outcome.result === 'applied') expect([outcome.addedKeys, outcome.removedKeys]).toEqual([[], ['growth/growth-1']])
    else expect(outcome.result).toBe('unchanged')
    const file = readFileSync(teamsFile, 'utf8')
    expect(file).not.toContain('id: "growth-1"')
    expect(file.match(/id: "growth-2", createdAt: "[^"]+", expiresAt: "[^"]+", lineage: "growth-1", replaces: "growth-1"/g)).toHaveLength(1)
    expect((await report(key())).status).toBe(200)
  })

  it('rotates the platform token: the new one is in use', async () => {
    const token = sandbox.issueToken()
    writeFileSync(join(dir, 'new-token'), token)
    const out = (await run('rotate-token'))
    const state = JSON.parse(out.slice(out.lastIndexOf('{"source"'))) as { source: string; usable: boolean; fingerprint: string }
    expect(state).toMatchObject({ source: 'admin', usable: true })
    expect(out).not.toContain(token)
  })

  it('warms the cache, purges one advertiser, reads the usage and the series an alert reads', async () => {
    expect((await run('warm'))).toMatch(/warm: done in [\d.]+ s: \d+ warmed/)
    expect(JSON.parse((await run('purge')))).toMatchObject({ purged: 'advertiser', advertiserId: 101 })
    await waitFor('usage of team growth in Redis', async () => (JSON.parse((await run('usage'))) as { usage: unknown[] }).usage.length > 0, testTimeLeft(), 200)
    expect((JSON.parse((await run('usage'))) as { usage: { team: string; requests: number }[] }).usage[0]).toMatchObject({ team: 'growth', requests: expect.any(Number) })
    const life = JSON.parse(await run('keys')) as { keys: { id: string; state: string; removedAt: string | null; createdAt: string; expiresAt: string; lastUsedAt: string | null; requestsLastHour: number }[] }
    expect(life.keys.map((k) => [k.id, k.state])).toEqual([['growth-2', 'active'], ['growth-1', 'removed']])
    expect(life.keys[0]).toMatchObject({ createdAt: expect.any(String), expiresAt: expect.any(String), lastUsedAt: expect.any(String) })
    expect(life.keys[0]!.requestsLastHour).toBeGreaterThan(0)
    // The removed key keeps its last use and counts.
    expect(life.keys[1]).toMatchObject({ removedAt: expect.any(String), lastUsedAt: expect.any(String) })
    expect(life.keys[1]!.requestsLastHour).toBeGreaterThan(0)
    const alert = (await run('read-alert'))
    expect(alert).toMatch(/^gateway_platform_token_usable\{credential="default"\} 1$/m)
    expect(alert).toMatch(/^gateway_config_last_reload_successful 1$/m)
  })
})
