import { readFileSync } from 'node:fs'
import { Writable } from 'node:stream'
import { loadConfig, type Config } from '../../src/config.js'
import { createGateway, type Gateway, type GatewayDeps } from '../../src/app.js'
import { hashApiKey } from '../../src/teams/api-keys.js'

export interface LogCapture {
  lines: string[]
  stream: Writable
  /** Every captured line parsed as JSON. */
  records(): Record<string, unknown>[]
  text(): string
}

export function captureLogs(): LogCapture {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(line)
      done()
    },
  })
  return { lines, stream, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>), text: () => lines.join('\n') }
}

/** Team keys used across the suites; plaintext here, hashed in the config. */
export const KEYS = {
  all: 'rgw_test_all_teams_key_000000000000000000000',
  growth: 'rgw_test_growth_key_1111111111111111111111111',
  writer: 'rgw_test_writer_key_2222222222222222222222222',
  limited: 'rgw_test_limited_key_33333333333333333333333',
}

export const TEAMS_YAML = `
teams:
  all:
    keys: ["${hashApiKey(KEYS.all)}"]
    advertisers: ["*"]
  growth:
    keys: ["${hashApiKey(KEYS.growth)}"]
    advertisers: [101, 102]
  writer:
    keys: ["${hashApiKey(KEYS.writer)}"]
    advertisers: [101]
    write: true
  limited:
    keys: ["${hashApiKey(KEYS.limited)}"]
    advertisers: ["*"]
    rateLimit: { max: 3, window: 1m }
`

/**
 * A config as main.ts would load it, from an environment and an inline config file;
 * the default team set above unless `yaml` is given.
 */
export function testConfig(env: Record<string, string>, yaml: string = TEAMS_YAML): Config {
  const files: Record<string, string> = { '/virtual/config.yaml': yaml }
  return loadConfig({
    env: { LOG_LEVEL: 'info', CONFIG_FILE: '/virtual/config.yaml', ...env },
    readFile: (p) => {
      const inline = files[p]
      if (inline !== undefined) return inline
      return readRealFile(p)
    },
  })
}

function readRealFile(p: string): string {
  return readFileSync(p, 'utf8')
}

export interface TestGateway extends Gateway {
  logs: LogCapture
}

/** Builds and starts a gateway (no listening port); close it in afterEach/afterAll. */
export async function buildGateway(config: Config, deps: GatewayDeps = {}): Promise<TestGateway> {
  const logs = captureLogs()
  const gateway = await createGateway(config, { logStream: logs.stream, ...deps })
  await gateway.start()
  await gateway.proxy.ready()
  await gateway.admin.ready()
  return Object.assign(gateway, { logs })
}
