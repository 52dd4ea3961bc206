import type { Env } from './sources.js'
import { LONGEST_TIMER_MS } from '../clock.js'
import { shownUrlText } from './mask-url.js'

// OpenTelemetry traces are configured by the standard OTEL_* variables, read here with the
// rest of the configuration so that a value the gateway cannot honour stops the start (exit
// 78) rather than leaving an operator without traces. That holds with or without an OTLP
// endpoint: `OTEL_TRACES_EXPORTER=zipkin` with the Zipkin exporter's own endpoint variable
// asks for traces the gateway never sends. Without an OTLP endpoint, tracing is off and
// nothing of OpenTelemetry is loaded (observe/tracing.ts); OTEL_SDK_DISABLED=true and
// OTEL_TRACES_EXPORTER=none turn it off whatever the other variables say.

/** The OTLP/HTTP encodings the gateway exports with; `grpc` is not one. */
export type OtlpProtocol = 'http/protobuf' | 'http/json'

/** Samplers of OTEL_TRACES_SAMPLER, as the OpenTelemetry specification names them. */
export const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const
export type SamplerName = (typeof SAMPLERS)[number]

export interface TracingConfig {
  /** Where spans are sent: the traces endpoint itself (OTEL_EXPORTER_OTLP_ENDPOINT plus `/v1/traces`). */
  url: string
  protocol: OtlpProtocol
  /** OTEL_EXPORTER_OTLP_(TRACES_)HEADERS, e.g. a collector's token: sent with every export, never logged. */
  headers: Record<string, string>
  /** OTEL_SERVICE_NAME, else `service.name` of OTEL_RESOURCE_ATTRIBUTES, else `report-gateway`. */
  serviceName: string
  /** OTEL_RESOURCE_ATTRIBUTES, e.g. `deployment.environment.name=production`. */
  resourceAttributes: Record<string, string>
  sampler: SamplerName
  /** OTEL_TRACES_SAMPLER_ARG of the ratio samplers (default 1). */
  samplerRatio: number
  /** OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT: an export request's time in milliseconds (unset: the exporter's 10 s). */
  timeoutMillis?: number
  /**
   * The batches spans are sent in: OTEL_BSP_MAX_EXPORT_BATCH_SIZE and OTEL_BSP_MAX_QUEUE_SIZE,
   * else BATCH_SPANS and QUEUED_SPANS; OTEL_BSP_SCHEDULE_DELAY and OTEL_BSP_EXPORT_TIMEOUT in
   * milliseconds (unset: the SDK's 5 s between batches, 30 s an export).
   */
  batch: { maxExportBatchSize: number; maxQueueSize: number; scheduledDelayMillis?: number; exportTimeoutMillis?: number }
}

/**
 * Spans sent in batches of this many, from a queue of QUEUED_SPANS, where OTEL_BSP_* says
 * nothing: four times the SDK's 512 and 2,048. A hit answered with every request sampled
 * makes three spans, and each export pays an HTTP request of its own: batches four times
 * as large make a quarter of the exports (what a traced hit costs with each:
 * docs/benchmarks.md, "Tracing"). The queue holds 8,192 spans at most, a few megabytes.
 */
export const BATCH_SPANS = 2048
export const QUEUED_SPANS = 8192

export const DEFAULT_SERVICE_NAME = 'report-gateway'

/** The tracing OTEL_* variables ask for, or null: off (no endpoint, OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER=none). */
export function tracingConfig(env: Env, problems: string[]): TracingConfig | null {
  // The specification reads any value but true as false: OTEL_SDK_DISABLED=1 would leave tracing on.
  const disabled = env.OTEL_SDK_DISABLED?.trim() ?? ''
  if (disabled.toLowerCase() === 'true') return null
  if (disabled !== '' && disabled.toLowerCase() !== 'false') problems.push(`OTEL_SDK_DISABLED: ${disabled} is neither true nor false (set true to turn tracing off; any other value would leave it on)`)
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() || 'otlp'
  if (exporter === 'none') return null
  if (exporter !== 'otlp') problems.push(`OTEL_TRACES_EXPORTER: ${exporter} is not supported; the gateway exports traces with otlp (or none: off)`)
  const endpoint = signalVariable(env, 'ENDPOINT')
  // The signal's own endpoint is used as it is; the base one gets the traces path (OTLP/HTTP).
  const url = endpoint === null ? null : endpoint.traces ? endpoint.value : `${endpoint.value.replace(/\/+$/, '')}/v1/traces`
  if (endpoint !== null && !(/^https?:\/\/[^/?#\s]+/.test(url as string) && URL.canParse(url as string))) problems.push(`${endpoint.name}: ${shownUrlText(String(endpoint.value))} is not an http(s) URL of an OTLP/HTTP receiver (e.g. http://otel-collector:4318)`)
  const protocolSet = signalVariable(env, 'PROTOCOL')
  const protocol = protocolSet?.value ?? 'http/protobuf'
  if (protocolSet !== null && protocol !== 'http/protobuf' && protocol !== 'http/json') {
    problems.push(`${protocolSet.name}: ${protocol} is not supported; use http/protobuf (the default) or http/json`)
  }
  const sampler = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || 'parentbased_always_on'
  if (!(SAMPLERS as readonly string[]).includes(sampler)) problems.push(`OTEL_TRACES_SAMPLER: ${sampler} is not one of ${SAMPLERS.join(', ')}`)
  const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim()
  const samplerRatio = arg ? Number(arg) : 1
  if (!(samplerRatio >= 0 && samplerRatio <= 1)) problems.push(`OTEL_TRACES_SAMPLER_ARG: ${arg} is not a ratio from 0 to 1`)
  const resourceAttributes = keyValues(env.OTEL_RESOURCE_ATTRIBUTES, 'OTEL_RESOURCE_ATTRIBUTES', problems, false)
  const headersSet = signalVariable(env, 'HEADERS')
  const headers = keyValues(headersSet?.value, headersSet?.name ?? 'OTEL_EXPORTER_OTLP_HEADERS', problems, true)
  const batch = batchOf(env, problems)
  const timeoutMillis = millis(env, signalVariable(env, 'TIMEOUT')?.name ?? 'OTEL_EXPORTER_OTLP_TIMEOUT', 1, problems)
  if (url === null) return null
  return {
    url,
    protocol: protocol as OtlpProtocol,
    headers,
    timeoutMillis,
    serviceName: env.OTEL_SERVICE_NAME?.trim() || resourceAttributes['service.name'] || DEFAULT_SERVICE_NAME,
    resourceAttributes,
    sampler: sampler as SamplerName,
    samplerRatio,
    batch,
  }
}

/**
 * The exporter setting `OTEL_EXPORTER_OTLP_TRACES_<what>` gives, else `OTEL_EXPORTER_OTLP_<what>`
 * (the specification's order: the signal's own first), trimmed, with the variable it came
 * from, so that a problem names the variable set; an empty one is unset. Null: neither.
 */
function signalVariable(env: Env, what: 'ENDPOINT' | 'PROTOCOL' | 'HEADERS' | 'TIMEOUT'): { name: string; value: string; traces: boolean } | null {
  for (const [name, traces] of [[`OTEL_EXPORTER_OTLP_TRACES_${what}`, true], [`OTEL_EXPORTER_OTLP_${what}`, false]] as const) {
    const value = env[name]?.trim()
    if (value) return { name, value, traces }
  }
  return null
}

/**
 * The batch settings OTEL_BSP_* give. A queue set below BATCH_SPANS is sent whole as one batch
 * (the SDK cuts such a batch to its queue); a batch set larger than its queue is refused.
 */
function batchOf(env: Env, problems: string[]): TracingConfig['batch'] {
  const batchSet = Boolean(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE?.trim())
  const batch = count(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', BATCH_SPANS, problems)
  const maxQueueSize = count(env, 'OTEL_BSP_MAX_QUEUE_SIZE', QUEUED_SPANS, problems)
  const maxExportBatchSize = batchSet ? batch : Math.min(batch, maxQueueSize)
  if (maxExportBatchSize > maxQueueSize) {
    problems.push(`OTEL_BSP_MAX_EXPORT_BATCH_SIZE: ${maxExportBatchSize} is more than the queue of ${maxQueueSize} spans it is taken from (OTEL_BSP_MAX_QUEUE_SIZE); set it at most that, or raise the queue`)
  }
  return {
    maxExportBatchSize,
    maxQueueSize,
    scheduledDelayMillis: millis(env, 'OTEL_BSP_SCHEDULE_DELAY', 0, problems),
    exportTimeoutMillis: millis(env, 'OTEL_BSP_EXPORT_TIMEOUT', 1, problems),
  }
}

/**
 * The whole number of milliseconds `name` gives, from `least` to what a timer holds, else
 * undefined (the SDK's default). The SDK itself reads a malformed value as its default and
 * a value past the timer's reach as 1 ms.
 */
function millis(env: Env, name: string, least: number, problems: string[]): number | undefined {
  const text = env[name]?.trim()
  if (!text) return undefined
  const n = Number(text)
  if (!Number.isInteger(n) || n < least || n > LONGEST_TIMER_MS) problems.push(`${name}: ${text} is not a whole number of milliseconds from ${least} to ${LONGEST_TIMER_MS}`)
  return n
}

/** The whole number `name` gives (at least 1), else `fallback`. */
function count(env: Env, name: string, fallback: number, problems: string[]): number {
  const text = env[name]?.trim()
  if (!text) return fallback
  const n = Number(text)
  if (!Number.isInteger(n) || n < 1) problems.push(`${name}: ${text} is not a whole number of spans (at least 1)`)
  return n
}

/**
 * The secrets of the trace exporter's headers: each value, and an authorization header's
 * credential alone (`Bearer <token>`'s token), which a caller may paste without its scheme.
 */
export function exporterSecrets(headers: Record<string, string>): string[] {
  return Object.entries(headers).flatMap(([name, value]) => {
    const credential = /authorization$/i.test(name) ? /^[A-Za-z][\w!#$%&'*+.^`|~-]* +(\S+)$/.exec(value)?.[1] : undefined
    return credential === undefined ? [value] : [value, credential]
  })
}

/** The secrets of a headers variable's `text` (`key=value,…`, percent-encoded), as far as it reads: exporterSecrets of its headers. */
export function exporterHeaderSecrets(text: string): string[] {
  return exporterSecrets(keyValues(text, '', [], true))
}

/** `key=value,key2=value2` (W3C Baggage's form, values percent-decoded), as the OTEL_* lists are written. */
function keyValues(text: string | undefined, name: string, problems: string[], secret: boolean): Record<string, string> {
  const out: Record<string, string> = {}
  const parts = (text ?? '').split(',')
  for (const [i, part] of parts.entries()) {
    if (part.trim() === '') continue
    const eq = part.indexOf('=')
    const key = eq > 0 ? part.slice(0, eq).trim() : ''
    let value: string | null = null
    try {
      value = eq > 0 ? decodeURIComponent(part.slice(eq + 1).trim()) : null
    } catch {
      value = null
    }
    // A header's value may be a collector's token: the problem names the entry's place and key alone.
    const entry = `entry ${i + 1} of ${parts.length} (${key ? `key ${JSON.stringify(key)}` : 'no ='})`
    if (!key || value === null) problems.push(`${name}: ${secret ? entry : JSON.stringify(part.trim())} is not key=value (percent-encoded)`)
    else out[key] = value
  }
  return out
}
