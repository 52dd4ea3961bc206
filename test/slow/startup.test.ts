import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer, request as httpRequest } from 'node:http'
import { createServer, type AddressInfo, type Server } from 'node:net'
import { lookup } from 'node:dns/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { ConfigError, startConfig } from '../../src/config.js'
import { sandboxLoginEnv } from '../helpers/build-gateway.js'
import { portTaken } from '../helpers/gateway-process.js'
import { CLOSED_PORT, reservedPorts } from '../helpers/start-redis.js'
import { startsTimeout, testTimeLeft, timeLeftOf, waitFor, waitUntil } from '../helpers/wait.js'
import { useSandbox } from '../helpers/fixtures.js'

// A start that cannot work stops with one line saying what to do, and a start
// that works says the truth about what it found (demo mode, Redis). Run as production
// runs it: the built dist/main.js in a clean environment. A configuration main.ts refuses
// is read by startConfig (src/config.ts): each way a start stops is a real start here, and
// the other refusals are startConfig's answer to the same environment, in this process.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const MAIN = join(ROOT, 'dist/main.js')
const CONFIG_ERROR_EXIT = 78

let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rgw-startup-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const running: ChildProcess[] = []
afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
})

interface Run {
  child: ChildProcess
  output: () => string
  stderr: () => string
  exit: Promise<number | null>
}

/** A start's whole environment: `env` in a clean one. */
function startEnv(env: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...env }
}

/** dist/main.js started with `env`; killed after the test, or by `owner`'s holder. */
function start(env: Record<string, string>, owner = running): Run {
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: startEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  owner.push(child)
  let out = ''
  let err = ''
  child.stdout?.setEncoding('utf8').on('data', (c: string) => (out += c))
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (err += c))
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return { child, output: () => out + err, stderr: () => err, exit }
}

/** A start that must stop: its exit code and every line it printed. */
async function refused(env: Record<string, string>): Promise<{ code: number | null; lines: string[] }> {
  const run = start(env)
  // Killed, if it has not stopped, as the test's time runs out: its lines then say where it was.
  const timer = setTimeout(() => run.child.kill('SIGKILL'), testTimeLeft())
  const code = await run.exit
  clearTimeout(timer)
  return { code, lines: run.output().split('\n').filter(Boolean) }
}

/**
 * The lines a start with `env` writes as it stops for its configuration (exit 78), from
 * startConfig in this process: what main.ts prints of its refusal.
 */
async function refusal(env: Record<string, string>): Promise<string[]> {
  const config = await startConfig({ env: startEnv(env) })
  if (!(config instanceof ConfigError)) throw new Error('the configuration holds: the start would run')
  return `report-gateway: ${config.message}`.split('\n')
}

/** The first line of `run` matching `pattern`, waited for while it runs (by default the test's time left). */
async function waitForLine(run: Run, pattern: RegExp, ms = testTimeLeft()): Promise<string> {
  const line = () => run.output().split('\n').find((l) => pattern.test(l))
  await waitFor(() => `a line matching ${pattern}:\n${run.output()}`, () => line() !== undefined || run.child.exitCode !== null, ms, 25)
  const found = line()
  if (found === undefined) throw new Error(`no line matching ${pattern}, the start exited (${run.child.exitCode}):\n${run.output()}`)
  return found
}

const sandbox = useSandbox()

function file(name: string, text: string): string {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

const TEAMS = `teams:\n  growth:\n    keys: ["${hashApiKey('rgw_startup_test_key_00000000000000000')}"]\n    advertisers: [101]\n`

describe('misconfiguration stops the start with one line', () => {
  // A start for each way main.ts stops: startConfig's refusal, with a mistyped variable beside it, or
  // two listeners that cannot bind (exit 78), and a port in use (exit 1). Each test starts one
  // process (startsTimeout); those of startConfig below start none.
  it('a token file and teams without PLATFORM_BASE_URL: no demo mode, exit 78, the missing address named', async () => {
    const { code, lines } = await refused({ PLATFORM_TOKEN_FILE: file('token', 'a-real-token-000000\n'), CONFIG_FILE: file('teams.yaml', TEAMS), PORT: '0', ADMIN_PORT: '0' })
    expect(code).toBe(CONFIG_ERROR_EXIT)
    expect(lines).toEqual([
      "report-gateway: invalid configuration: PLATFORM_BASE_URL: not set, but PLATFORM_TOKEN_FILE, teams, CONFIG_FILE are configured; set PLATFORM_BASE_URL to the platform's address (or DEMO=1 for the bundled sandbox)",
    ])
  }, startsTimeout(1))

  it('a mistyped variable beside what the start misses (PLATFORM_TOKN): exit 78, the line names the typo and what it was meant to be', async () => {
    const { code, lines } = await refused({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKN: 'x'.repeat(20), PORT: '0', ADMIN_PORT: '0' })
    expect(code).toBe(CONFIG_ERROR_EXIT)
    expect(lines).toEqual([
      'report-gateway: invalid configuration:',
      '  - PLATFORM_TOKEN: credential default has no token source; set PLATFORM_TOKEN, PLATFORM_TOKEN_FILE, or PLATFORM_USERNAME, PLATFORM_PASSWORD, PLATFORM_CLIENT_ID and PLATFORM_CLIENT_SECRET',
      '  - PLATFORM_TOKN: not a variable the gateway reads; did you mean PLATFORM_TOKEN? (rename it; as it is, the gateway starts as if PLATFORM_TOKEN were not set)',
    ])
    expect(lines.join('\n')).not.toContain('x'.repeat(20))
  }, startsTimeout(1))

  it('one port for both listeners: exit 78 naming both variables, where the start said only that the port was in use', async () => {
    const port = String((await reservedPorts(1))[0])
    const { code, lines } = await refused({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: 'x'.repeat(20), HOST: '0.0.0.0', PORT: port, ADMIN_HOST: '127.0.0.1', ADMIN_PORT: port })
    expect(code).toBe(CONFIG_ERROR_EXIT)
    expect(lines).toEqual([
      `report-gateway: invalid configuration: ADMIN_PORT: the same port as PORT (${port}), on addresses that overlap (ADMIN_HOST 127.0.0.1, HOST 0.0.0.0): the admin listener cannot bind beside the proxy listener; set another ADMIN_PORT (default 8081)`,
    ])
  }, startsTimeout(1))

  // An IPv6 address is written in brackets, as a URL writes it.
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['::1', '[::1]'],
  ])('a port in use on %s: one line naming %s and the port, no stack trace, exit 1', async (host, written) => {
    const taken: Server = createServer()
    await new Promise<void>((resolve) => taken.listen(0, host, resolve))
    try {
      const port = (taken.address() as { port: number }).port
      const { code, lines } = await refused({ HOST: host, PORT: String(port), ADMIN_PORT: '0', LOG_LEVEL: 'silent' })
      expect(code).toBe(1)
      // It says what to do: the quick start's default port is often another program's.
      expect(lines.filter((l) => !l.startsWith('{'))).toEqual([`report-gateway: cannot listen on ${written}:${port}: the port is in use by another process: stop it, or choose a free port (set HOST, PORT)`])
      expect(lines.join('\n')).not.toMatch(/\n\s+at /)
      // The test helpers start a gateway again on other ports when they read this line.
      expect(portTaken(lines.join('\n'))).toBe(true)
    } finally {
      await new Promise((resolve) => taken.close(resolve))
    }
  }, startsTimeout(1))

  it('a port in use with a password login: exit 1 before any platform call, and no token audit line (nothing changed)', async () => {
    const taken: Server = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    try {
      const port = (taken.address() as { port: number }).port
      sandbox.clearRequests()
      const { code, lines } = await refused({ HOST: '127.0.0.1', PORT: String(port), ADMIN_PORT: '0', PLATFORM_BASE_URL: sandbox.url, ...sandboxLoginEnv(sandbox), LOG_LEVEL: 'info' })
      expect(code).toBe(1)
      expect(portTaken(lines.join('\n'))).toBe(true)
      expect(lines.filter((l) => l.includes('platform token changed'))).toEqual([])
      expect(sandbox.requests.map((r) => r.path)).toEqual([])
    } finally {
      await new Promise((resolve) => taken.close(resolve))
    }
  }, startsTimeout(1))

  // The other refusals: startConfig's answer to the environment each start would have,
  // the lines main.ts prints before it exits 78 (as the starts above show).
  describe('as startConfig reads them', () => {
    it('teams in both CONFIG_FILE and TEAMS_FILE: one line naming both files', async () => {
      const configFile = file('config-with-teams.yaml', TEAMS)
      const teamsFile = file('teams-file.yaml', TEAMS)
      const lines = await refusal({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: 'x'.repeat(20), CONFIG_FILE: configFile, TEAMS_FILE: teamsFile, PORT: '0', ADMIN_PORT: '0' })
      expect(lines).toEqual([
        `report-gateway: invalid configuration: TEAMS_FILE: teams are declared both in CONFIG_FILE (${configFile}) and in TEAMS_FILE (${teamsFile}); keep them in TEAMS_FILE alone (remove teams: from CONFIG_FILE)`,
      ])
    })

    it('a CREDENTIAL_* variable of a credential the file does not declare: named, its value never', async () => {
      const secret = 'startup-orphan-token-0123456789'
      const lines = await refusal({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: 'x'.repeat(20), CREDENTIAL_REMOVED_TOKEN: secret, PORT: '0', ADMIN_PORT: '0' })
      expect(lines).toEqual([
        'report-gateway: invalid configuration: CREDENTIAL_REMOVED_TOKEN: a variable of no declared credential (credentials: none declared): the gateway reads nothing of it; remove it, or declare the credential it is for',
      ])
      expect(lines.join('\n')).not.toContain(secret)
    })

    it('a teams file without PLATFORM_BASE_URL is refused like a config file', async () => {
      const lines = await refusal({ TEAMS_FILE: file('teams-alone.yaml', TEAMS), PORT: '0', ADMIN_PORT: '0' })
      expect(lines).toEqual([
        "report-gateway: invalid configuration: PLATFORM_BASE_URL: not set, but teams, TEAMS_FILE are configured; set PLATFORM_BASE_URL to the platform's address (or DEMO=1 for the bundled sandbox)",
      ])
    })

    it('Redis alone without PLATFORM_BASE_URL is refused too', async () => {
      const lines = await refusal({ REDIS_URL: 'redis://127.0.0.1:6399', GATEWAY_SECRET: 'startup-gateway-secret-000000000', PORT: '0', ADMIN_PORT: '0' })
      expect(lines).toEqual([
        "report-gateway: invalid configuration: PLATFORM_BASE_URL: not set, but REDIS_URL is configured; set PLATFORM_BASE_URL to the platform's address (or DEMO=1 for the bundled sandbox)",
      ])
    })

    it('a team\'s "*" beside advertiser ids: one line naming the team and the setting', async () => {
      const teams = TEAMS.replace('[101]', '["*", 101]')
      const teamsFile = file('teams-star-and-ids.yaml', teams)
      const lines = await refusal({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: 'x'.repeat(20), TEAMS_FILE: teamsFile, PORT: '0', ADMIN_PORT: '0' })
      // The setting's line in the file, which the message names after the problem.
      const line = teams.split('\n').findIndex((l) => l.includes('["*", 101]')) + 1
      expect(lines).toEqual([`report-gateway: invalid configuration: teams.growth.advertisers: "*" (every advertiser) is listed beside advertiser ids (101); give ["*"] alone, or the ids alone; line ${line} of TEAMS_FILE (${teamsFile})`])
    })

    it('a PLATFORM_TOKEN_FILE that does not exist: refused with one line, not a log line every second', async () => {
      const missing = join(dir, 'no-such-token')
      const lines = await refusal({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN_FILE: missing, PORT: '0', ADMIN_PORT: '0' })
      expect(lines).toEqual([`report-gateway: invalid configuration: PLATFORM_TOKEN_FILE: ${missing} cannot be read (ENOENT); it must hold the platform token`])
    })

    it('secrets wrapped in quotes, as docker --env-file keeps them from a .env line: each named, never shown', async () => {
      const secret = 'quoted-gateway-secret-0123456789'
      const token = sandbox.issueToken()
      const lines = await refusal({
        PLATFORM_BASE_URL: sandbox.url,
        PLATFORM_TOKEN: `'${token}'`,
        REDIS_URL: 'redis://127.0.0.1:6399',
        GATEWAY_SECRET: `"${secret}"`,
        PORT: '0',
        ADMIN_PORT: '0',
      })
      expect(lines).toEqual([
        'report-gateway: invalid configuration:',
        '  - GATEWAY_SECRET: is wrapped in quotes, which docker --env-file and Compose\'s env_file keep as part of the value; set it without them (the value is not shown)',
        '  - PLATFORM_TOKEN: is wrapped in quotes, which docker --env-file and Compose\'s env_file keep as part of the value; set it without them (the value is not shown)',
      ])
      expect(lines.join('\n')).not.toMatch(new RegExp(`${secret}|${token}`))
    })

    it.each([
      ['localhost', 'loopback'],
      ['loopback', 'localhost'],
      ['::1', '0:0:0:0:0:0:0:1'],
      ['::', '127.0.0.1'],
      ['::ffff:127.0.0.1', '127.0.0.1'],
    ])('one port for both listeners under two names of one address (%s and %s): refused as a setting, where the second bind failed', async (...names) => {
      const port = String((await reservedPorts(1))[0])
      // `loopback`: what localhost binds to here (Node's listen takes the first address it resolves to).
      const loopback = (await lookup('localhost')).address
      const [host, adminHost] = names.map((name) => (name === 'loopback' ? loopback : name))
      const lines = await refusal({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: 'x'.repeat(20), HOST: host!, PORT: port, ADMIN_HOST: adminHost!, ADMIN_PORT: port, LOG_LEVEL: 'silent' })
      expect(lines).toEqual([
        `report-gateway: invalid configuration: ADMIN_PORT: the same port as PORT (${port}), on addresses that overlap (ADMIN_HOST ${adminHost}, HOST ${host}): the admin listener cannot bind beside the proxy listener; set another ADMIN_PORT (default 8081)`,
      ])
    })

    it('a short ADMIN_TOKEN names the minimum length', async () => {
      const lines = await refusal({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: 'x'.repeat(20), ADMIN_TOKEN: 'short', PORT: '0', ADMIN_PORT: '0' })
      expect(lines).toEqual(['report-gateway: invalid configuration: ADMIN_TOKEN: must be at least 16 characters long'])
    })

    it('an OTEL_* value the gateway cannot honour stops the start without an OTLP endpoint too (Zipkin asked through its own variable)', async () => {
      const lines = await refusal({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: 'x'.repeat(20), OTEL_TRACES_EXPORTER: 'zipkin', OTEL_EXPORTER_ZIPKIN_ENDPOINT: 'http://zipkin:9411/api/v2/spans', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', PORT: '0', ADMIN_PORT: '0' })
      expect(lines).toEqual([
        'report-gateway: invalid configuration:',
        '  - OTEL_TRACES_EXPORTER: zipkin is not supported; the gateway exports traces with otlp (or none: off)',
        '  - OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not supported; use http/protobuf (the default) or http/json',
      ])
    })
  })
})

describe('a start that works says what it found', () => {
  it('a report read that comes while the start logs in is answered once the token is in, not refused', async () => {
    // A front that holds the platform's login until released, so the start's window
    // between listening and its first token stays open as long as the test needs.
    let release: () => void = () => undefined
    const released = new Promise<void>((resolve) => (release = resolve))
    let logins = 0
    const front = createHttpServer((req, res) => {
      const forward = () => {
        const upstream = httpRequest(new URL(req.url ?? '/', sandbox.url), { method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
        })
        req.pipe(upstream)
      }
      if (req.url?.startsWith('/oauth/token') === true) {
        logins++
        void released.then(forward)
      } else forward()
    })
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve))
    try {
      const [port] = (await reservedPorts(1)) as [number]
      const run = start({ HOST: '127.0.0.1', PORT: String(port), ADMIN_PORT: '0', PLATFORM_BASE_URL: `http://127.0.0.1:${(front.address() as AddressInfo).port}`, ...sandboxLoginEnv(sandbox), TEAMS_FILE: file('early-teams.yaml', TEAMS), LOG_LEVEL: 'info' })
      await waitFor('the login at the platform', () => logins > 0, testTimeLeft(), 25)
      const early = fetch(`http://127.0.0.1:${port}/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-07`, { headers: { 'x-api-key': 'rgw_startup_test_key_00000000000000000' } })
      // Refused before the token is in (the defect) it settles at once; let it show so.
      let status: number | null = null
      void early.then((r) => (status = r.status))
      await waitUntil(1000, () => status !== null)
      expect(status).toBeNull()
      release()
      expect((await early).status).toBe(200)
      await waitForLine(run, /report gateway listening/)
    } finally {
      release()
      front.closeAllConnections()
      await new Promise((resolve) => front.close(resolve))
    }
  }, startsTimeout(1))

  it('demo mode with nothing configured listens on 127.0.0.1', async () => {
    const run = start({ PORT: '0', ADMIN_PORT: '0' })
    const line = await waitForLine(run, /report gateway listening/)
    expect(JSON.parse(line)).toMatchObject({ proxy: expect.stringMatching(/^127\.0\.0\.1:\d+$/) })
    expect(run.output()).toContain('Demo mode (nothing configured)')
    // The console opens with the admin token demo mode made for the run, at the address printed.
    await waitFor('the banner', () => run.output().includes('Operations console:'), testTimeLeft(), 25)
    const token = /Admin token \(an operator's, valid for this run only\): ([\w-]{43})\n/.exec(run.output())?.[1]
    const url = /Operations console: (http:\/\/127\.0\.0\.1:\d+)\/console \(sign in with the admin token above\)/.exec(run.output())?.[1]
    expect(token).toBeDefined()
    expect(url).toBeDefined()
    const whoami = await fetch(`${url}/admin/whoami`, { headers: { authorization: `Bearer ${token}` } })
    expect(await whoami.json()).toEqual({ name: 'demo', role: 'operator' })
    expect((await fetch(`${url}/console`)).status).toBe(200)
    // GET /admin/config names every setting the replica runs with (README, "Operations"):
    // the sandbox's login and the admin token the run made are demo mode's, each a
    // fingerprint, never left as unset defaults nor missing.
    const { settings } = (await (await fetch(`${url}/admin/config`, { headers: { authorization: `Bearer ${token}` } })).json()) as { settings: { setting: string; value: unknown; source: string; fingerprint?: string }[] }
    const shown = (name: string) => settings.find((s) => s.setting === name)
    for (const name of ['platform.username', 'platform.password', 'platform.clientId', 'platform.clientSecret', 'admin.token']) {
      expect(shown(name), name).toMatchObject({ value: null, source: 'demo', fingerprint: expect.stringMatching(/^[0-9a-f]{12}$/) })
    }
    expect(JSON.stringify(settings)).not.toContain(token!)
    // The token is printed once, never logged.
    expect(run.output().split(token!).length).toBe(2)
  }, startsTimeout(1))

  // The exit-78 line of teams without PLATFORM_BASE_URL offers DEMO=1; the README's first
  // team, made with `npm run keys -- new --team demo`, is named as demo mode's own.
  it('DEMO=1 with the README\'s teams file serves its team demo and the run\'s key, whose banner names its team', async () => {
    const own = 'rgw_startup_demo_team_key_000000000000000'
    const run = start({ PORT: '0', ADMIN_PORT: '0', DEMO: '1', CONFIG_FILE: file('readme-teams.yaml', `teams:\n  demo:\n    keys:\n      - { hash: "${hashApiKey(own)}", createdAt: "2026-11-30T20:53:34Z" }\n    advertisers: ["*"]\n`) })
    const listening = JSON.parse(await waitForLine(run, /report gateway listening/)) as { proxy: string; teams: string[] }
    expect(listening.teams).toEqual(['demo', 'demo-2'])
    await waitFor('the banner', () => run.output().includes('Try:'), testTimeLeft(), 25)
    const key = /Demo team key \(valid for this run only; its team is demo-2, as a configured team is named demo\): (rgw_[\w-]+)\n/.exec(run.output())?.[1]
    expect(key).toBeDefined()
    for (const caller of [own, key!]) {
      const res = await fetch(`http://${listening.proxy}/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-11-01&dateTo=2026-11-07`, { headers: { 'x-api-key': caller } })
      expect(res.status, caller === own ? 'the configured team demo' : 'the run\'s team').toBe(200)
    }
  }, startsTimeout(1))

  it('demo mode on another loopback address (HOST, ADMIN_HOST): the banner\'s curl line and console address reach it', async () => {
    const run = start({ DEMO: '1', HOST: '127.0.0.2', PORT: '0', ADMIN_HOST: '127.0.0.3', ADMIN_PORT: '0' })
    await waitForLine(run, /report gateway listening/)
    await waitFor('the banner', () => run.output().includes('Operations console:'), testTimeLeft(), 25)
    const [, key, url] = /curl -s -i -H 'x-api-key: (rgw_[\w-]+)' '(http:\/\/127\.0\.0\.2:\d+\/api\/v1\/report\/[^']+)'/.exec(run.output()) ?? []
    expect(url).toBeDefined()
    expect((await fetch(url!, { headers: { 'x-api-key': key! } })).status).toBe(200)
    const consoleUrl = /Operations console: (http:\/\/127\.0\.0\.3:\d+\/console) /.exec(run.output())?.[1]
    expect(consoleUrl).toBeDefined()
    expect((await fetch(consoleUrl!)).status).toBe(200)
  }, startsTimeout(1))

  it('on an IPv6 address (HOST, ADMIN_HOST ::1): the start line, the banner\'s curl line and console address write it in brackets, and reach it', async () => {
    const run = start({ DEMO: '1', HOST: '::1', PORT: '0', ADMIN_HOST: '::1', ADMIN_PORT: '0' })
    const listening = JSON.parse(await waitForLine(run, /report gateway listening/)) as { proxy: string; admin: string }
    expect([listening.proxy, listening.admin]).toEqual([expect.stringMatching(/^\[::1\]:\d+$/), expect.stringMatching(/^\[::1\]:\d+$/)])
    expect((await fetch(`http://${listening.proxy}/healthz`)).status).toBe(200)
    expect((await fetch(`http://${listening.admin}/console`)).status).toBe(200)
    await waitFor('the banner', () => run.output().includes('Operations console:'), testTimeLeft(), 25)
    const [, key, url] = /curl -s -i -H 'x-api-key: (rgw_[\w-]+)' '(http:\/\/\[::1\]:\d+\/api\/v1\/report\/[^']+)'/.exec(run.output()) ?? []
    expect(url).toBeDefined()
    expect((await fetch(url!, { headers: { 'x-api-key': key! } })).status).toBe(200)
    const consoleUrl = /Operations console: (http:\/\/\[::1\]:\d+\/console) /.exec(run.output())?.[1]
    expect(consoleUrl).toBeDefined()
    expect((await fetch(consoleUrl!)).status).toBe(200)
  }, startsTimeout(1))

  it('demo mode with ADMIN_TOKEN prints where the console is', async () => {
    const run = start({ PORT: '0', ADMIN_PORT: '0', ADMIN_TOKEN: 'demo-admin-token-0123456789abcdef' })
    await waitForLine(run, /report gateway listening/)
    await waitFor('the banner', () => run.output().includes('Operations console:'), testTimeLeft(), 25)
    expect(run.output()).toMatch(/Operations console: http:\/\/127\.0\.0\.1:\d+\/console \(sign in with your admin token\)/)
    expect(run.output()).not.toContain('Admin token (')
    expect(run.output()).not.toContain('demo-admin-token-0123456789abcdef')
  }, startsTimeout(1))

  // One start for the settings a start warns of but takes: each warning is a line of its own.
  describe('settings it takes with a warning, in one start', () => {
    const adminToken = 'startup-admin-token-0123456789abcdef'
    const shared: ChildProcess[] = []
    let token = ''
    let run: Run
    let listening: { admin: string }
    /** The lines the start wrote holding `text`, parsed. */
    const saying = (text: string) =>
      run
        .output()
        .split('\n')
        .filter((l) => l.includes(text))
        .map((l) => JSON.parse(l) as { level: number; msg: string })

    // A gateway process started outside a test's body (docs/decisions/test-waits.md).
    const START_MS = 120_000
    beforeAll(async () => {
      const started = Date.now()
      token = sandbox.issueToken()
      const yaml = `${TEAMS}    write: true\nplatform:\n  permitLease: 2s\n  queueTimeout: 5\ncache:\n  lockTtl: 500\nownership:\n  creativeSets: { check: pass }\n`
      run = start(
        {
          PLATFORM_BASE_URL: sandbox.url,
          PLATFORM_TOKEN: token,
          CONFIG_FILE: file('warned-settings.yaml', yaml),
          ADMIN_TOKEN: adminToken,
          HOST: '127.0.0.1',
          PORT: '0',
          ADMIN_PORT: '0',
          REDIS_ULR: 'redis://:a-redis-password@127.0.0.1:6399',
          LOG_LEVL: 'debug',
          HOME: '/home/someone',
          KUBERNETES_SERVICE_HOST: '10.0.0.1',
          npm_config_cache: '/tmp/npm',
        },
        shared,
      )
      listening = JSON.parse(await waitForLine(run, /report gateway listening/, timeLeftOf(started, START_MS))) as { admin: string }
    }, START_MS)
    afterAll(() => {
      for (const child of shared) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    })

    it('a setting under its name of the last release (platform.permitLease): started with it in force, one warning naming the new name', async () => {
      expect(saying('platform.permitLease')).toEqual([
        expect.objectContaining({
          level: 40,
          msg: 'platform.permitLease is renamed platform.seatLease: the old name is taken until the next release; set platform.seatLease instead',
        }),
      ])
      const res = await fetch(`http://${listening.admin}/admin/config`, { headers: { authorization: `Bearer ${adminToken}` } })
      const { settings } = (await res.json()) as { settings: { setting: string; value: unknown; source: string; from: string }[] }
      expect(settings.find((s) => s.setting === 'platform.seatLease')).toEqual({ setting: 'platform.seatLease', value: '2s', source: 'file', from: 'CONFIG_FILE' })
    })

    it('a mistyped optional variable (REDIS_ULR, LOG_LEVL): started, one warning each naming the typo and the variable meant, never the value', () => {
      expect(saying('not a variable the gateway reads')).toEqual([
        expect.objectContaining({ level: 40, msg: 'LOG_LEVL: not a variable the gateway reads; did you mean LOG_LEVEL? (rename it; as it is, the gateway starts as if LOG_LEVEL were not set)' }),
        expect.objectContaining({ level: 40, msg: 'REDIS_ULR: not a variable the gateway reads; did you mean REDIS_URL? (rename it; as it is, the gateway starts as if REDIS_URL were not set)' }),
      ])
      expect(run.output()).not.toContain('a-redis-password')
    })

    // (A team's rateLimit.window so written is refused: a window is whole seconds, 1s at least.)
    it('a duration written as a bare number under a second (queueTimeout: 5, lockTtl: 500): started, one warning each saying it is read as milliseconds', () => {
      expect(saying('is read as')).toEqual([
        expect.objectContaining({ level: 40, msg: 'platform.queueTimeout: 5 is read as 5 ms (a duration given as a number is milliseconds); write 5s if seconds were meant, or 5ms to keep it' }),
        expect.objectContaining({ level: 40, msg: 'cache.lockTtl: 500 is read as 500 ms (a duration given as a number is milliseconds); write 500s if seconds were meant, or 500ms to keep it' }),
      ])
    })

    it('ownership.creativeSets.check: pass with a scoped team that may write: one warning at start naming it and what it allows, no secret', () => {
      const said = run.output().split('\n').filter((l) => l.includes('ownership.creativeSets'))
      expect(said).toHaveLength(1)
      expect(JSON.parse(said[0] as string)).toMatchObject({
        level: 40,
        msg: "ownership.creativeSets.check is pass: a team limited to some advertisers may attach any advertiser's creative sets (creativeSetIds are sent unchecked; scoped teams that may write: growth); set check: lookup (with listPath) to check them, or refuse",
      })
      expect(said[0]).not.toMatch(new RegExp([token, 'rgw_startup_test_key', 'sha256:', adminToken].join('|')))
    })
  })

  it('Redis at a closed port: the start line says down, one warning names host:port and the cause, never the password', async () => {
    const port = CLOSED_PORT
    const run = start({
      PLATFORM_BASE_URL: sandbox.url,
      PLATFORM_TOKEN: sandbox.issueToken(),
      REDIS_URL: `redis://:s3cret-redis-pass@127.0.0.1:${port}`,
      GATEWAY_SECRET: 'startup-gateway-secret-000000000',
      PORT: '0',
      ADMIN_PORT: '0',
    })
    const listening = JSON.parse(await waitForLine(run, /report gateway listening/)) as Record<string, unknown>
    expect(listening.redis).toBe(`down (127.0.0.1:${port})`)
    const down = run.output().split('\n').filter((l) => l.includes('redis unavailable'))
    expect(down).toHaveLength(1)
    expect(JSON.parse(down[0] as string)).toMatchObject({ level: 40, redis: `127.0.0.1:${port}`, cause: expect.stringContaining('ECONNREFUSED') })
    expect(run.output()).not.toContain('s3cret-redis-pass')
  }, startsTimeout(1))
})
