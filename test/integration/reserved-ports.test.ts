import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { TEAMS_YAML } from '../helpers/build-gateway.js'
import { spawnGateway } from '../helpers/gateway-process.js'
import { CLOSED_PORT, redisAvailability, releasePort, reservedPorts, startRedis } from '../helpers/start-redis.js'

// A test's redis-server is stopped and started again on its port (a restart, a killed
// master back): its port must not be handed to another server meanwhile. A port of the
// kernel's ephemeral range was, to another suite's listen(0) (after 9,216 listen(0)s
// here, the restart then waited on a server that never answered PING). startRedis takes
// ports below that range, reserved across this machine's test processes. So does a
// gateway process, told its ports before it listens: a port of that range drawn for it
// was free until its start ended, and another suite's server there answered its readiness
// probe while it exited, its port taken (admin-token-rotation's pod refused a call).

const { available } = redisAvailability()
const ephemeral = (() => {
  try {
    return readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number) as [number, number]
  } catch {
    return null
  }
})()

describe.skipIf(!available)('the port of a test\'s redis-server', () => {
  it.skipIf(ephemeral === null)('is below the ephemeral range, where no listen(0) is handed it while the server is down', async () => {
    const redis = await startRedis()
    try {
      expect(redis.port).toBeLessThan((ephemeral as [number, number])[0])
    } finally {
      await redis.close()
    }
  })

  it('is reserved for this process while the server runs, stopped or not, and given back at its close', async () => {
    const redis = await startRedis()
    const file = join(tmpdir(), 'rgw-test-ports', String(redis.port))
    try {
      expect(readFileSync(file, 'utf8')).toBe(String(process.pid))
      await redis.stop(true)
      expect(readFileSync(file, 'utf8')).toBe(String(process.pid))
      await redis.restart()
    } finally {
      await redis.close()
    }
    expect(existsSync(file)).toBe(false)
  })

  it('is taken over from a reservation that names nothing to read (a file gone as it is read): no port is refused for it', async () => {
    // The reservation a link to nowhere: it exists, and reading it finds nothing, as a file
    // another process takes over (removes) between this one's try and its read.
    const dir = mkdtempSync(join(tmpdir(), 'rgw-ports-'))
    const previous = process.env.TMPDIR
    const port = (ephemeral?.[0] ?? 49152) - 1
    try {
      mkdirSync(join(dir, 'rgw-test-ports'))
      symlinkSync(join(dir, 'nowhere'), join(dir, 'rgw-test-ports', String(port)))
      process.env.TMPDIR = dir
      expect(await reservedPorts(1, () => port)).toEqual([port])
      expect(readFileSync(join(dir, 'rgw-test-ports', String(port)), 'utf8')).toBe(String(process.pid))
      releasePort(port)
    } finally {
      if (previous === undefined) delete process.env.TMPDIR
      else process.env.TMPDIR = previous
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe.skipIf(ephemeral === null)('the ports of a gateway process', () => {
  it('are below the ephemeral range, reserved for this process while it runs, and given back at its close', async () => {
    const gw = await spawnGateway({ env: { PLATFORM_BASE_URL: `http://127.0.0.1:${CLOSED_PORT}`, PLATFORM_TOKEN: 'reserved-ports-token' }, yaml: TEAMS_YAML })
    const ports = [Number(new URL(gw.url).port), Number(new URL(gw.adminUrl).port)]
    const files = ports.map((port) => join(tmpdir(), 'rgw-test-ports', String(port)))
    try {
      for (const port of ports) expect(port).toBeLessThan((ephemeral as [number, number])[0])
      for (const file of files) expect(readFileSync(file, 'utf8')).toBe(String(process.pid))
    } finally {
      await gw.close()
    }
    for (const file of files) expect(existsSync(file)).toBe(false)
  })
})
