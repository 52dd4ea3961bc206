import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, type Server, type Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { ensureBuilt } from '../helpers/dist.js'
import { startsTimeout, testTimeLeft, waitFor } from '../helpers/wait.js'

// docs/operations/report-cache.md, "Warm the report cache": `npm run warm` asks a gateway
// for reports, for minutes on a long range. A supervisor, a CI job's step or a `kill` of the npm it started signals
// npm's own process: warm must get that SIGTERM (npm forwards it to its script's shell,
// which must be warm itself) and stop, not run on orphaned, still calling the gateway.

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const MAIN = fileURLToPath(new URL('../../dist/cli/warm.js', import.meta.url))

let npm: ChildProcess | undefined
let server: Server | undefined
const held: Socket[] = []

afterAll(async () => {
  // npm leads a process group of its own: the warm it started stays in it, orphaned or not.
  try {
    if (npm?.pid) process.kill(-npm.pid, 'SIGKILL')
  } catch {
    // already gone
  }
  for (const socket of held) socket.destroy()
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)))
})

describe('npm run warm under a supervisor', () => {
  it('stops when SIGTERM is sent to npm alone: npm exits, warm with it, its call to the gateway closed', async () => {
    ensureBuilt(MAIN)
    // A gateway that takes warm's call and never answers it: warm waits on it until it stops.
    const closed: Socket[] = []
    server = createServer((socket) => {
      held.push(socket)
      // Read (and dropped): a socket whose bytes wait unread never sees its peer's end.
      socket.resume()
      socket.on('close', () => closed.push(socket))
    })
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as { port: number }
    let output = ''
    const child = spawn('npm', ['run', 'warm', '--', '--advertisers', '101', '--from', '2026-11-01', '--to', '2026-11-01', '--url', `http://127.0.0.1:${port}`], {
      cwd: ROOT,
      detached: true,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', WARM_API_KEY: 'rgw_warm_signal_key_0000000000000000000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    npm = child
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    await waitFor(() => `warm's call to the gateway:\n${output}`, () => held.length > 0, testTimeLeft(), 25)
    expect(closed).toEqual([])
    // npm's own process only, as `kill <pid>` and most supervisors send it.
    child.kill('SIGTERM')
    await exited
    await waitFor(() => `warm's call closed after npm's SIGTERM:\n${output}`, () => held.every((s) => closed.includes(s)), testTimeLeft(), 25)
  }, startsTimeout(1))
})
