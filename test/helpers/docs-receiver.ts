import { spawn, type ChildProcess } from 'node:child_process'
import { onFreePorts } from './start-redis.js'
import { waitFor } from './wait.js'

// A webhook receiver the docs print (docs/jobs.md, "Pushed when done"), run as a user runs
// it: its program and file, its secrets and port in its environment, on a free port.

export interface DocsReceiver {
  url: string
  port: number
  child: ChildProcess
  /** The jobs it acted on: one JSON line each on its stdout. */
  acted: () => { job: string; state: string; result: string }[]
}

/**
 * `command` (a program and its file) run with `env` and PORT on a free port, pushed to
 * `children` for the test to end; ready once it refuses an unsigned push (401).
 */
export async function runDocsReceiver(command: [string, string], env: Record<string, string>, children: ChildProcess[]): Promise<DocsReceiver> {
  return onFreePorts(1, async ([port]) => {
    const child = spawn(command[0], [command[1]], { env: { PATH: process.env.PATH ?? '', ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] })
    children.push(child)
    let out = ''
    let err = ''
    child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')))
    child.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')))
    const url = `http://127.0.0.1:${port}/hook`
    await waitFor(() => `the receiver answering on ${port} (${err})`, async () => {
      if (child.exitCode !== null) throw new Error(`the receiver exited ${child.exitCode}: ${err}`)
      return fetch(url, { method: 'POST', body: '{}' }).then((res) => res.status === 401, () => false)
    })
    return { url, port: port!, child, acted: () => out.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { job: string; state: string; result: string }) }
  })
}
