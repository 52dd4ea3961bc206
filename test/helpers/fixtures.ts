import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll } from 'vitest'
import type { Config } from '../../src/config.js'
import type { GatewayDeps } from '../../src/app.js'
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/sandbox.js'
import { buildGateway, type TestGateway } from './build-gateway.js'
import { startRedis, type RedisServer } from './start-redis.js'

// The set-up a test file shares, registered as vitest hooks: call these at the top of a
// file (or a describe) and use what they return in the tests.

/** Stands for an object made in beforeAll, so a file can name it at the top. */
export function late<T extends object>(what: string, get: () => T | undefined): T {
  return new Proxy({} as T, {
    get(_target, prop) {
      const real = get()
      if (!real) throw new Error(`${what} is used before beforeAll made it`)
      const value = Reflect.get(real, prop, real) as unknown
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(real) : value
    },
  })
}

/** One platform sandbox for the file: reset after each test (failures, latency, request log). */
export function useSandbox(opts: SandboxOptions = {}): Sandbox {
  let sandbox: Sandbox | undefined
  beforeAll(async () => {
    sandbox = await startSandbox(opts)
  })
  afterEach(() => {
    sandbox?.setFailure({ kind: 'none' })
    sandbox?.setLatency(0)
    sandbox?.clearRequests()
    sandbox?.resetConcurrency()
  })
  afterAll(async () => {
    await sandbox?.close()
  })
  return late('the sandbox', () => sandbox)
}

/** One real redis-server for the file and a client to look inside it; emptied after each test. */
export function useRedis(): { server: RedisServer; client: Redis } {
  let server: RedisServer | undefined
  let client: Redis | undefined
  beforeAll(async () => {
    server = await startRedis()
    client = new Redis(server.url, { maxRetriesPerRequest: 1 })
  })
  afterEach(async () => {
    await client?.flushall()
  })
  afterAll(async () => {
    client?.disconnect()
    await server?.close()
  })
  return { server: late('the redis-server', () => server), client: late('the redis client', () => client) }
}

/** Gateways (replicas) built during a test, closed after it. */
export function useGateways(): { build(config: Config, deps?: GatewayDeps): Promise<TestGateway>; open: TestGateway[] } {
  const open: TestGateway[] = []
  afterEach(async () => {
    for (const gw of open.splice(0)) await gw.close()
  })
  return {
    open,
    async build(config, deps = {}) {
      const gw = await buildGateway(config, deps)
      open.push(gw)
      return gw
    },
  }
}
