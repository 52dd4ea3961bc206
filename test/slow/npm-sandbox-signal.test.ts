import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/dist.js'
import { reservedPorts } from '../helpers/start-redis.js'
import { tryConnect } from '../helpers/tcp-probe.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'

// README, "Quick start": `npm run sandbox` runs the platform stand-in on 127.0.0.1:8090. A
// supervisor, a CI job's background step or a `kill` of the npm it started signals npm's
// own process: the sandbox must get that SIGTERM (npm forwards it to its script's shell,
// which must be the sandbox itself) and stop, not run on orphaned, holding the port the
// next `npm run sandbox` then cannot take (EADDRINUSE).

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const MAIN = fileURLToPath(new URL('../../dist/sandbox/main.js', import.meta.url))

let npm: ChildProcess | undefined

afterAll(() => {
  // npm leads a process group of its own: the sandbox it started stays in it, orphaned or not.
  try {
    if (npm?.pid) process.kill(-npm.pid, 'SIGKILL')
  } catch {
    // already gone
  }
})

describe('npm run sandbox under a supervisor', () => {
  it('stops when SIGTERM is sent to npm alone: npm exits, the sandbox with it, its port free again', async () => {
    ensureBuilt(MAIN)
    const [port] = (await reservedPorts(1)) as [number]
    let output = ''
    const child = spawn('npm', ['run', 'sandbox'], {
      cwd: ROOT,
      detached: true,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    npm = child
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    await waitFor(() => `the sandbox listening:\n${output}`, () => /"msg":"platform sandbox listening"/.test(output), testTimeLeft(), 25)
    expect(await tryConnect(port)).toBe('connected')
    // npm's own process only, as `kill <pid>` and most supervisors send it.
    child.kill('SIGTERM')
    await exited
    await waitFor(() => `port ${port} free after npm's SIGTERM:\n${output}`, async () => (await tryConnect(port)) === 'ECONNREFUSED', testTimeLeft(), 25)
  }, startsTimeout(1))
})
