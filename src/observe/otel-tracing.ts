import { hostname } from 'node:os'
import { defaultTextMapGetter, diag, DiagLogLevel, isSpanContextValid, ROOT_CONTEXT, SamplingDecision, SpanKind, trace, TraceFlags, type Attributes, type Context, type Link } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
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
import { encodeExportRequest } from './otlp-protobuf.js'
import { drawTraceId, idPool, newSpanId, newTraceId, RecordedSpan, type SpanSink } from './recorded-span.js'
import { ATTRIBUTE_VALUE_LIMIT, type RequestTracer, type Trace, type TracedRequest, type TracingOptions } from './trace.js'
import { withoutKeys } from './key-shape.js'

// The one module that imports OpenTelemetry: observe/tracing.ts loads it only when an OTLP
// endpoint is configured. The SDK's samplers decide, its BatchSpanProcessor batches, and
// its OTLP/HTTP exporter sends (protobuf or JSON, as OTEL_EXPORTER_OTLP_PROTOCOL says);
// the spans themselves are the gateway's (recorded-span.ts: a step costs a small object,
// the rest is built at export), and protobuf is written by otlp-protobuf.ts, byte for byte
// the SDK's. Each span's parent is passed by hand (no context manager, nothing global), so
// that replicas in one process (tests) keep their traces apart. Decisions and prices:
// docs/decisions/opentelemetry.md.

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

/**
 * A request the sampler left out: no span is made for its steps, and each platform call is
 * sent the request's traceparent (not sampled), so that the trace still joins up downstream;
 * a cached report's fill, a trace of its own (Trace.shared), is sent that trace's. A new
 * trace's id stays the bytes it was drawn as until read (the access line at `info`, a
 * `traceparent`), and the span id a `traceparent` names is drawn at the first one.
 */
class UnrecordedTrace implements Trace {
  readonly recording = false
  readonly #bytes: Buffer | null
  readonly #at: number
  readonly #flags: number
  #traceHex: string | null
  #spanId: string | null = null

  /** `traceId`: a caller's trace id, in hex; null: a new trace's, 16 bytes of `bytes` from `at`. */
  constructor(traceId: string | null, bytes: Buffer | null, at: number, flags: number) {
    this.#traceHex = traceId
    this.#bytes = bytes
    this.#at = at
    this.#flags = flags
  }

  get traceId(): string {
    return (this.#traceHex ??= (this.#bytes as Buffer).toString('hex', this.#at, this.#at + 16))
  }

  step(): Trace {
    return this
  }

  call(): { span: Trace; traceparent: string } {
    return { span: this, traceparent: `00-${this.traceId}-${(this.#spanId ??= newSpanId())}-${(this.#flags & 0xff).toString(16).padStart(2, '0')}` }
  }

  shared(): Trace {
    const at = drawTraceId()
    return new UnrecordedTrace(null, idPool(), at, this.#flags)
  }

  link(): void {}

  readonly linkId = null

  linkElsewhere(): void {}

  set(): void {}

  end(): void {}
}

/**
 * The sampler OTEL_TRACES_SAMPLER names. Each of them samples the child of a sampled span
 * (parent-based: the local parent's decision; the ratio: the same trace id; always on),
 * which is why a step of a sampled request is not asked again (recorded-span.ts).
 */
export function samplerOf(config: Pick<TracingConfig, 'sampler' | 'samplerRatio'>): Sampler {
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

/** Above every trace id's word (traceWord): the bound of a sampler that records every new trace. */
const EVERY_TRACE = 0x100000000

/**
 * The bound below which the sampler OTEL_TRACES_SAMPLER names records a trace begun here
 * (no parent) by its id's word (traceWord). Each sampler offered decides such a trace by its
 * id alone, with no attribute or trace state of its own: always on or off, or the ratio
 * sampler's comparison (TraceIdRatioBasedSampler: the ratio of 2^32 - 1, floored; all at a
 * ratio of 1). So a request without a `traceparent` is decided before anything of it is read,
 * and its span's attributes are made only when it is recorded.
 */
export function newTraceBound(config: Pick<TracingConfig, 'sampler' | 'samplerRatio'>): number {
  switch (config.sampler) {
    case 'always_on':
    case 'parentbased_always_on':
      return EVERY_TRACE
    case 'always_off':
    case 'parentbased_always_off':
      return 0
    case 'traceidratio':
    case 'parentbased_traceidratio': {
      const ratio = config.samplerRatio
      if (!(ratio > 0)) return 0
      return ratio >= 1 ? EVERY_TRACE : Math.floor(ratio * 0xffffffff)
    }
  }
}

/** A trace id's word as the ratio sampler reads it: its four 32-bit big-endian words XORed, unsigned. */
export function traceWord(bytes: Buffer, at: number): number {
  return (bytes.readUInt32BE(at) ^ bytes.readUInt32BE(at + 4) ^ bytes.readUInt32BE(at + 8) ^ bytes.readUInt32BE(at + 12)) >>> 0
}

/**
 * The span exporter of the configured protocol: the SDK's OTLP/HTTP exporter for JSON; for
 * protobuf the same transport (its retries, back-off, headers and timeouts) with the
 * gateway's encoder. Each batch is handed on in a task of its own, so that encoding it is
 * not part of the request whose span closed the batch.
 */
async function exporterOf(config: TracingConfig): Promise<SpanExporter> {
  const options = { url: config.url, headers: config.headers, timeoutMillis: config.timeoutMillis }
  if (config.protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(options)
  const [{ OTLPExporterBase }, { createOtlpHttpExportDelegate, convertLegacyHttpOptions }, { ProtobufTraceSerializer, TraceExporterMetricsHelper }] = await Promise.all([
    import('@opentelemetry/otlp-exporter-base'),
    import('@opentelemetry/otlp-exporter-base/node-http'),
    import('@opentelemetry/otlp-transformer'),
  ])
  const serializer = {
    serializeRequest: (spans: ReadableSpan[]) => encodeExportRequest(spans as RecordedSpan[]),
    deserializeResponse: (data: Uint8Array) => ProtobufTraceSerializer.deserializeResponse(data),
  }
  const delegate = createOtlpHttpExportDelegate(
    convertLegacyHttpOptions(options, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' }),
    serializer,
    'otlp_http_span_exporter',
    TraceExporterMetricsHelper,
    undefined,
  )
  const exporter = new OTLPExporterBase<ReadableSpan[]>(delegate)
  return {
    export: (spans, done) => void setImmediate(() => exporter.export(spans, done)),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush(),
  }
}

// What a request's SERVER span starts with, kept on its connection: the requests of a
// kept-alive connection mostly repeat the one before, and then share its attributes
// (frozen: encoded once, recorded-span.ts) and its span's name.
const SEEN = Symbol('traced request')
interface Seen {
  url: string
  method: string | undefined
  version: string
  host: string | undefined
  agent: string | undefined
  name: string
  attributes: Attributes
}
type TracedSocket = TracedRequest['socket'] & { [SEEN]?: Seen }

function cut(value: string): string {
  return value.length > ATTRIBUTE_VALUE_LIMIT ? value.substring(0, ATTRIBUTE_VALUE_LIMIT) : value
}

/**
 * A caller's text as a span carries it: `[REDACTED]` whole when it holds a secret of the
 * gateway's (in any spelling the search finds: a part left would tell the rest), else
 * with anything shaped like a team key redacted; cut to the attribute limit.
 */
function cleaned(text: string, holdsSecret: (text: string) => boolean): string {
  return holdsSecret(text) ? '[REDACTED]' : cut(withoutKeys(text))
}

/** The SERVER span's name and first attributes (the HTTP semantic conventions), as of this request. */
function requestSeen(req: TracedRequest, url: string, holdsSecret: (text: string) => boolean): Seen {
  const q = url.indexOf('?')
  const path = q === -1 ? url : url.slice(0, q)
  const given = req.method ?? 'GET'
  const method = METHODS.has(given) ? given : '_OTHER'
  const route = httpRoute(method, path)
  const attributes: Record<string, string | number> = {
    [ATTR_HTTP_REQUEST_METHOD]: method,
    [ATTR_URL_PATH]: cleaned(path, holdsSecret),
    [ATTR_URL_SCHEME]: 'http',
    [ATTR_NETWORK_PROTOCOL_VERSION]: req.httpVersion,
  }
  if (method !== given) attributes[ATTR_HTTP_REQUEST_METHOD_ORIGINAL] = cut(given)
  if (route !== null) attributes[ATTR_HTTP_ROUTE] = route
  const { remoteAddress, localPort } = req.socket
  if (remoteAddress) attributes[ATTR_CLIENT_ADDRESS] = remoteAddress
  if (localPort) attributes[ATTR_SERVER_PORT] = localPort
  const host = hostName(req.headers.host)
  if (host) attributes[ATTR_SERVER_ADDRESS] = cleaned(host, holdsSecret)
  const agent = req.headers['user-agent']
  if (agent) attributes[ATTR_USER_AGENT_ORIGINAL] = cleaned(agent, holdsSecret)
  return {
    url,
    method: req.method,
    version: req.httpVersion,
    host: req.headers.host,
    agent,
    name: route === null ? method : `${method} ${route}`,
    attributes: Object.freeze(attributes),
  }
}

function seenOf(req: TracedRequest, holdsSecret: (text: string) => boolean): Seen {
  const url = req.url ?? '/'
  const socket = req.socket as TracedSocket
  const last = socket[SEEN]
  const { headers } = req
  if (last !== undefined && last.url === url && last.method === req.method && last.host === headers.host && last.agent === headers['user-agent'] && last.version === req.httpVersion) return last
  return (socket[SEEN] = requestSeen(req, url, holdsSecret))
}

// What the SDK's Tracer hands the sampler for a span started without attributes or links
// (the samplers read them, none changes them).
const NO_ATTRIBUTES: Attributes = Object.freeze({})
const NO_LINKS: Link[] = []

export async function otelTracing(config: TracingConfig, about: TracingOptions): Promise<RequestTracer> {
  // The SDK reports an export that failed through its diagnostic logger, which is global.
  diag.setLogger({ error: about.warn, warn: about.warn, info: () => undefined, debug: () => undefined, verbose: () => undefined }, DiagLogLevel.WARN)
  // The pod's name is the host's in Kubernetes: which replica served a request.
  const resource = defaultResource().merge(
    resourceFromAttributes({ 'host.name': hostname(), 'service.instance.id': about.instanceId, ...config.resourceAttributes, [ATTR_SERVICE_NAME]: config.serviceName, [ATTR_SERVICE_VERSION]: about.version }),
  )
  const processor = new BatchSpanProcessor(await exporterOf(config), config.batch)
  const sink: SpanSink = { resource, scope: { name: 'report-gateway', version: about.version }, processor, now: about.now }
  const sampler = samplerOf(config)
  const bound = newTraceBound(config)
  /** The SERVER span of a new trace recorded: `traceId` null (drawn now) or drawn at that offset (RecordedSpan). */
  const newTrace = (req: TracedRequest, traceId: number | null): RecordedSpan => {
    const seen = seenOf(req, about.holdsSecret)
    const span = new RecordedSpan(sink, seen.name, SpanKind.SERVER, traceId, TraceFlags.SAMPLED, undefined, undefined)
    span.set(seen.attributes)
    return span
  }
  return {
    start(req: TracedRequest): Trace {
      const traceparent = req.headers.traceparent
      if (traceparent === undefined) {
        // A new trace, decided by its id alone (newTraceBound): nothing of the request is read for one left out.
        if (bound === EVERY_TRACE) return newTrace(req, null)
        const at = drawTraceId()
        const bytes = idPool()
        if (traceWord(bytes, at) >= bound) return new UnrecordedTrace(null, bytes, at, TraceFlags.NONE)
        return newTrace(req, at)
      }
      const seen = seenOf(req, about.holdsSecret)
      const context: Context = typeof traceparent === 'string' ? propagator.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter) : ROOT_CONTEXT
      const given = trace.getSpanContext(context)
      const parent = given !== undefined && isSpanContextValid(given) ? given : undefined
      const traceId = parent?.traceId ?? newTraceId()
      // As the SDK's Tracer asks: the samplers offered decide by the trace alone, before any attribute.
      const decision = sampler.shouldSample(context, traceId, seen.name, SpanKind.SERVER, NO_ATTRIBUTES, NO_LINKS)
      const flags = decision.decision === SamplingDecision.RECORD_AND_SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE
      if (decision.decision === SamplingDecision.NOT_RECORD) return new UnrecordedTrace(traceId, null, 0, flags)
      const span = new RecordedSpan(sink, seen.name, SpanKind.SERVER, traceId, flags, decision.traceState ?? parent?.traceState, parent)
      if (decision.attributes !== undefined) span.set(decision.attributes)
      span.set(seen.attributes)
      return span
    },
    async close(): Promise<void> {
      await processor.shutdown()
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
