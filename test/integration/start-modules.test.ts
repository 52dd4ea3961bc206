import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TEAMS_YAML } from '../helpers/build-gateway.js'
import { probeAsker, spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'

const PROBE = fileURLToPath(new URL('../helpers/module-probe.mjs', import.meta.url))

// A replica's start loads what its configuration uses, and no more: each module loaded is
// read, compiled and run before the first answer (docs/benchmarks.md, "A replica's cold
// start"). A start with platform settings, no Redis and no OTLP endpoint, as dist/main.js
// runs, asked which modules its process loaded once it is ready.
describe('the modules a configured start loads', () => {
  let gw: GatewayProcess
  let modules: string[]

  beforeAll(async () => {
    gw = await spawnGateway({
      // Nothing listens there: the token's check at start fails, and the start goes on.
      env: { PLATFORM_BASE_URL: 'http://127.0.0.1:9', PLATFORM_TOKEN: 'start-modules-token' },
      yaml: TEAMS_YAML,
      nodeArgs: ['--import', PROBE],
      ipc: true,
    })
    modules = await probeAsker(gw)<string[]>({ kind: 'modules' }, 'modules', 15_000)
  })

  afterAll(async () => {
    await gw?.close()
  })

  const loaded = (pattern: RegExp) => modules.filter((url) => pattern.test(url))

  it('the probe sees the gateway\'s own modules and its dependencies', () => {
    expect(loaded(/\/dist\/compose\.js$/)).toHaveLength(1)
    expect(loaded(/\/node_modules\/fastify\//).length).toBeGreaterThan(0)
  })

  it('neither the sandbox nor the demo (demo mode is off)', () => {
    expect(loaded(/\/dist\/(sandbox\/|demo\.js)/)).toEqual([])
  })

  it('no OpenTelemetry SDK or exporter (tracing is off)', () => {
    expect(loaded(/\/node_modules\/@opentelemetry\/(?!api\/)/)).toEqual([])
    expect(loaded(/\/dist\/observe\/(otel-tracing|otlp-protobuf|recorded-span)\.js$/)).toEqual([])
  })

  it('not TypeBox: the configuration is checked by the generated validators, its schema read as generated', () => {
    expect(loaded(/\/node_modules\/@sinclair\/typebox\//)).toEqual([])
  })
})
