import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/dist.js'
import { portTaken } from '../helpers/gateway-process.js'
import { reservedPorts } from '../helpers/start-redis.js'
import { PROCESS_START_MS, testTimeLeft, timeLeftOf, waitFor as poll } from '../helpers/wait.js'
import { tryConnect } from '../helpers/tcp-probe.js'

// Contract, "Running": `npm start` without a platform is demo mode and prints a ready
// curl line; main.ts stops on SIGTERM by draining (readiness 503, still answering; a
// second SIGTERM ends the drain), then refusing new connections, letting requests in
// flight finish, and exiting 0. Run as production runs it: the built dist/main.js.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))

let child: ChildProcess
let output = ''
let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
let port: number
let adminPort: number

// The start is tried up to this many times (a port another suite takes first), each given
// a process start's time: node loading dist/main.js, the sandbox and the gateway, about 2 s
// of CPU, which beside busy processes on 2 cores takes tens of seconds before the curl line.
const STARTS = 3
const START_HOOK_MS = STARTS * PROCESS_START_MS

/** Waits until the gateway printed `pattern` (by default for the running test's time left); fails at once when it exits first. */
function waitFor(pattern: RegExp, ms = testTimeLeft()): Promise<void> {
  const printed = () => {
    if (child.exitCode !== null) throw new Error(`gateway exited (${child.exitCode}) before printing ${pattern}:\n${output}`)
    return pattern.test(output)
  }
  return poll(() => `${pattern} within ${ms} ms:\n${output}`, printed, ms, 25)
}

/** Starts the built gateway in demo mode on fresh ports; resolves once it printed its curl line, failing after `ms`. */
async function startDemo(ms: number): Promise<void> {
  ;[port, adminPort] = (await reservedPorts(2)) as [number, number]
  output = ''
  // A clean environment: no PLATFORM_* from the developer's shell, so demo mode.
  child = spawn(process.execPath, [MAIN], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), ADMIN_PORT: String(adminPort), LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  await waitFor(/curl .*\n/, ms)
}

beforeAll(async () => {
  const started = Date.now()
  ensureBuilt(MAIN)
  // A process outside this machine's test runs may hold a port drawn: try again.
  for (let attempt = 1; ; attempt++) {
    try {
      await startDemo(timeLeftOf(started, START_HOOK_MS))
      return
    } catch (err) {
      if (attempt >= STARTS || !portTaken(output)) throw err
    }
  }
}, START_HOOK_MS)

afterAll(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
})

describe('demo mode and graceful shutdown', () => {
  it('prints a curl line whose key and URL answer 200 with sandbox data', async () => {
    const [, key, url] = /curl -s -i -H 'x-api-key: (rgw_[A-Za-z0-9_-]+)' '(http:\/\/127\.0\.0\.1:(\d+)\/api\/v1\/report\/[^']+)'/.exec(output) ?? []
    expect(key).toBeDefined()
    expect(new URL(url as string).port).toBe(String(port))
    const res = await fetch(url as string, { headers: { 'x-api-key': key as string } })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-cache')).toBe('MISS')
    const body = (await res.json()) as { data: { date: string; campaignId: number; impressions: number }[] }
    expect(body.data.length).toBeGreaterThan(0)
    expect(body.data[0]).toMatchObject({ date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/), campaignId: expect.any(Number), impressions: expect.any(Number) })
    // The same key without the curl line's header is refused: the 200 came from the key.
    expect((await fetch(url as string)).status).toBe(401)
  })

  it('answers health on both listeners', async () => {
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200)
    expect((await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status).toBe(200)
  })

  it('answers readiness 503 on SIGTERM, and at the end of the drain finishes a request in flight, refuses new connections, and exits 0', async () => {
    const sandboxUrl = (/runs at (http:\/\/127\.0\.0\.1:\d+)/.exec(output) ?? [])[1]
    expect(sandboxUrl).toBeDefined()
    const key = (/x-api-key: (rgw_[A-Za-z0-9_-]+)/.exec(output) ?? [])[1] as string
    const sandbox = (path: string, init?: RequestInit) => fetch(`${sandboxUrl}/__sandbox${path}`, init)
    const campaignsAsked = async () => ((await (await sandbox('/requests/count?path=/api/v1/campaign/get')).json()) as { count: number }).count
    // The platform holds the next campaign list until released, so the request stays in
    // flight through the drain and the close, however slow the machine.
    const hold = await sandbox('/route-failure', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"path":"/api/v1/campaign/get","kind":"held","times":1}',
    })
    expect(hold.status).toBe(200)
    const askedBefore = await campaignsAsked()

    const inFlight = fetch(`http://127.0.0.1:${port}/api/v1/campaign/get`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', connection: 'close' },
      body: '{"userId":101}',
    })
    await poll(() => 'the campaign list at the platform', async () => (await campaignsAsked()) > askedBefore, testTimeLeft(), 25)
    expect(child.kill('SIGTERM')).toBe(true)
    // The drain (shutdownDrain, 5 s by default): readiness 503 at once, the listeners still open.
    await waitFor(/draining/)
    const ready = await fetch(`http://127.0.0.1:${adminPort}/readyz`)
    expect(ready.status).toBe(503)
    expect(((await ready.json()) as { status: string }).status).toBe('stopping')
    expect(ready.headers.get('connection')).toBe('close')
    // A second SIGTERM ends the drain: the listeners close, the request in flight is still answered.
    expect(child.kill('SIGTERM')).toBe(true)
    await waitFor(/shutting down/)

    // Both listeners refuse new connections while the request is still held at the platform.
    await poll(() => 'both listeners closed', async () => (await tryConnect(port)) === 'ECONNREFUSED' && (await tryConnect(adminPort)) === 'ECONNREFUSED', testTimeLeft(), 25)
    expect(child.exitCode).toBeNull()

    expect((await sandbox('/release', { method: 'POST' })).status).toBe(204)
    const res = await inFlight
    expect(res.status).toBe(200)
    const body = (await res.json()) as { data: { userId: number }[] }
    expect(body.data.length).toBeGreaterThan(0)
    expect(body.data.every((c) => c.userId === 101)).toBe(true)

    const { code, signal } = await exited
    expect(signal).toBeNull()
    expect(code).toBe(0)
    expect(output).toMatch(/"msg":"stopped"/)
  }, 20_000)
})

describe('a stop with no reader of the log', () => {
  // stdout gone (a log reader that died, journald restarted, `npm start | head`): each line
  // then meets EPIPE. The stop's last lines must not hold the exit: it still ends in exit 0.

  /** A demo gateway of the built MAIN with a drain of 300 ms (what is asked is an exit, not how long the drain is), its admin port, and its exit. */
  async function demoGateway() {
    ensureBuilt(MAIN)
    const config = join(mkdtempSync(join(tmpdir(), 'rgw-stdout-gone-')), 'gateway.yaml')
    writeFileSync(config, 'shutdownDrain: 300ms\n')
    const [proxyPort, adminListenerPort] = (await reservedPorts(2)) as [number, number]
    const gateway = spawn(process.execPath, [MAIN], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(proxyPort), ADMIN_PORT: String(adminListenerPort), LOG_LEVEL: 'info', DEMO: '1', CONFIG_FILE: config },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => gateway.once('exit', (code, sig) => resolve({ code, signal: sig })))
    return { gateway, adminListenerPort, ended }
  }

  it('exits 0 on SIGINT and on SIGTERM once stdout has no reader, within the drain, the grace and a moment', async () => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      const { gateway, ended } = await demoGateway()
      try {
        let printed = ''
        gateway.stdout.setEncoding('utf8').on('data', (chunk: string) => (printed += chunk))
        await poll(() => `the demo's curl line:\n${printed}`, () => gateway.exitCode === null && /curl .*\n/.test(printed), PROCESS_START_MS, 25)
        gateway.stdout.destroy()
        expect(gateway.kill(signal)).toBe(true)
        // shutdownDrain (300 ms), then what is in flight (none): exit at once.
        await poll(() => `${signal}: an exit within 8 s`, () => gateway.exitCode !== null || gateway.signalCode !== null, 8_000, 25)
        expect(await ended).toEqual({ code: 0, signal: null })
      } finally {
        if (gateway.exitCode === null && gateway.signalCode === null) gateway.kill('SIGKILL')
      }
    }
  }, 2 * PROCESS_START_MS)

  it('serves, and exits 0 on SIGTERM, when stdout and stderr had no reader from the start (`npm start 2>&1 | head -1`)', async () => {
    const { gateway, adminListenerPort, ended } = await demoGateway()
    try {
      // Every line, the demo's banner (written to stdout itself) among them, meets EPIPE.
      gateway.stdout.destroy()
      gateway.stderr.destroy()
      let ready = 0
      await poll(
        () => `readiness 200 (last: ${ready}, exit ${gateway.exitCode})`,
        async () => {
          if (gateway.exitCode !== null) return true
          ready = await fetch(`http://127.0.0.1:${adminListenerPort}/readyz`).then((r) => r.status, () => 0)
          return ready === 200
        },
        PROCESS_START_MS,
        50,
      )
      // The demo's banner is written as the start returns, within the drain: a write that
      // ended the process would end it with another code than 0.
      expect(gateway.kill('SIGTERM')).toBe(true)
      await poll(() => 'SIGTERM: an exit within 8 s', () => gateway.exitCode !== null || gateway.signalCode !== null, 8_000, 25)
      expect(await ended).toEqual({ code: 0, signal: null })
    } finally {
      if (gateway.exitCode === null && gateway.signalCode === null) gateway.kill('SIGKILL')
    }
  }, 2 * PROCESS_START_MS)
})
