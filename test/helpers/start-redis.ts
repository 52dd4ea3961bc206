import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
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

/** `count` distinct free ports: the kernel may hand a port closed a moment ago out again, so two calls of freePort() can return one port. */
export async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = []
  while (ports.length < count) {
    const port = await freePort()
    if (!ports.includes(port)) ports.push(port)
  }
  return ports
}

/** Tries `start` on fresh free ports: another suite's server may take a free port first. */
export async function onFreePorts<T>(count: number, start: (ports: number[]) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const ports = await freePorts(count)
    try {
      return await start(ports)
    } catch (err) {
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
