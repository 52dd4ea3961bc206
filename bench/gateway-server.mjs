// One report gateway for the benchmark, in its own process (bench/run.mjs pins it to a
// core with taskset). It is the compiled gateway (../dist), configured the way an
// operator would: environment variables plus one CONFIG_FILE, here served from memory.
//
// Input (environment):
//   BENCH_PLATFORM_URL    the sandbox's base URL
//   BENCH_PLATFORM_TOKEN  a token the sandbox accepts
//   BENCH_TEAM_KEY_HASH   sha256:<hex> of the team key the load generator sends
//   BENCH_ADMIN_TOKEN     bearer token of /admin/* (purges between stampedes)
//   BENCH_REDIS_URL       optional: L2 in Redis
//   BENCH_L1              "on" (default) or "off" (cache.l1MaxBytes: 0)
//   BENCH_KEY_PREFIX      redis.keyPrefix (gateways that must not share entries use different ones)
//   BENCH_DIST            optional: the build to run (default ../dist), for comparing a patched build
//   BENCH_TEAM_B_KEY_HASH optional: a second team, "bench-b", with the same advertisers (fairness scenario)
//   BENCH_MAX_CONCURRENT, BENCH_QUEUE  optional: platform.maxConcurrent and platform.queue (fairness scenario)
//   BENCH_CONFIG          optional: JSON merged over the config file (teams, platform, cache settings of a scenario)
// Output: one line `READY {"port":…,"adminPort":…}` on stdout once both listeners listen.

import { readFileSync } from 'node:fs'
import { setInterval } from 'node:timers'

// BENCH_DIST: another build of the gateway to compare (a directory like ../dist).
const dist = new URL(`${process.env.BENCH_DIST ?? '../dist'}/`, import.meta.url)
const { loadConfig } = await import(new URL('config.js', dist).href)
const { createGateway } = await import(new URL('compose.js', dist).href)

const VIRTUAL_CONFIG = 'bench:gateway-config.yaml'

function required(name) {
  const value = process.env[name]
  if (!value) throw new Error(`gateway-server: ${name} is not set`)
  return value
}

const l1 = (process.env.BENCH_L1 ?? 'on') === 'on'
const teams = {
  bench: {
    keys: [required('BENCH_TEAM_KEY_HASH')],
    // A team limited to some advertisers, like most real teams (the access check runs),
    // with a rate limit (counted on every hit) too high for the load to reach.
    advertisers: [100, 101, 102, 103],
    rateLimit: { max: 1000000000, window: '1m' },
  },
  ...(process.env.BENCH_TEAM_B_KEY_HASH ? { 'bench-b': { keys: [process.env.BENCH_TEAM_B_KEY_HASH], advertisers: [100, 101, 102, 103] } } : {}),
}
const base = {
  teams,
  platform: { maxConcurrent: Number(process.env.BENCH_MAX_CONCURRENT ?? 8), queue: Number(process.env.BENCH_QUEUE ?? 200) },
  // 0: L1 off (every hit comes from Redis).
  cache: { l1MaxBytes: l1 ? '64MiB' : 0 },
  redis: { keyPrefix: process.env.BENCH_KEY_PREFIX ?? 'rgwbench:' },
}

/** `over` merged into `into`, objects key by key, anything else replaced. */
function merge(into, over) {
  const out = { ...into }
  for (const [k, v] of Object.entries(over)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && into[k] && typeof into[k] === 'object' ? merge(into[k], v) : v
  }
  return out
}
// YAML is a superset of JSON: the config file is written as JSON.
const yaml = JSON.stringify(merge(base, JSON.parse(process.env.BENCH_CONFIG ?? '{}')), null, 2)

const env = {
  HOST: '127.0.0.1',
  PORT: '0',
  ADMIN_HOST: '127.0.0.1',
  ADMIN_PORT: '0',
  ADMIN_TOKEN: required('BENCH_ADMIN_TOKEN'),
  LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
  PLATFORM_BASE_URL: required('BENCH_PLATFORM_URL'),
  PLATFORM_TOKEN: required('BENCH_PLATFORM_TOKEN'),
  CONFIG_FILE: VIRTUAL_CONFIG,
  // The gateway takes Redis only with GATEWAY_SECRET; every bench gateway shares this one.
  // OpenTelemetry's variables, as given (--profile=l1-traced): tracing on.
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('OTEL_'))),
  ...(process.env.BENCH_REDIS_URL ? { REDIS_URL: process.env.BENCH_REDIS_URL, GATEWAY_SECRET: process.env.BENCH_GATEWAY_SECRET ?? 'bench-gateway-secret-0123456789abcdef' } : {}),
}

const config = loadConfig({ env, readFile: (path) => (path === VIRTUAL_CONFIG ? yaml : readFileSync(path, 'utf8')) })
const gateway = await createGateway(config)
await gateway.start()
await gateway.proxy.listen({ host: config.host, port: config.port })
await gateway.admin.listen({ host: config.admin.host, port: config.admin.port })

let stopping = false
async function stop(code) {
  if (stopping) return
  stopping = true
  const force = setTimeout(() => process.exit(code), 3000)
  force.unref()
  try {
    gateway.proxy.server.closeAllConnections?.()
    await gateway.close()
  } finally {
    // process.exit (rather than a signal's default action) lets --cpu-prof write its file.
    process.exit(code)
  }
}
process.on('SIGTERM', () => void stop(0))
process.on('SIGINT', () => void stop(0))

// Never outlive the benchmark: if run.mjs dies without cleaning up, this process is
// re-parented and leaves on its own.
const parent = process.ppid
setInterval(() => {
  if (process.ppid !== parent) void stop(1)
}, 1000).unref()

process.stdout.write(
  `READY ${JSON.stringify({ port: gateway.proxy.server.address().port, adminPort: gateway.admin.server.address().port, l1, redis: Boolean(process.env.BENCH_REDIS_URL) })}\n`,
)
