import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/dist.js'
import { portTaken } from '../helpers/gateway-process.js'
import { reservedPorts } from '../helpers/start-redis.js'
import { testTimeLeft, waitFor as poll } from '../helpers/wait.js'
import { tryConnect } from '../helpers/tcp-probe.js'

// README, "Quick start": `npm start` runs the gateway. A supervisor that stops it sends
// SIGTERM to the process it started, npm: the gateway gets each one (readiness 503 at
// once while it still answers; a second is that same stop under npm, which forwards the
// SIGTERM a process group's signal brings it too), and npm exits with the gateway's
// code once it stopped, its listeners closed. Before, npm ran the gateway under `sh -c`,
// which does not pass a signal on: npm exited 143 and the gateway ran on, ready, orphaned.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

let npm: ChildProcess | undefined
let gatewayPid: number | undefined

afterAll(() => {
  for (const pid of [npm?.pid, gatewayPid]) {
    try {
      if (pid !== undefined) process.kill(pid, 'SIGKILL')
    } catch {
      // gone already
    }
  }
})

it('passes SIGTERM sent to npm on to the gateway: readiness 503 at once, the drain, its stop, npm exiting 0 with the listeners closed', async () => {
  ensureBuilt(fileURLToPath(new URL('../../dist/main.js', import.meta.url)))
  let output = ''
  let port = 0
  let adminPort = 0
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | undefined
  // A process outside this machine's test runs may hold a port drawn: try again.
  for (let attempt = 1; ; attempt++) {
    ;[port, adminPort] = (await reservedPorts(2)) as [number, number]
    output = ''
    // Demo mode (nothing configured), as the README's quick start runs it.
    const child = spawn('npm', ['start'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? ROOT, HOST: '127.0.0.1', PORT: String(port), ADMIN_PORT: String(adminPort), LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    npm = child
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
    try {
      await poll(() => `the gateway's listening line:\n${output}`, () => {
        if (child.exitCode !== null) throw new Error(`npm exited (${child.exitCode}) before the gateway listened:\n${output}`)
        return /"msg":"report gateway listening"/.test(output)
      }, 60_000, 25)
      break
    } catch (err) {
      if (attempt >= 3 || !portTaken(output)) throw err
    }
  }
  gatewayPid = Number(/"pid":(\d+)/.exec(output)?.[1])
  expect(gatewayPid).not.toBe(npm!.pid)
  expect((await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status).toBe(200)

  expect(npm!.kill('SIGTERM')).toBe(true)
  await poll(() => `the gateway's drain:\n${output}`, () => /"signal":"SIGTERM".*"msg":"draining/.test(output), testTimeLeft(), 25)
  const ready = await fetch(`http://127.0.0.1:${adminPort}/readyz`)
  expect(ready.status).toBe(503)
  expect(ready.headers.get('connection')).toBe('close')
  // npm waits for the gateway: still there while it drains.
  expect(npm!.exitCode).toBeNull()
  // A second SIGTERM, passed on too, is the same stop: the drain runs its length.
  expect(npm!.kill('SIGTERM')).toBe(true)
  expect(await exited).toEqual({ code: 0, signal: null })
  expect(output).toMatch(/"msg":"stopped"/)
  expect([await tryConnect(port), await tryConnect(adminPort)]).toEqual(['ECONNREFUSED', 'ECONNREFUSED'])
  expect(() => process.kill(gatewayPid!, 0)).toThrow()
}, 90_000)
