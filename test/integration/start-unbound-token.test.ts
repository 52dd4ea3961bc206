import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { fingerprint } from '../../src/observe/fingerprint.js'
import { KEYS, TEAMS_YAML } from '../helpers/build-gateway.js'
import { useRedis, useSandbox } from '../helpers/fixtures.js'
import { bearerOf } from '../helpers/gateway-calls.js'
import { ensureBuilt, portTaken, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { freePort, redisAvailability } from '../helpers/start-redis.js'
import { startsTimeout } from '../helpers/wait.js'

// A second process started by mistake, with a stale token, on a port a replica already
// listens on: it exits without having stored its token for the replicas sharing Redis.
// Real processes (the built dist/main.js) on one real redis-server.

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url))
const GATEWAY_SECRET = 'unbound-start-gateway-secret-0123456789'
const STORE_KEY = 'rgw:token:default'

const redisCheck = redisAvailability()

describe.skipIf(!redisCheck.available)('a start that cannot listen', () => {
  const sandbox = useSandbox()
  const { server: redis, client } = useRedis()
  const running: GatewayProcess[] = []
  const dirs: string[] = []
  afterEach(async () => {
    await Promise.all(running.splice(0).map((gw) => gw.close()))
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  /** dist/main.js with `env` on top of the replica's settings; resolves with its exit code and output. */
  async function startOnTakenPort(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
    ensureBuilt()
    const dir = mkdtempSync(join(tmpdir(), 'rgw-unbound-'))
    dirs.push(dir)
    const configFile = join(dir, 'config.yaml')
    writeFileSync(configFile, TEAMS_YAML)
    const child = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', ADMIN_HOST: '127.0.0.1', LOG_LEVEL: 'warn', CONFIG_FILE: configFile, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c))
    child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    return { code, output }
  }

  it("a replica started with another token on a replica's port exits non-zero and the running replica's token stays, in use and in Redis", async () => {
    const t1 = sandbox.issueToken()
    const t2 = sandbox.issueToken()
    const shared = { PLATFORM_BASE_URL: sandbox.url, REDIS_URL: redis.url, GATEWAY_SECRET }
    const a = await spawnGateway({ env: { ...shared, PLATFORM_TOKEN: t1 }, yaml: TEAMS_YAML })
    running.push(a)
    const storedFingerprint = async () => (JSON.parse((await client.get(STORE_KEY)) ?? '{}') as { fingerprint?: string }).fingerprint
    expect(await storedFingerprint()).toBe(fingerprint(t1, GATEWAY_SECRET))

    const b = await startOnTakenPort({ ...shared, PLATFORM_TOKEN: t2, PORT: String(a.port), ADMIN_PORT: String(await freePort()) })
    expect(b.code).not.toBe(0)
    expect(portTaken(b.output), b.output).toBe(true)

    expect(await storedFingerprint()).toBe(fingerprint(t1, GATEWAY_SECRET))
    sandbox.clearRequests()
    const res = await fetch(`${a.url}/api/v1/campaign/get`, { method: 'POST', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: JSON.stringify({ userId: 101 }) })
    expect(res.status).toBe(200)
    expect(sandbox.requests.map(bearerOf)).toEqual([t1])
  }, startsTimeout(2))
})
