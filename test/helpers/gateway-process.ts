import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ensureBuilt as ensureBuiltFile } from './dist.js'
import { releasePort, reservedPorts } from './start-redis.js'
import { withTestSecret } from './build-gateway.js'
import { PROCESS_START_MS, testTimeLeft } from './wait.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))

/** A gateway as production runs it: the built dist/main.js in a process of its own. */
export interface GatewayProcess {
  /** http://127.0.0.1:<port> of the proxy listener. */
  url: string
  port: number
  adminUrl: string
  child: ChildProcess
  /** Everything it printed so far. */
  output(): string
  /** Resolves when it exited, with its code or signal and when (epoch ms). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>
  /** Sends a signal; a killed process is waited for by close(). */
  kill(signal: NodeJS.Signals): void
  /** SIGKILL if still running, then removes its config file. */
  close(): Promise<void>
}

/** Builds dist/ once when the suite runs without `npm test` (which builds first). */
export function ensureBuilt(): void {
  ensureBuiltFile(MAIN)
}

export interface SpawnOptions {
  env: Record<string, string>
  yaml: string
  /** Node's own options, before dist/main.js (e.g. --expose-gc, --import of a test probe). */
  nodeArgs?: string[]
  /** Opens an IPC channel to the child (child.send, child.on('message')). */
  ipc?: boolean
  /** The main.js to run, for a build of another version (default: this one's dist/main.js, built if absent). */
  main?: string
  /** The process's open-file limit (`ulimit -n`, soft and hard), where it must be lower than the test's own. */
  openFiles?: number
}

/** Starts dist/main.js with `env` and `yaml` as its CONFIG_FILE; resolves once it listens. */
export async function spawnGateway(opts: SpawnOptions): Promise<GatewayProcess> {
  // A process outside this machine's test runs may hold a port drawn: try again.
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnOnce(opts)
    } catch (err) {
      if (attempt >= 3 || !portTaken(String((err as Error).message))) throw err
    }
  }
}

/** Whether a gateway's output says it stopped because its port was taken (main.ts, listenOrExit). */
export function portTaken(output: string): boolean {
  return /cannot listen on \S+: the port is in use/.test(output)
}

/**
 * Asks a probe loaded into a gateway started with `ipc: true` (memory-probe.mjs,
 * shape-probe.mjs): sends `{ id, ...message }` and resolves with `field` of the reply
 * carrying the same id; rejects when the gateway exits or stays silent for `timeoutMs`.
 */
export function probeAsker(gw: GatewayProcess): <T>(message: object, field: string, timeoutMs: number) => Promise<T> {
  let next = 0
  return <T>(message: object, field: string, timeoutMs: number): Promise<T> =>
    new Promise((resolve, reject) => {
      const id = ++next
      const onMessage = (reply: { id?: number } & Record<string, unknown>) => {
        if (reply.id !== id) return
        done()
        resolve(reply[field] as T)
      }
      const onExit = () => {
        done()
        reject(new Error(`gateway exited while asked for ${field}:\n${gw.output()}`))
      }
      const timer = setTimeout(() => {
        done()
        reject(new Error(`gateway gave no ${field} within ${timeoutMs} ms`))
      }, timeoutMs)
      const done = () => {
        clearTimeout(timer)
        gw.child.off('message', onMessage).off('exit', onExit)
      }
      gw.child.on('message', onMessage).once('exit', onExit)
      gw.child.send({ id, ...message })
    })
}

/** Several gateways started at once; when one fails to start, the others are stopped too. */
export async function spawnGateways(count: number, opts: SpawnOptions): Promise<GatewayProcess[]> {
  const started = await Promise.allSettled(Array.from({ length: count }, () => spawnGateway(opts)))
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected')
  if (!failed) return started.map((s) => (s as PromiseFulfilledResult<GatewayProcess>).value)
  await Promise.all(started.map((s) => (s.status === 'fulfilled' ? s.value.close() : undefined)))
  throw failed.reason
}

async function spawnOnce(opts: SpawnOptions): Promise<GatewayProcess> {
  if (opts.main === undefined) ensureBuilt()
  const dir = mkdtempSync(join(tmpdir(), 'rgw-gw-'))
  const configFile = join(dir, 'config.yaml')
  writeFileSync(configFile, opts.yaml)
  // Reserved, below the ephemeral range: until the child listens, no other suite's
  // listen(0) is handed them (whose server would answer the readiness probe below).
  const [port, adminPort] = (await reservedPorts(2)) as [number, number]
  const args = [...(opts.nodeArgs ?? []), opts.main ?? MAIN]
  const [command, argv] = opts.openFiles === undefined ? [process.execPath, args] : ['/bin/sh', ['-c', `ulimit -n ${opts.openFiles} && exec "$0" "$@"`, process.execPath, ...args]]
  const child = spawn(command, argv, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), ADMIN_HOST: '127.0.0.1', ADMIN_PORT: String(adminPort), LOG_LEVEL: 'warn', CONFIG_FILE: configFile, ...withTestSecret(opts.env, opts.yaml) },
    stdio: ['ignore', 'pipe', 'pipe', ...(opts.ipc ? (['ipc'] as const) : [])],
  })
  let output = ''
  // Bounded: a long run must not grow the test's memory without limit.
  const keep = (chunk: string) => (output = (output + chunk).slice(-200_000))
  child.stdout?.setEncoding('utf8').on('data', keep)
  child.stderr?.setEncoding('utf8').on('data', keep)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  )
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await exited
    rmSync(dir, { recursive: true, force: true })
    releasePort(port)
    releasePort(adminPort)
  }
  // Listening is logged at info, which LOG_LEVEL=warn hides: wait for the port to answer,
  // within the test's time left (a loaded machine starts a process slowly, never wrongly).
  // Outside a test's body (a beforeAll starting the gateways of a file, whose timeout is
  // 120 s or more), one start's allowance.
  const bound = testTimeLeft(PROCESS_START_MS)
  const deadline = Date.now() + bound
  for (;;) {
    if (child.exitCode !== null) {
      await close()
      throw new Error(`gateway exited (${child.exitCode}) at start:\n${output}`)
    }
    const ready = await fetch(`http://127.0.0.1:${adminPort}/readyz`).then((r) => r.ok, () => false)
    if (ready) break
    if (Date.now() > deadline) {
      await close()
      throw new Error(`gateway not ready within ${Math.round(bound / 1000)} s:\n${output}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    child,
    output: () => output,
    exited,
    kill: (signal) => child.kill(signal),
    close,
  }
}

export interface TimedResponse {
  status: number
  headers: Record<string, string>
  body: string
  /** When the answer was complete (epoch ms); status 0 when the connection failed. */
  at: number
  ms: number
}

/** One request, timed to its last byte; a failed connection is status 0, not a throw. */
export async function timedRequest(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<TimedResponse> {
  const started = Date.now()
  try {
    const res = await fetch(url, { method: init.method ?? 'GET', headers: init.headers, body: init.body })
    const body = await res.text()
    const at = Date.now()
    return { status: res.status, headers: Object.fromEntries(res.headers), body, at, ms: at - started }
  } catch {
    const at = Date.now()
    return { status: 0, headers: {}, body: '', at, ms: at - started }
  }
}

/**
 * `workers` loops sending calls `send(0)`, `send(1)`, ... one after another, until
 * stop() or `max` calls in all; stop() waits for the calls in flight and returns every
 * answer, in the order they came.
 */
export function steadyLoad<T>(workers: number, max: number, send: (i: number) => Promise<T>): { answeredBy: () => number[]; stop: () => Promise<T[]> } {
  const answers: T[] = []
  const byWorker = Array.from({ length: workers }, () => 0)
  let running = true
  let n = 0
  const worker = async (_: unknown, w: number) => {
    while (running && n < max) {
      answers.push(await send(n++))
      byWorker[w] = (byWorker[w] as number) + 1
    }
  }
  const loops = Array.from({ length: workers }, worker)
  return {
    /** The answers each worker has had so far: a worker sends its next call once it has the answer to the last. */
    answeredBy: () => [...byWorker],
    stop: async () => {
      running = false
      await Promise.all(loops)
      return answers
    },
  }
}
