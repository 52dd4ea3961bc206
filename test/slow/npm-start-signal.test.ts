import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/dist.js'
import { reservedPorts } from '../helpers/start-redis.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'
import { tryConnect } from '../helpers/tcp-probe.js'

// README, "Quick start": `npm ci && npm start` runs the gateway; contract, "Stopping": on
// SIGTERM (docker stop, systemd, a supervisor) a replica drains and exits 0. A supervisor
// signals the process it started, `npm start`'s own (the gateway must get that signal, which
// npm forwards, and drain, not run on orphaned with readiness 200 after npm is gone), or its
// whole process group (systemd's default, a terminal's job): the gateway then gets the
// group's signal and npm's forward of it, one stop, and still drains. A terminal's Ctrl-C
// sends SIGINT to the foreground group alike.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))

let npm: ChildProcess | undefined
let gatewayPid = 0

interface Started {
  child: ChildProcess
  output: () => string
  exited: Promise<number | null>
  adminPort: number
  pid: number
}

/** `npm start` in demo mode on fresh ports, in a process group of its own (npm leads it). */
async function npmStart(): Promise<Started> {
  ensureBuilt(MAIN)
  const [port, adminPort] = (await reservedPorts(2)) as [number, number]
  let output = ''
  // npm puts node_modules/.bin (the Node npm ci installs) first on PATH.
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    detached: true,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: String(port), ADMIN_PORT: String(adminPort), LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  npm = child
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  await waitFor(() => `the curl line:\n${output}`, () => /curl .*\n/.test(output), testTimeLeft(), 25)
  const pid = Number((/"pid":(\d+)/.exec(output) ?? [])[1])
  expect(pid).toBeGreaterThan(0)
  gatewayPid = pid
  return { child, output: () => output, exited, adminPort, pid }
}

/** The drain, then the exit: readiness 503 while it drains, exit 0, the gateway gone. */
async function drainsAndExits(started: Started): Promise<void> {
  const { output, adminPort, pid } = started
  await waitFor(() => `the gateway draining:\n${output()}`, () => /draining/.test(output()), testTimeLeft(), 25)
  const ready = await fetch(`http://127.0.0.1:${adminPort}/readyz`)
  expect(ready.status).toBe(503)
  expect(output()).not.toMatch(/shutting down/)
  expect(await started.exited).toBe(0)
  // The gateway process itself is gone, its listeners with it.
  expect(() => process.kill(pid, 0)).toThrow()
  expect(await tryConnect(adminPort)).toBe('ECONNREFUSED')
}

afterAll(() => {
  if (npm && npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL')
  // The gateway npm started, left running if the signal never reached it.
  if (gatewayPid > 0) {
    try {
      process.kill(gatewayPid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
})

// SIGTERM sent to npm alone: test/slow/npm-start.test.ts.
describe('npm start under a supervisor', () => {
  it('drains when SIGTERM is sent to the process group: the group\'s signal and npm\'s forward of it are one stop', async () => {
    const started = await npmStart()
    process.kill(-(started.child.pid as number), 'SIGTERM')
    await drainsAndExits(started)
  }, startsTimeout(1))

  it('drains when SIGINT is sent to the process group (Ctrl-C in a terminal): the group\'s signal and npm\'s forward of it are one stop', async () => {
    const started = await npmStart()
    process.kill(-(started.child.pid as number), 'SIGINT')
    await drainsAndExits(started)
  }, startsTimeout(1))
})
