import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, unlinkSync, writeSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis, type RedisOptions } from 'ioredis'
import { needTool, TOOLS } from './missing-tools.js'
import type { PrivateCa } from './private-ca.js'

export interface RedisServer {
  url: string
  port: number
  /** Stops the server (SIGKILL when `hard`), keeping its port for restart(). */
  stop(hard?: boolean): Promise<void>
  /** Starts it again on the same port. */
  restart(): Promise<void>
  /** Freezes the server (SIGSTOP): connections stay open and nothing answers, like a stalled host. */
  freeze(): void
  /** Thaws a frozen server (SIGCONT). */
  thaw(): void
  close(): Promise<void>
}

export function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0
}

/**
 * The contract: tests that need Redis start their own `redis-server` from PATH on a
 * free loopback port; without one they are skipped and the run's last line says so
 * (missing-tools.ts), which with CI=true fails the run. `notice` is kept for the files
 * that print it: null, the run's line says it once.
 */
export function redisAvailability(what = 'the Redis tests'): { available: boolean; notice: string | null } {
  return { available: needTool(TOOLS.redis, hasRedisServer(), what), notice: null }
}

/**
 * Redis past its maxmemory under noeviction: a 1 MB maxmemory, keys written until one is
 * refused (OOM), then the maxmemory set 64 KiB below what Redis holds. Redis refuses a
 * write that may take memory while what it holds is past its maxmemory, whatever the
 * write's size: the refusal of a 16 KiB value leaves Redis under it by up to that much
 * (its own query buffer counted), where a smaller write passes. `maxmemory 0` ends it.
 * `keyOf` names the keys written (a Cluster master takes only keys of its own slots).
 */
export async function fillRedisUp(client: Redis, keyOf: (i: number) => string = (i) => `junk:${i}`): Promise<void> {
  await client.config('SET', 'maxmemory-policy', 'noeviction')
  await client.config('SET', 'maxmemory', '1mb')
  for (let i = 0; ; i++) {
    const refused = await client.set(keyOf(i), 'x'.repeat(16_384)).then(() => false, (err: Error) => /^OOM/.test(err.message))
    if (refused) break
  }
  const used = Number(/^used_memory:(\d+)/m.exec(await client.info('memory'))?.[1])
  await client.config('SET', 'maxmemory', String(used - 64 * 1024))
}

/**
 * A port nothing listens on (a Redis, a platform, a webhook receiver that is not there):
 * privileged and below every ephemeral range, so no suite's listen(0) is handed it, and not
 * one of the ports fetch refuses before connecting (1 is: "connection error", not
 * ECONNREFUSED). A port freePort() found free stays free only until another suite's server
 * is handed it: a redis-server there made redis-down-words' gateway, started "with no Redis
 * running", find Redis up.
 */
export const CLOSED_PORT = 2

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

export async function startRedis(): Promise<RedisServer> {
  return onFreePorts(1, ([port]) => startRedisOn(port as number))
}

/**
 * Ports for servers that are not listening the moment they are drawn: a server a test
 * stops and starts again on its port (a Redis restarted, with its data or without, a
 * cluster node, a master back after a failover), and a child process told its port, which
 * listens only once it has started (a gateway process: a second or more on a loaded
 * machine). Until a server listens its port is free, and a port of the kernel's ephemeral
 * range may then be handed to another suite's listen(0) (a sandbox, a gateway, a webhook
 * receiver, another file's redis-server): the restart fails, the replicas under test
 * reconnect to that other server, or a readiness probe is answered by it while the child
 * exits, its port taken. These ports lie below the ephemeral range, which no listen(0)
 * and no outgoing connection is handed, and each is reserved for this process by a file
 * that every vitest worker and test run on the machine sees (reservedDir(): created
 * exclusively, naming the process; one whose process is gone is taken over). A port stays
 * reserved until its server is closed (`releasePort`: startRedis's, spawnGateway's) or
 * this process exits; a worker ended by a signal leaves its files, taken over as any
 * whose process is gone.
 */
// Read at each use, under the TMPDIR of the moment (reserved-ports.test.ts sets its own).
const reservedDir = (): string => join(tmpdir(), 'rgw-test-ports')
const reserved = new Set<number>()
process.on('exit', () => {
  for (const port of reserved) releasePort(port)
})

/** The ports below the ephemeral range (Linux's ip_local_port_range; elsewhere IANA's, from 49152), 12,288 of them. */
const RESERVABLE = (() => {
  let ephemeralLow = 49152
  try {
    ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || ephemeralLow
  } catch {
    // Not Linux: IANA's dynamic range.
  }
  return { from: Math.max(1025, ephemeralLow - 12_288), to: ephemeralLow }
})()

/** Reserves `port` for this process; false when a live process holds it. */
function reserve(port: number): boolean {
  mkdirSync(reservedDir(), { recursive: true })
  const file = join(reservedDir(), String(port))
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx')
      writeSync(fd, String(process.pid))
      closeSync(fd)
      reserved.add(port)
      return true
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      if (holderAlive(file)) return false
      rmSync(file, { force: true })
    }
  }
  return false
}

function holderAlive(file: string): boolean {
  let pid: number
  try {
    pid = Number(readFileSync(file, 'utf8'))
  } catch (err) {
    // Gone since the try that found it (another process took it over): nobody holds it.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw err
  }
  // A file being written (no pid yet) is held.
  if (!pid) return true
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Gives a port reserved by this process back (its server closed). */
export function releasePort(port: number): void {
  if (!reserved.delete(port)) return
  try {
    unlinkSync(join(reservedDir(), String(port)))
  } catch {
    // Already gone (a tmp cleaner): nothing to give back.
  }
}

/** Whether nothing listens on `port` of the loopback address now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer()
    srv.once('error', () => resolve(false))
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)))
  })
}

/** A port below the ephemeral range, drawn at random. */
const drawReserved = (): number => RESERVABLE.from + Math.floor(Math.random() * (RESERVABLE.to - RESERVABLE.from))

/** `count` distinct ports below the ephemeral range (each tried as `draw` names it), reserved for this process, nothing listening on them now. */
export async function reservedPorts(count: number, draw = drawReserved): Promise<number[]> {
  const ports: number[] = []
  while (ports.length < count) {
    const port = draw()
    if (ports.includes(port) || !reserve(port)) continue
    if (await bindable(port)) ports.push(port)
    else releasePort(port)
  }
  return ports
}

/**
 * Tries `start` on fresh reserved ports (reservedPorts): a server
 * outside this machine's test runs may take one first. The ports stay reserved for
 * this process while `start`'s servers run.
 */
export async function onFreePorts<T>(count: number, start: (ports: number[]) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const ports = await reservedPorts(count)
    try {
      return await start(ports)
    } catch (err) {
      for (const port of ports) releasePort(port)
      if (attempt >= 5) throw err
    }
  }
}

/**
 * A redis-server over TLS only, as an operator runs one: its client port, cluster bus and
 * replication all TLS, with the certificate of `files`, and a password. Its clients here
 * reach it by `servername`, a name its certificate holds.
 */
export interface RedisTls {
  files: PrivateCa
  servername: string
  password: string
}

/** The options of an ioredis client of a TLS-only redis-server. */
export function redisTlsOptions(tls: RedisTls): RedisOptions {
  return { tls: { ca: readFileSync(tls.files.ca), servername: tls.servername }, password: tls.password }
}

function listenArgs(port: number, tls: RedisTls | undefined): string[] {
  if (!tls) return ['--port', String(port)]
  const { ca, cert, key } = tls.files
  return [
    '--port', '0',
    '--tls-port', String(port),
    '--tls-cert-file', cert,
    '--tls-key-file', key,
    '--tls-ca-cert-file', ca,
    '--tls-auth-clients', 'no',
    '--tls-cluster', 'yes',
    '--tls-replication', 'yes',
    '--requirepass', tls.password,
    '--masterauth', tls.password,
  ]
}

/**
 * A loopback redis-server on `port` (a sentinel with `--sentinel` in `args`; over TLS
 * only with `tls`), once it answers PING; `args` come after the port's own (a config
 * file first, when given).
 */
export async function launchRedis(port: number, args: string[], configFile?: string, tls?: RedisTls): Promise<ChildProcess> {
  const argv = [...(configFile ? [configFile] : []), ...listenArgs(port, tls), '--bind', '127.0.0.1', ...args]
  const c = spawn('redis-server', argv, { stdio: 'ignore' })
  // Answering on the port is not enough: it must be our server that answers.
  try {
    await waitUntilUp(port, () => c.exitCode !== null || c.signalCode !== null, tls)
  } catch (err) {
    await stopRedis(c, true)
    throw err
  }
  return c
}

/** Stops a redis-server child and waits for its exit. */
export async function stopRedis(c: ChildProcess, hard = false): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return
  await new Promise<void>((resolve) => {
    c.once('exit', () => resolve())
    c.kill(hard ? 'SIGKILL' : 'SIGTERM')
  })
}

async function startRedisOn(port: number): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'rgw-redis-'))
  let child: ChildProcess | null = null

  const launch = async () => {
    child = await launchRedis(port, ['--save', '', '--appendonly', 'no', '--dir', dir])
  }
  const stop = async (hard = false) => {
    const c = child
    child = null
    if (c) await stopRedis(c, hard)
  }
  try {
    await launch()
  } catch (err) {
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    restart: launch,
    freeze: () => (child as ChildProcess | null)?.kill('SIGSTOP'),
    thaw: () => (child as ChildProcess | null)?.kill('SIGCONT'),
    async close() {
      await stop(true)
      rmSync(dir, { recursive: true, force: true })
      releasePort(port)
    },
  }
}

async function waitUntilUp(port: number, exited: () => boolean, tls: RedisTls | undefined): Promise<void> {
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    if (exited()) throw new Error(`redis-server exited at start (port ${port} taken?)`)
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, ...(tls ? redisTlsOptions(tls) : {}) })
    client.on('error', () => undefined)
    try {
      await client.connect()
      await client.ping()
      client.disconnect()
      await new Promise((r) => setTimeout(r, 20))
      if (exited()) throw new Error(`redis-server exited at start (port ${port} taken?)`)
      return
    } catch {
      client.disconnect()
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  throw new Error(`redis-server did not start on port ${port}`)
}
