import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { loadConfig } from '../../src/config.js'
import { KEYS, REPORT_PATH, TEAMS_YAML, WEEK_BY_DATE, buildGateway, sandboxLoginEnv, type TestGateway } from '../helpers/build-gateway.js'
import { useSandbox } from '../helpers/fixtures.js'

// Admin tokens carry a role (contract, "Admin listener"): a viewer reads (status, usage,
// cluster, the document, whoami), an operator also changes (purge, token, reload). A
// viewer's change is 403 GW_FORBIDDEN, audited, and changes nothing. A token file
// written before roles keeps working: its lines are operators.

const OPERATOR = 'roles-operator-token-0123456789abcdef'
const VIEWER = 'roles-viewer-token-0123456789abcdef'
const ALICE = 'roles-alice-token-0123456789abcdef'
const CAROL = 'roles-carol-token-0123456789abcdef'
const REPORT = `${REPORT_PATH}?${WEEK_BY_DATE}`

const sandbox = useSandbox()
let dir: string
let tokensFile: string
let gw: TestGateway

/** A tokens file as the gateway reads it: alice's line without a role (written before roles), carol's a viewer's. */
function writeTokens(aliceRole = ''): void {
  writeFileSync(tokensFile, `# operators\nalice:${hashApiKey(ALICE)}${aliceRole}\ncarol:${hashApiKey(CAROL)}:viewer\n`)
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rgw-roles-'))
  tokensFile = join(dir, 'admin-tokens')
  writeFileSync(join(dir, 'teams.yaml'), TEAMS_YAML)
  writeTokens()
  const env = { PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), ADMIN_TOKEN: OPERATOR, ADMIN_VIEWER_TOKEN: VIEWER, ADMIN_TOKENS_FILE: tokensFile, TEAMS_FILE: join(dir, 'teams.yaml'), LOG_LEVEL: 'info' }
  gw = await buildGateway(loadConfig({ env }), { configSource: { env } })
})

afterAll(async () => {
  await gw?.close()
  rmSync(dir, { recursive: true, force: true })
})

const as = (token: string, method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: object) =>
  gw.admin.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) })

async function read(): Promise<string> {
  const res = await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': KEYS.all } })
  return res.headers['x-cache'] as string
}

describe('admin roles', () => {
  it('says who a token is and its role', async () => {
    expect((await as(OPERATOR, 'GET', '/admin/whoami')).json()).toEqual({ name: 'admin', role: 'operator' })
    expect((await as(VIEWER, 'GET', '/admin/whoami')).json()).toEqual({ name: 'viewer', role: 'viewer' })
    expect((await as(ALICE, 'GET', '/admin/whoami')).json()).toEqual({ name: 'alice', role: 'operator' })
    expect((await as(CAROL, 'GET', '/admin/whoami')).json()).toEqual({ name: 'carol', role: 'viewer' })
  })

  it('lets a viewer read everything an operator reads', async () => {
    for (const url of ['/admin/status', '/admin/usage', '/admin/cluster', '/admin/audit', '/admin/openapi.json', '/admin/token', '/admin/credentials']) {
      for (const token of [VIEWER, CAROL]) expect((await as(token, 'GET', url)).statusCode, `${url}`).toBe(200)
    }
  })

  it('refuses a viewer every change with 403 GW_FORBIDDEN, audited, and changes nothing', async () => {
    expect(await read()).toBe('MISS')
    const before = gw.tokens.get('default').current()?.fingerprint
    const changes = [
      ['DELETE', '/admin/cache'],
      ['DELETE', '/admin/cache?advertiserId=101&dryRun=1'],
      ['PUT', '/admin/token', { token: sandbox.issueToken() }],
      ['POST', '/admin/token/refresh'],
      ['POST', '/admin/credentials/default/token/refresh'],
      ['POST', '/admin/reload'],
    ] as const
    for (const [method, url, body] of changes) {
      const res = await as(CAROL, method, url, body)
      expect(res.statusCode, `${method} ${url}`).toBe(403)
      expect(res.json(), `${method} ${url}`).toMatchObject({ code: 'GW_FORBIDDEN', message: expect.stringMatching(/^the admin token of carol is a viewer's: it may read, not change/) })
    }
    expect(await read()).toBe('HIT')
    expect(gw.tokens.get('default').current()?.fingerprint).toBe(before)
    const refused = gw.logs.records().filter((r) => r.kind === 'audit' && r.outcome === 'forbidden')
    expect(refused.map((r) => [r.actor, r.role, r.method, r.path])).toEqual(changes.map(([method, url]) => ['carol', 'viewer', method, url.split('?')[0]]))
    expect((await as(VIEWER, 'DELETE', '/admin/cache')).statusCode).toBe(403)
  })

  it('answers a viewer\'s change of an admin path that does not exist 404 GW_NOT_FOUND, as an operator\'s, not audited as forbidden', async () => {
    const before = gw.logs.records().length
    const missing = [['POST', '/admin/status'], ['PUT', '/admin/nope'], ['DELETE', '/admin/token/'], ['POST', '/admin/reload/x']] as const
    for (const [method, url] of missing) {
      for (const token of [CAROL, OPERATOR]) {
        const res = await as(token, method, url)
        expect(res.statusCode, `${method} ${url}`).toBe(404)
        expect(res.json(), `${method} ${url}`).toMatchObject({ code: 'GW_NOT_FOUND' })
        expect(res.body).not.toContain('operator')
      }
    }
    expect(gw.logs.records().slice(before).filter((r) => r.kind === 'audit' && r.outcome === 'forbidden')).toEqual([])
    // A real route's change stays refused.
    expect((await as(CAROL, 'POST', '/admin/reload')).statusCode).toBe(403)
  })

  it('lets an operator change, a token file line without a role included', async () => {
    const res = await as(ALICE, 'DELETE', '/admin/cache?advertiserId=101')
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ purged: 'advertiser', dropped: 1 })
    expect(gw.logs.records().find((r) => r.action === 'purge' && r.actor === 'alice')).toBeDefined()
  })

  it('takes a role changed in the tokens file at the next reload', async () => {
    writeTokens(':viewer')
    const reloaded = await as(OPERATOR, 'POST', '/admin/reload')
    expect([reloaded.statusCode, reloaded.json().replicas]).toEqual([200, 'this replica; the others when they see the files change'])
    expect((await as(ALICE, 'GET', '/admin/whoami')).json()).toEqual({ name: 'alice', role: 'viewer' })
    expect((await as(ALICE, 'DELETE', '/admin/cache')).statusCode).toBe(403)
  })

  it('refuses a reload whose tokens file has a bad line, placing it in that file at that line, the running tokens kept', async () => {
    writeFileSync(tokensFile, `# operators\nalice:${hashApiKey(ALICE)}\neve:sha256:zz\n`)
    const res = await as(OPERATOR, 'POST', '/admin/reload')
    expect(res.statusCode).toBe(422)
    const problem = 'ADMIN_TOKENS_FILE: line 3 is not name:sha256:<64 lower-case hex digits>, then optionally :viewer or :operator (make the hash with npm run keys -- hash TOKEN)'
    // The problem names its own file: not put under TEAMS_FILE, which holds no fault.
    expect(res.json()).toMatchObject({ code: 'GW_CONFIG_INVALID', message: `the new configuration was refused, the running teams stay: ${problem}`, errors: [{ message: problem, path: null, variable: 'ADMIN_TOKENS_FILE', file: tokensFile, line: 3 }] })
    expect((await as(CAROL, 'GET', '/admin/whoami')).json()).toEqual({ name: 'carol', role: 'viewer' })
    writeTokens(':viewer')
  })

  // A teams file that is no YAML was answered `…stay: TEAMS_FILE: TEAMS_FILE (<path>): not valid YAML …`, its variable said twice.
  it('refuses a reload whose teams file is no YAML naming the file once', async () => {
    const teamsFile = join(dir, 'teams.yaml')
    writeFileSync(teamsFile, 'teams:\n  all:\n    keys: [\n')
    const res = await as(OPERATOR, 'POST', '/admin/reload')
    // GET /admin/status, a viewer's too, names the refusal while the running teams stay.
    const refused = (await as(VIEWER, 'GET', '/admin/status')).json().teamsReload
    writeFileSync(teamsFile, TEAMS_YAML)
    expect(res.statusCode).toBe(422)
    const problem = (res.json().errors as { message: string }[])[0]!.message
    expect(problem).toMatch(new RegExp(`^TEAMS_FILE \\(${teamsFile}\\): not valid YAML at line 4, column 1: `))
    expect(res.json().message).toBe(`the new configuration was refused, the running teams stay: ${problem}`)
    expect(refused).toEqual({ available: true, files: ['TEAMS_FILE'], reason: null, refused: { since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), problems: [problem] } })
    expect((await as(OPERATOR, 'POST', '/admin/reload')).statusCode).toBe(200)
    expect((await as(VIEWER, 'GET', '/admin/status')).json().teamsReload.refused).toBeNull()
  })

  it('refuses a reload whose file holds a team key where none belongs without repeating the key, in its message or its errors', async () => {
    const teamsFile = join(dir, 'teams.yaml')
    writeFileSync(teamsFile, TEAMS_YAML.replace('  all:\n', `  all:\n    rateLimit: { max: ${KEYS.growth} }\n`))
    const res = await as(OPERATOR, 'POST', '/admin/reload')
    expect(res.statusCode).toBe(422)
    expect(res.json().errors).toContainEqual(expect.objectContaining({ path: 'teams.all.rateLimit.max', message: expect.stringContaining('[REDACTED]') }))
    expect(res.body).not.toContain(KEYS.growth.slice(4))
    writeFileSync(teamsFile, TEAMS_YAML)
  })

  it('refuses a start where the viewer token is the admin token, or a token file line with another role', () => {
    const base = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: 'roles-platform-token-000' }
    expect(() => loadConfig({ env: { ...base, ADMIN_TOKEN: OPERATOR, ADMIN_VIEWER_TOKEN: OPERATOR } })).toThrow(/ADMIN_VIEWER_TOKEN: is ADMIN_TOKEN itself/)
    writeFileSync(tokensFile, `dave:${hashApiKey(ALICE)}:admin\n`)
    expect(() => loadConfig({ env: { ...base, ADMIN_TOKENS_FILE: tokensFile } })).toThrow(/ADMIN_TOKENS_FILE: line 1 is not name:sha256:<64 lower-case hex digits>, then optionally :viewer or :operator/)
  })
})
