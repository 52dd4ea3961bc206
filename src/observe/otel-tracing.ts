import type { IncomingMessage } from 'node:http'
import { hostname } from 'node:os'
import { defaultTextMapGetter, diag, DiagLogLevel, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type SpanContext, type Tracer } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base'
import {
  ATTR_CLIENT_ADDRESS,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_METHOD_ORIGINAL,
  ATTR_HTTP_ROUTE,
  ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
} from '@opentelemetry/semantic-conventions'
import type { TracingConfig } from '../config/tracing.js'
import type { RequestTracer, SpanAttributes, Trace, TracingOptions } from './trace.js'

// The one module that imports OpenTelemetry: observe/tracing.ts loads it only when an OTLP
// endpoint is configured. Spans are made with the SDK's BasicTracerProvider, batched, and
// sent by the OTLP/HTTP exporter (protobuf or JSON, as OTEL_EXPORTER_OTLP_PROTOCOL says);
// each span's parent is passed by hand (no context manager, nothing global), so that
// replicas in one process (tests) keep their traces apart.

// A caller's user agent and a path are the longest attribute values: bounded.
const ATTRIBUTE_VALUE_LIMIT = 1024

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH', 'QUERY'])

// A caller's traceparent is read, and nothing else of its tracing headers: no tracestate,
// no baggage. The platform gets the gateway's own traceparent (tracing.ts, tracedCall).
const propagator = new W3CTraceContextPropagator()

/** The route of a proxy-listener path, as the OpenAPI document names it (`http.route`); null outside /api/v1/. */
export function httpRoute(method: string, path: string): string | null {
  if (!path.startsWith('/api/v1/')) return null
  if (/^\/api\/v1\/report\/[^/]+\/get\/?$/.test(path) || (method === 'GET' && path.startsWith('/api/v1/report/'))) return '/api/v1/report/{split}/get'
  return '/api/v1/{path}'
}

/** `traceparent` (W3C Trace Context, version 00) naming a span. */
function traceparentOf(span: SpanContext): string {
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 0xff).toString(16).padStart(2, '0')}`
}

/**
 * A request the sampler left out: no span is made for its steps, and each platform call is
 * sent the request's traceparent (not sampled), so that the trace still joins up downstream.
 */
class UnrecordedTrace implements Trace {
  readonly recording = false
  readonly #span: SpanContext

  constructor(span: SpanContext) {
    this.#span = span
  }

  get traceId(): string {
    return this.#span.traceId
  }

  step(): Trace {
    return this
  }

  call(): { span: Trace; traceparent: string } {
    return { span: this, traceparent: traceparentOf(this.#span) }
  }

  set(): void {}

  end(): void {}
}

class OtelTrace implements Trace {
  readonly recording = true
  readonly #tracer: Tracer
  readonly #span: Span
  readonly #context: Context
  #open: OtelTrace[] | null = null
  #ended = false

  constructor(tracer: Tracer, span: Span, parent: Context) {
    this.#tracer = tracer
    this.#span = span
    this.#context = trace.setSpan(parent, span)
  }

  get traceId(): string {
    return this.#span.spanContext().traceId
  }

  step(name: string, attributes?: SpanAttributes): Trace {
    return this.#child(name, SpanKind.INTERNAL, attributes)
  }

  call(name: string, attributes: SpanAttributes): { span: Trace; traceparent: string } {
    const span = this.#child(name, SpanKind.CLIENT, attributes)
    return { span, traceparent: traceparentOf(span.#span.spanContext()) }
  }

  set(attributes: SpanAttributes): void {
    this.#span.setAttributes(attributes)
  }

  end(error?: string, stepError: string | undefined = error): void {
    if (this.#ended) return
    this.#ended = true
    for (const child of this.#open ?? []) child.end(stepError)
    if (error !== undefined) {
      this.#span.setAttribute('error.type', error)
      this.#span.setStatus({ code: SpanStatusCode.ERROR })
    }
    this.#span.end()
  }

  #child(name: string, kind: SpanKind, attributes: SpanAttributes | undefined): OtelTrace {
    const child = new OtelTrace(this.#tracer, this.#tracer.startSpan(name, { kind, ...(attributes ? { attributes } : {}) }, this.#context), this.#context)
    ;(this.#open ??= []).push(child)
    return child
  }
}

function samplerOf(config: TracingConfig): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(config.samplerRatio)
  switch (config.sampler) {
    case 'always_on':
      return new AlwaysOnSampler()
    case 'always_off':
      return new AlwaysOffSampler()
    case 'traceidratio':
      return ratio()
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio() })
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() })
  }
}

async function exporterOf(config: TracingConfig): Promise<SpanExporter> {
  const options = { url: config.url, headers: config.headers }
  if (config.protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(options)
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(options)
}

export async function otelTracing(config: TracingConfig, about: TracingOptions): Promise<RequestTracer> {
  // The SDK reports an export that failed through its diagnostic logger, which is global.
  diag.setLogger({ error: about.warn, warn: about.warn, info: () => undefined, debug: () => undefined, verbose: () => undefined }, DiagLogLevel.WARN)
  // The pod's name is the host's in Kubernetes: which replica served a request.
  const resource = defaultResource().merge(
    resourceFromAttributes({ 'host.name': hostname(), 'service.instance.id': about.instanceId, ...config.resourceAttributes, [ATTR_SERVICE_NAME]: config.serviceName, [ATTR_SERVICE_VERSION]: about.version }),
  )
  const provider = new BasicTracerProvider({
    resource,
    sampler: samplerOf(config),
    spanLimits: { attributeValueLengthLimit: ATTRIBUTE_VALUE_LIMIT },
    spanProcessors: [new BatchSpanProcessor(await exporterOf(config))],
  })
  const tracer = provider.getTracer('report-gateway', about.version)
  return {
    start(req: IncomingMessage): Trace {
      const url = req.url ?? '/'
      const q = url.indexOf('?')
      const path = q === -1 ? url : url.slice(0, q)
      const given = req.method ?? 'GET'
      const method = METHODS.has(given) ? given : '_OTHER'
      const route = httpRoute(method, path)
      const traceparent = req.headers.traceparent
      const parent = typeof traceparent === 'string' ? propagator.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter) : ROOT_CONTEXT
      // The samplers the gateway offers decide by the trace alone: attributes only for a span kept.
      const span = tracer.startSpan(route === null ? method : `${method} ${route}`, { kind: SpanKind.SERVER }, parent)
      if (!span.isRecording()) return new UnrecordedTrace(span.spanContext())
      const attributes: SpanAttributes = {
        [ATTR_HTTP_REQUEST_METHOD]: method,
        [ATTR_URL_PATH]: path,
        [ATTR_URL_SCHEME]: 'http',
        [ATTR_NETWORK_PROTOCOL_VERSION]: req.httpVersion,
      }
      if (method !== given) attributes[ATTR_HTTP_REQUEST_METHOD_ORIGINAL] = given
      if (route !== null) attributes[ATTR_HTTP_ROUTE] = route
      const { remoteAddress, localPort } = req.socket
      if (remoteAddress) attributes[ATTR_CLIENT_ADDRESS] = remoteAddress
      if (localPort) attributes[ATTR_SERVER_PORT] = localPort
      const host = hostName(req.headers.host)
      if (host) attributes[ATTR_SERVER_ADDRESS] = host
      const agent = req.headers['user-agent']
      if (agent) attributes[ATTR_USER_AGENT_ORIGINAL] = agent
      span.setAttributes(attributes)
      return new OtelTrace(tracer, span, parent)
    },
    async close(): Promise<void> {
      await provider.shutdown()
      diag.disable()
    },
  }
}

/**
 * The host a request was sent to, as `server.address` takes it (the HTTP semantic
 * conventions: the Host header without its port; an IPv6 address without its brackets),
 * or null when the header names none.
 */
export function hostName(header: string | undefined): string | null {
  if (!header) return null
  if (header.startsWith('[')) {
    const end = header.indexOf(']')
    return end > 1 ? header.slice(1, end) : null
  }
  const colon = header.lastIndexOf(':')
  const host = colon !== -1 && /^\d*$/.test(header.slice(colon + 1)) ? header.slice(0, colon) : header
  return host === '' ? null : host
}
