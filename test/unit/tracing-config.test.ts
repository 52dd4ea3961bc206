/**
 * The OTEL_* variables the gateway honours (config/tracing.ts): off without an endpoint,
 * with OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none; the traces URL, protocol, headers,
 * service name, resource attributes and sampler as the OpenTelemetry specification names
 * them; and a value it cannot honour refused, naming the variable (never a header's value).
 */
import { describe, expect, it } from 'vitest'
import { tracingConfig } from '../../src/config/tracing.js'
import { ConfigError, loadConfig } from '../../src/config.js'

function read(env: Record<string, string>) {
  const problems: string[] = []
  return { config: tracingConfig(env, problems), problems }
}

describe('tracing configuration from OTEL_* variables', () => {
  it('is off without an OTLP endpoint, with OTEL_SDK_DISABLED=true and with OTEL_TRACES_EXPORTER=none', () => {
    expect(read({})).toEqual({ config: null, problems: [] })
    expect(read({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toEqual({ config: null, problems: [] })
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).config).toBeNull()
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }).config).toBeNull()
  })

  it('sends to <endpoint>/v1/traces, or to the traces endpoint as it is, in protobuf unless told JSON', () => {
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toEqual({
      config: { url: 'http://collector:4318/v1/traces', protocol: 'http/protobuf', headers: {}, serviceName: 'report-gateway', resourceAttributes: {}, sampler: 'parentbased_always_on', samplerRatio: 1, batch: { maxExportBatchSize: 2048, maxQueueSize: 8192 } },
      problems: [],
    })
    const own = read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/otlp/traces', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).config
    expect(own).toMatchObject({ url: 'https://b/otlp/traces', protocol: 'http/json' })
  })

  it('reads headers, service name, resource attributes and the sampler', () => {
    const { config, problems } = read({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc123456,x-tenant=reports',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attributes,deployment.environment.name=prod',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    })
    expect(problems).toEqual([])
    expect(config).toMatchObject({
      headers: { authorization: 'Bearer abc123456', 'x-tenant': 'reports' },
      serviceName: 'from-attributes',
      resourceAttributes: { 'deployment.environment.name': 'prod' },
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
    })
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SERVICE_NAME: 'gw-eu', OTEL_RESOURCE_ATTRIBUTES: 'service.name=x' }).config?.serviceName).toBe('gw-eu')
  })

  it('sends spans in batches of 2,048 from a queue of 8,192 unless OTEL_BSP_* says otherwise', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }
    expect(read(endpoint).config?.batch).toEqual({ maxExportBatchSize: 2048, maxQueueSize: 8192 })
    expect(read({ ...endpoint, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '512', OTEL_BSP_MAX_QUEUE_SIZE: ' 2048 ' }).config?.batch).toEqual({ maxExportBatchSize: 512, maxQueueSize: 2048 })
    expect(read({ ...endpoint, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '0', OTEL_BSP_MAX_QUEUE_SIZE: 'many' }).problems).toEqual([
      'OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 0 is not a whole number of spans (at least 1)',
      'OTEL_BSP_MAX_QUEUE_SIZE: many is not a whole number of spans (at least 1)',
    ])
  })

  it('refuses an endpoint no URL parser reads, naming the variable (a port past 65535 stopped the start with the SDK\'s trace)', () => {
    expect(read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:99999' }).problems).toEqual([
      'OTEL_EXPORTER_OTLP_ENDPOINT: http://collector:99999 is not an http(s) URL of an OTLP/HTTP receiver (e.g. http://otel-collector:4318)',
    ])
    expect(read({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://[collector/v1/traces' }).problems).toEqual([
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: https://[collector/v1/traces is not an http(s) URL of an OTLP/HTTP receiver (e.g. http://otel-collector:4318)',
    ])
  })

  it('takes the export times as whole milliseconds a timer holds, and refuses any other naming the variable', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }
    // Unset: the SDK's own (a batch every 5 s, an export given 30 s, a request 10 s).
    expect(read(endpoint).config).toMatchObject({ timeoutMillis: undefined, batch: { scheduledDelayMillis: undefined, exportTimeoutMillis: undefined } })
    const set = read({ ...endpoint, OTEL_EXPORTER_OTLP_TIMEOUT: '2500', OTEL_BSP_SCHEDULE_DELAY: '0', OTEL_BSP_EXPORT_TIMEOUT: ' 4000 ' })
    expect(set.problems).toEqual([])
    expect(set.config).toMatchObject({ timeoutMillis: 2500, batch: { scheduledDelayMillis: 0, exportTimeoutMillis: 4000 } })
    expect(read({ ...endpoint, OTEL_EXPORTER_OTLP_TIMEOUT: '2500', OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '700' }).config?.timeoutMillis).toBe(700)
    // The SDK read each of these as its default (a warn line at most, or none: 0 and -1 for
    // the schedule, 2^31 ms, which Node's timers cut to 1 ms: a batch sent every millisecond).
    for (const [name, value] of [
      ['OTEL_EXPORTER_OTLP_TIMEOUT', '0'],
      ['OTEL_EXPORTER_OTLP_TIMEOUT', '10s'],
      ['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', '-1'],
      ['OTEL_BSP_SCHEDULE_DELAY', '-1'],
      ['OTEL_BSP_SCHEDULE_DELAY', '2147483648'],
      ['OTEL_BSP_SCHEDULE_DELAY', '5000.5'],
      ['OTEL_BSP_EXPORT_TIMEOUT', '0'],
      ['OTEL_BSP_EXPORT_TIMEOUT', 'soon'],
    ] as const) {
      expect(read({ ...endpoint, [name]: value }).problems, `${name}=${value}`).toEqual([`${name}: ${value} is not a whole number of milliseconds from ${name === 'OTEL_BSP_SCHEDULE_DELAY' ? 0 : 1} to 2147483647`])
    }
  })

  it('refuses a batch larger than the queue it is taken from, and takes a queue below 2,048 spans whole as its batch', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }
    expect(read({ ...endpoint, OTEL_BSP_MAX_QUEUE_SIZE: '1000' }).config?.batch).toMatchObject({ maxExportBatchSize: 1000, maxQueueSize: 1000 })
    expect(read({ ...endpoint, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '9000' }).problems).toEqual([
      'OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 9000 is more than the queue of 8192 spans it is taken from (OTEL_BSP_MAX_QUEUE_SIZE); set it at most that, or raise the queue',
    ])
  })

  it('reads OTEL_SDK_DISABLED as true or false alone: any other value is refused, not read as false', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }
    expect(read({ ...endpoint, OTEL_SDK_DISABLED: 'TRUE' })).toEqual({ config: null, problems: [] })
    expect(read({ ...endpoint, OTEL_SDK_DISABLED: 'false' }).config).not.toBeNull()
    expect(read({ ...endpoint, OTEL_SDK_DISABLED: '' }).config).not.toBeNull()
    for (const value of ['1', 'yes', 'on']) {
      expect(read({ ...endpoint, OTEL_SDK_DISABLED: value }).problems).toEqual([`OTEL_SDK_DISABLED: ${value} is neither true nor false (set true to turn tracing off; any other value would leave it on)`])
    }
  })

  it('refuses what it cannot honour, naming the variable and never a header\'s value', () => {
    const { problems } = read({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_TRACES_EXPORTER: 'zipkin',
      OTEL_TRACES_SAMPLER: 'sometimes',
      OTEL_TRACES_SAMPLER_ARG: '2',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%ZZsecret-value-1,broken',
    })
    expect(problems.map((p) => p.split(':')[0])).toEqual([
      'OTEL_TRACES_EXPORTER',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'OTEL_TRACES_SAMPLER',
      'OTEL_TRACES_SAMPLER_ARG',
      'OTEL_EXPORTER_OTLP_HEADERS',
      'OTEL_EXPORTER_OTLP_HEADERS',
    ])
    expect(problems.join('\n')).not.toContain('secret-value-1')
  })

  // An entry without `=` was `an entry near "?"`: nothing said which one, in a list of several.
  it('names a malformed header entry by its place and its key, never its value', () => {
    const { problems } = read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=reports,authorization=Bearer%ZZsecret-value-1,broken-secret-2' })
    expect(problems).toEqual([
      'OTEL_EXPORTER_OTLP_HEADERS: entry 2 of 3 (key "authorization") is not key=value (percent-encoded)',
      'OTEL_EXPORTER_OTLP_HEADERS: entry 3 of 3 (no =) is not key=value (percent-encoded)',
    ])
  })

  it('names the _TRACES_ variable that gave a value it refuses, not the general one it stands in for; an empty one is unset', () => {
    const { problems } = read({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'broken',
    })
    expect(problems.map((p) => p.split(':')[0])).toEqual(['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'])
    // An empty _TRACES_ variable (a chart's blank value) leaves the general one in force.
    const blank = read({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: '', OTEL_EXPORTER_OTLP_HEADERS: 'a=1', OTEL_EXPORTER_OTLP_TRACES_HEADERS: '' })
    expect(blank).toMatchObject({ config: { protocol: 'http/json', headers: { a: '1' } }, problems: [] })
  })

  it('refuses what it cannot honour without an endpoint too, tracing staying off; OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off whatever the rest says', () => {
    const { config, problems } = read({ OTEL_TRACES_EXPORTER: 'zipkin', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_TRACES_SAMPLER: 'sometimes', OTEL_TRACES_SAMPLER_ARG: '2' })
    expect(config).toBeNull()
    expect(problems.map((p) => p.split(':')[0])).toEqual(['OTEL_TRACES_EXPORTER', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_TRACES_SAMPLER', 'OTEL_TRACES_SAMPLER_ARG'])
    expect(read({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'zipkin' })).toEqual({ config: null, problems: [] })
    expect(read({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toEqual({ config: null, problems: [] })
  })

  it('stops the start (a configuration error) and keeps the exporter\'s headers among the secrets redacted from the log', () => {
    expect(() => loadConfig({ env: { DEMO: '1', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' } })).toThrow(ConfigError)
    const config = loadConfig({ env: { DEMO: '1', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'api-key=collector-secret-0042' } })
    expect(config.tracing).toMatchObject({ url: 'http://c:4318/v1/traces' })
    expect(config.secrets).toContain('collector-secret-0042')
  })

  it("keeps an authorization header's credential among the secrets alone too, not only after its scheme", () => {
    const config = loadConfig({ env: { DEMO: '1', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20collector-token-0042,x-scope=tenant%20one' } })
    expect(config.secrets).toEqual(expect.arrayContaining(['Bearer collector-token-0042', 'collector-token-0042', 'tenant one']))
    // Another header's value is kept whole alone.
    expect(config.secrets).not.toContain('one')
  })
})
