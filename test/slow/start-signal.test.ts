import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/dist.js'
import { reservedPorts } from '../helpers/start-redis.js'
import { waitFor } from '../helpers/wait.js'

// A stop signal that comes while the gateway starts (a pod deleted while it waits for
// the platform: a rollout undone, a scale-down, a surge pod replaced) stops it. The
// image runs `node dist/main.js` as PID 1, and the kernel delivers a signal to a
// namespace's init only when it has a handler for it: the gateway's handlers were set
// once its start ended, so a SIGTERM sent during the start was dropped. The start went
// on (here, 30 s of a token probe the platform holds), the replica listened, took other
// replicas' jobs, served, and stopped only at the kubelet's SIGKILL. Outside a container
// Node's default action killed it without a word.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))

// A platform that takes the start's token probe and answers it only when released
// (else at platform.timeout, 30 s).
let platform: Server
let probes = 0
const held: (() => void)[] = []
const release = () => {
  for (const answer of held.splice(0)) answer()
}
beforeAll(async () => {
  ensureBuilt(MAIN)
  platform = createServer((req, res) => {
    probes += 1
    req.resume()
    held.push(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}'))
  })
  await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', () => resolve()))
})
afterAll(async () => {
  platform.closeAllConnections()
  await new Promise<void>((resolve) => platform.close(() => resolve()))
})

let started: ChildProcess | undefined
afterEach(() => {
  try {
    started?.kill('SIGKILL')
  } catch {
    // gone already
  }
  started = undefined
})

async function startHeld(wrap: string[], files: Record<string, string> = {}): Promise<{ child: ChildProcess; output: () => string; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> }> {
  const [port, adminPort] = (await reservedPorts(2)) as [number, number]
  const before = probes
  const env = {
    PATH: process.env.PATH ?? '',
    HOST: '127.0.0.1',
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    LOG_LEVEL: 'info',
    PLATFORM_BASE_URL: `http://127.0.0.1:${(platform.address() as AddressInfo).port}`,
    PLATFORM_TOKEN: 'held-start-token-0123456789',
    ...files,
  }
  const command = [...wrap, process.execPath, MAIN]
  const child = spawn(command[0]!, command.slice(1), { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  started = child
  let text = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  // The start waits on its token probe: both listeners open, not serving.
  await waitFor(() => `the start's token probe at the platform:\n${text}`, () => {
    if (child.exitCode !== null) throw new Error(`the gateway exited (${child.exitCode}) before its probe:\n${text}`)
    return probes > before
  })
  expect(text).not.toMatch(/"msg":"report gateway listening"/)
  return { child, output: () => text, exited }
}

describe('a stop signal during the start', () => {
  it('SIGTERM while the start waits for the platform: the gateway exits 0 at once, saying it stopped before serving', async () => {
    const gw = await startHeld([])
    gw.child.kill('SIGTERM')
    expect(await gw.exited).toEqual({ code: 0, signal: null })
    expect(gw.output()).toMatch(/"signal":"SIGTERM".*"msg":"stopped during the start, before serving/)
    expect(gw.output()).not.toMatch(/"msg":"report gateway listening"/)
  }, 25_000)

  it('SIGINT while the start waits: the same stop', async () => {
    const gw = await startHeld([])
    gw.child.kill('SIGINT')
    expect(await gw.exited).toEqual({ code: 0, signal: null })
    expect(gw.output()).toMatch(/"signal":"SIGINT".*"msg":"stopped during the start, before serving/)
  }, 25_000)

  // stdout gone while the start waits (a log reader that died): the stop's line meets EPIPE,
  // and must not hold the exit.
  it.each(['SIGTERM', 'SIGINT'] as const)('%s while the start waits, with no reader of stdout: the same exit 0', async (signal) => {
    const gw = await startHeld([])
    gw.child.stdout?.destroy()
    gw.child.kill(signal)
    expect(await gw.exited).toEqual({ code: 0, signal: null })
  }, 25_000)

  // A supervisor's reload (systemd's ExecReload=kill -HUP) that comes while the replica
  // starts: SIGHUP's default action ended the process; the reload now runs once it serves.
  it('SIGHUP while the start waits: the start goes on, and the reload it asks for runs once the gateway serves', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'start-hup-'))
    try {
      writeFileSync(join(dir, 'teams.yaml'), 'teams:\n  growth:\n    keys: ["sha256:4ddbe6aa7a87a897eb9e8475e5003d5b49968076bec8d75dbf2ebd327fd25ed0"]\n    advertisers: [101]\n')
      const gw = await startHeld([], { TEAMS_FILE: join(dir, 'teams.yaml') })
      gw.child.kill('SIGHUP')
      release()
      await waitFor(() => `the reload asked by SIGHUP:\n${gw.output()}`, () => {
        if (gw.child.exitCode !== null || gw.child.signalCode !== null) throw new Error(`the gateway ended (${gw.child.exitCode ?? gw.child.signalCode}) on SIGHUP during its start:\n${gw.output()}`)
        return /"trigger":"signal".*reloaded/.test(gw.output())
      })
      expect(gw.output()).toMatch(/"msg":"report gateway listening"/)
      gw.child.kill('SIGTERM')
      expect(await gw.exited).toEqual({ code: 0, signal: null })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 25_000)

  // As the image runs it: node is PID 1 of its PID namespace (unshare -p, as root or
  // with user namespaces), the signal sent from outside it, as the container runtime sends it.
  const pidNamespaces = spawnSync('unshare', ['-pf', '--kill-child', 'true']).status === 0
  it.skipIf(!pidNamespaces)('node as PID 1 (the image\'s CMD): SIGTERM from outside during the start stops it, not the kubelet\'s SIGKILL 20 s later', async () => {
    const gw = await startHeld(['unshare', '-pf', '--kill-child'])
    const nodePid = Number(readFileSync(`/proc/${gw.child.pid}/task/${gw.child.pid}/children`, 'utf8').trim().split(/\s+/)[0])
    expect(readFileSync(`/proc/${nodePid}/status`, 'utf8')).toMatch(/^NSpid:\s+\d+\s+1$/m)
    process.kill(nodePid, 'SIGTERM')
    // Before the chart's terminationGracePeriodSeconds (20 s), and before the probe's 30 s.
    expect(await gw.exited).toEqual({ code: 0, signal: null })
    expect(gw.output()).toMatch(/"signal":"SIGTERM".*"msg":"stopped during the start, before serving/)
    expect(gw.output()).not.toMatch(/"msg":"report gateway listening"/)
  }, 20_000)
})
