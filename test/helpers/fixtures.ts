import { Redis, type RedisOptions } from 'ioredis'
import { afterAll, afterEach, beforeAll } from 'vitest'
import type { Config } from '../../src/config.js'
import type { GatewayDeps } from '../../src/compose.js'
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/sandbox.js'
import { buildGateway, closeAfterTest, listen, testConfig, type TestGateway } from './build-gateway.js'
import { startReflectingPlatform, type ReflectingPlatform } from './reflecting-platform.js'
import { spawnGateway, type GatewayProcess } from './gateway-process.js'
import { startSandboxGateway, type SandboxGateway, type SandboxGatewayOptions } from './sandbox-gateway.js'
import { startRedis, type RedisServer } from './start-redis.js'

// The set-up a test file shares, registered as vitest hooks: call these at the top of a
// file (or a describe) and use what they return in the tests. After-hooks run in the
// reverse order of registration, so what is made later is closed first.

/** Stands for an object made in beforeAll, so a file can name it at the top. */
export function late<T extends object>(what: string, get: () => T | undefined): T {
  return new Proxy({} as T, {
    get(_target, prop) {
      const real = get()
      if (!real) throw new Error(`${what} is used before beforeAll made it`)
      const value = Reflect.get(real, prop, real) as unknown
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(real) : value
    },
    // A setting made through it is the real one's (`reflecting.echoHeaders = false`), not the stand-in object's.
    set(_target, prop, value) {
      const real = get()
      if (!real) throw new Error(`${what} is used before beforeAll made it`)
      return Reflect.set(real, prop, value, real)
    },
  })
}

export interface UseSandboxOptions extends SandboxOptions {
  /**
   * Reset failures, latency and the request log after each test (the default). Off for
   * a file whose tests all look at what one scenario in beforeAll left behind.
   */
  resetEach?: boolean
}

/** One platform sandbox for the file: reset after each test (failures, latency, request log). */
export function useSandbox({ resetEach = true, ...opts }: UseSandboxOptions = {}): Sandbox {
  let sandbox: Sandbox | undefined
  beforeAll(async () => {
    sandbox = await startSandbox(opts)
  })
  if (resetEach) {
    afterEach(() => {
      sandbox?.setFailure({ kind: 'none' })
      sandbox?.clearRouteFailures()
      sandbox?.setLatency(0)
      sandbox?.setCapacity({})
      sandbox?.setWeather({})
      sandbox?.setThrottle({})
      sandbox?.clearRequests()
      sandbox?.resetConcurrency()
    })
  }
  afterAll(async () => {
    await sandbox?.close()
  })
  return late('the sandbox', () => sandbox)
}

/**
 * One real redis-server for the file and a connected client to look inside it (options
 * on top of `maxRetriesPerRequest: 1`); emptied after each test. A test may stop and
 * restart the server: the client reconnects, its connection errors are not the test's.
 */
export function useRedis(clientOptions: RedisOptions = {}): { server: RedisServer; client: Redis } {
  let server: RedisServer | undefined
  let client: Redis | undefined
  beforeAll(async () => {
    server = await startRedis()
    client = new Redis(server.url, { maxRetriesPerRequest: 1, ...clientOptions, lazyConnect: true })
    client.on('error', () => undefined)
    await client.connect()
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

/**
 * Gateways (replicas) built during a test, closed after it. `check` sees them first
 * (their logs, say) and may fail the test; they are closed all the same.
 */
export function useGateways(opts: { check?: (open: TestGateway[]) => void } = {}): {
  build(config: Config, deps?: GatewayDeps): Promise<TestGateway>
  open: TestGateway[]
} {
  const open: TestGateway[] = []
  afterEach(async () => {
    const built = open.splice(0)
    try {
      opts.check?.(built)
    } finally {
      for (const gw of built) await closeAfterTest(gw)
    }
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

/**
 * One gateway for the file (or describe), built in beforeAll from `config()` (called
 * then, so it may use the sandbox), closed in afterAll. With `listen`, its proxy listens
 * on a loopback port (`gw.url`, `gw.port`).
 */
export function useGateway(config: () => Config, opts: { deps?: GatewayDeps; listen?: boolean } = {}): TestGateway {
  let gw: TestGateway | undefined
  beforeAll(async () => {
    gw = await buildGateway(config(), opts.deps)
    if (opts.listen) await listen(gw)
  })
  afterAll(async () => {
    if (gw) await closeAfterTest(gw)
  })
  return late('the gateway', () => gw)
}

/** startSandboxGateway() for the file: a sandbox and a listening gateway in front of it. */
export function useSandboxGateway(opts: SandboxGatewayOptions = {}): SandboxGateway {
  let env: SandboxGateway | undefined
  beforeAll(async () => {
    env = await startSandboxGateway(opts)
  })
  afterAll(async () => {
    await env?.closeAfterTests()
  })
  return late('the sandbox and gateway', () => env)
}

/**
 * A sandbox and, in front of it, a gateway process (dist/main.js) with `yaml` as its
 * config file, for the file (or describe): started in beforeAll, given two minutes (a
 * process starts in seconds on a loaded machine), closed in afterAll.
 */
export function useSandboxGatewayProcess(yaml: string): { sandbox: Sandbox; gw: GatewayProcess } {
  let sandbox: Sandbox | undefined
  let gw: GatewayProcess | undefined
  beforeAll(async () => {
    sandbox = await startSandbox()
    gw = await spawnGateway({ env: { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, yaml })
  }, 120_000)
  afterAll(async () => {
    await gw?.close()
    await sandbox?.close()
  })
  return { sandbox: late('the sandbox', () => sandbox), gw: late('the gateway process', () => gw) }
}

/** Clean-up steps a test adds as it goes (servers, folders), run in order after it. */
export function useCleanups(): (() => void | Promise<void>)[] {
  const cleanups: (() => void | Promise<void>)[] = []
  afterEach(async () => {
    for (const fn of cleanups.splice(0)) await fn()
  })
  return cleanups
}

/**
 * A platform that reflects every request it gets (reflecting-platform.ts) and a gateway in
 * front of it, with `token` as its platform token and `yaml` as its teams, logging at
 * trace level; the platform's request log and its ways of writing are reset after each test.
 */
export function useReflectingGateway(token: string, yaml: string): { reflecting: ReflectingPlatform; gw: TestGateway & { port: number } } {
  let platform: ReflectingPlatform | undefined
  let gateway: (TestGateway & { port: number }) | undefined
  beforeAll(async () => {
    platform = await startReflectingPlatform()
    gateway = await listen(await buildGateway(testConfig({ PLATFORM_BASE_URL: platform.url, PLATFORM_TOKEN: token, LOG_LEVEL: 'trace' }, yaml)))
  })
  afterEach(() => {
    if (!platform) return
    platform.requests.length = 0
    platform.echoHeaders = true
    platform.spell = (text) => text
    platform.chunkBytes = null
  })
  afterAll(async () => {
    if (gateway) await closeAfterTest(gateway)
    await platform?.close()
  })
  return { reflecting: late('the reflecting platform', () => platform), gw: late('the gateway', () => gateway) }
}
