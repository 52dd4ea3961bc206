import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { ROOT_CONTEXT, SamplingDecision, SpanKind, TraceFlags, trace, type Span, type SpanContext } from '@opentelemetry/api'
import { TraceState } from '@opentelemetry/core'
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import { BasicTracerProvider, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-base'
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer'
import { encodeExportRequest } from '../../src/observe/otlp-protobuf.js'
import { LINK_LIMIT, RecordedSpan, type SpanSink } from '../../src/observe/recorded-span.js'
import { ATTRIBUTE_VALUE_LIMIT } from '../../src/observe/trace.js'
import { newTraceBound, samplerOf, traceWord } from '../../src/observe/otel-tracing.js'
import type { SpanAttributes as Attributes } from '../../src/observe/trace.js'
import { SAMPLERS } from '../../src/config/tracing.js'

// The gateway makes its sampled spans itself (recorded-span.ts) and writes their protobuf
// itself (otlp-protobuf.ts): what a collector receives must be what the SDK's own span and
// serializer would have sent for the same calls.

/** A processor keeping what ends, as the BatchSpanProcessor receives it. */
function collector(): SpanProcessor & { spans: ReadableSpan[] } {
  const spans: ReadableSpan[] = []
  return { spans, onStart: () => undefined, onEnd: (s) => void spans.push(s), forceFlush: async () => undefined, shutdown: async () => undefined }
}

const resource = defaultResource().merge(resourceFromAttributes({ 'service.name': 'report-gateway', 'service.version': '0.1.0', 'host.name': 'pod-1', 'deployment.environment.name': 'tést' }))
const REMOTE: SpanContext = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED, isRemote: true, traceState: new TraceState('vendor=1') }
const PRECOMPUTED: Attributes = Object.freeze({ 'gateway.cache.tier': 'l1', 'gateway.cache.result': 'hit' })
const REQUEST: Attributes = Object.freeze({ 'http.request.method': 'GET', 'url.path': '/api/v1/report/x/get', 'server.port': 8080, 'user_agent.original': 'wrk' })
const LONG = 'é'.repeat(ATTRIBUTE_VALUE_LIMIT + 10)

// How a request's span ends: its answer's attributes, a key of its request's changed.
const CHANGED: Attributes[] = [{ 'http.response.status_code': 200, 'gateway.request_id': 'r-1', 'url.path': '/changed' }]
// As the gateway ends it (http/hooks/request-log.ts): the answer's attributes precomputed, its id apart.
const ANSWERED: Attributes = Object.freeze({ 'http.response.status_code': 200, 'gateway.team': 'bench', 'gateway.cache.status': 'HIT' })

/** The same calls on a span of either kind: a request with steps, a platform call failing, a refusal ending an open step; `ending`: the request's last attributes, in turn. */
function play(root: { set(a: Attributes): void }, child: (name: string, kind: SpanKind, a?: Attributes) => { set(a: Attributes): void; fail?(e: string): void; close(): void }, closeRoot: () => void, ending: Attributes[]): void {
  root.set(REQUEST)
  const admission = child('admission', SpanKind.INTERNAL)
  admission.close()
  const lookup = child('cache.lookup', SpanKind.INTERNAL)
  lookup.set(PRECOMPUTED)
  lookup.close()
  const call = child('platform.request', SpanKind.CLIENT, { 'http.request.method': 'GET', 'server.port': 443, 'gateway.retry': 1.5 })
  call.set({ 'http.response.status_code': 503, 'gateway.long': LONG, 'gateway.flag': false, 'gateway.negative': -7 })
  call.fail?.('503')
  call.close()
  for (const a of ending) root.set(a)
  closeRoot()
}

/** `drawn`: a new trace whose id the span draws itself (kept as bytes), as a request without a `traceparent` starts. */
function recorded(sink: SpanSink, parent: SpanContext | undefined, ending = CHANGED, drawn = false): ReadableSpan[] {
  const root = new RecordedSpan(sink, 'GET /api/v1/report/{split}/get', SpanKind.SERVER, drawn ? null : (parent?.traceId ?? '4bf92f3577b34da6a3ce929d0e0e4736'), TraceFlags.SAMPLED, parent?.traceState, parent)
  play(
    root,
    (name, kind, a) => {
      const s = kind === SpanKind.CLIENT ? (root.call(name, a ?? {}).span as RecordedSpan) : (root.step(name, a) as RecordedSpan)
      let error: string | undefined
      return { set: (x) => s.set(x), fail: (e) => (error = e), close: () => s.end(error) }
    },
    () => root.end(),
    ending,
  )
  return (sink.processor as ReturnType<typeof collector>).spans
}

function bySdk(parent: SpanContext | undefined, ending = CHANGED): ReadableSpan[] {
  const processor = collector()
  const tracer = new BasicTracerProvider({ resource, spanLimits: { attributeValueLengthLimit: ATTRIBUTE_VALUE_LIMIT }, spanProcessors: [processor] }).getTracer('report-gateway', '0.1.0')
  const root = tracer.startSpan('GET /api/v1/report/{split}/get', { kind: SpanKind.SERVER }, parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT)
  const context = trace.setSpan(ROOT_CONTEXT, root)
  play(
    { set: (a) => root.setAttributes(a) },
    (name, kind, a) => {
      const s: Span = tracer.startSpan(name, { kind, ...(a ? { attributes: a } : {}) }, context)
      return {
        set: (x) => s.setAttributes(x),
        fail: (e) => {
          s.setAttribute('error.type', e)
          s.setStatus({ code: 2 })
        },
        close: () => s.end(),
      }
    },
    () => root.end(),
    ending,
  )
  return processor.spans
}

/** A JSON export without what differs by nature (ids made at random, times). */
function comparable(spans: ReadableSpan[]): unknown {
  const text = new TextDecoder().decode(JsonTraceSerializer.serializeRequest(spans))
  return JSON.parse(text, (key, value: unknown) => (/^(traceId|spanId|parentSpanId|startTimeUnixNano|endTimeUnixNano)$/.test(key) ? '·' : value))
}

describe("the gateway's recorded spans", () => {
  const sink = (): SpanSink => ({ resource, scope: { name: 'report-gateway', version: '0.1.0' }, processor: collector(), now: () => 1_764_000_000_123 })

  it('record what the SDK\'s spans record for the same calls (names, kinds, attributes in order, values cut, status, parent, flags)', () => {
    for (const parent of [undefined, REMOTE]) expect(comparable(recorded(sink(), parent))).toEqual(comparable(bySdk(parent)))
  })

  it('are written as protobuf byte for byte as the SDK\'s serializer writes them', () => {
    for (const parent of [undefined, REMOTE]) {
      const spans = recorded(sink(), parent)
      expect(Buffer.from(encodeExportRequest(spans as RecordedSpan[])).toString('hex')).toBe(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('hex'))
    }
  })

  it('draw a new trace\'s id as bytes, shared by its steps, and write it byte for byte as the SDK\'s serializer writes its hex', () => {
    const spans = recorded(sink(), undefined, CHANGED, true) as RecordedSpan[]
    const traceId = spans[0]!.traceId
    expect(traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(traceId).not.toBe('0'.repeat(32))
    expect(spans.map((s) => [s.traceId, s.traceBytes !== null])).toEqual(spans.map(() => [traceId, true]))
    expect(Buffer.from(encodeExportRequest(spans)).toString('hex')).toBe(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('hex'))
    expect(comparable(spans)).toEqual(comparable(bySdk(undefined)))
  })

  it('take a second precomputed set beside the first (a request\'s answer), and write it byte for byte as the SDK\'s serializer, a key of either set changed where it stands', () => {
    const endings: Attributes[][] = [
      [ANSWERED, { 'gateway.request_id': 'r-1' }],
      [ANSWERED, { 'gateway.cache.status': 'MISS', 'gateway.request_id': 'r-1' }],
      [ANSWERED, { 'url.path': '/changed' }],
      [Object.freeze({ 'url.path': '/frozen', 'gateway.team': 'bench' }), { 'gateway.request_id': 'r-1' }],
      [ANSWERED, PRECOMPUTED],
    ]
    for (const ending of endings) {
      for (const parent of [undefined, REMOTE]) {
        const spans = recorded(sink(), parent, ending)
        expect(comparable(spans)).toEqual(comparable(bySdk(parent, ending)))
        expect(Buffer.from(encodeExportRequest(spans as RecordedSpan[])).toString('hex')).toBe(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('hex'))
      }
    }
    const request = recorded(sink(), undefined, endings[0]).at(-1) as RecordedSpan
    expect([request.base, request.more, request.own]).toEqual([REQUEST, ANSWERED, { 'gateway.request_id': 'r-1' }])
    expect(request.more).toBe(ANSWERED)
  })

  it('are written byte for byte in a batch of hundreds, the messages past 127 and 16,383 bytes included', () => {
    const s = sink()
    for (let i = 0; i < 200; i += 1) recorded(s, i % 2 ? REMOTE : undefined, CHANGED, i % 4 === 0)
    const spans = (s.processor as ReturnType<typeof collector>).spans
    expect(spans.length).toBe(800)
    expect(Buffer.from(encodeExportRequest(spans as RecordedSpan[])).toString('hex')).toBe(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('hex'))
  })

  it('start a fill\'s span in a trace of its own, linked both ways, and write its links byte for byte as the SDK\'s serializer', () => {
    const s = sink()
    const request = new RecordedSpan(s, 'GET /api/v1/report/{split}/get', SpanKind.SERVER, REMOTE.traceId, TraceFlags.SAMPLED, REMOTE.traceState, REMOTE)
    const waiting = request.step('cache.fill') as RecordedSpan
    const fill = waiting.shared('report.fill', { 'gateway.credential': 'default' }) as RecordedSpan
    expect([fill.traceId === REMOTE.traceId, fill.parentSpanContext, fill.traceState, fill.traceFlags]).toEqual([false, undefined, undefined, TraceFlags.SAMPLED])
    expect(fill.traceId).toMatch(/^[0-9a-f]{32}$/)
    // Readers joining the fill: more than a span holds, the rest counted as dropped.
    const joined = Array.from({ length: LINK_LIMIT + 1 }, () => new RecordedSpan(s, 'cache.fill', SpanKind.INTERNAL, '0af7651916cd43dd8448eb211c80319d', TraceFlags.SAMPLED, undefined, undefined))
    for (const j of joined) fill.link(j)
    const call = fill.call('GET /api/v1/report/campaigns/get', { 'http.request.method': 'GET' })
    expect(call.traceparent).toBe(`00-${fill.traceId}-${(call.span as RecordedSpan).spanId}-01`)
    call.span.end()
    fill.end()
    // A span ended takes no link; the open one still does.
    fill.link(request)
    for (const j of joined) j.end()
    waiting.end()
    request.end()
    expect(fill.links.map((l) => l.context.spanId)).toEqual([waiting, ...joined.slice(0, LINK_LIMIT - 1)].map((x) => x.spanId))
    expect(fill.droppedLinksCount).toBe(2)
    expect([waiting, ...joined].map((x) => x.links.map((l) => l.context.spanId))).toEqual([waiting, ...joined].map(() => [fill.spanId]))
    expect(request.links.map((l) => l.context.spanId)).toEqual([fill.spanId])
    const spans = (s.processor as ReturnType<typeof collector>).spans
    expect(Buffer.from(encodeExportRequest(spans as RecordedSpan[])).toString('hex')).toBe(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('hex'))
  })

  it('link a fill\'s span to another replica\'s by its linkId, once, as a remote link byte for byte as the SDK\'s serializer, and nothing else', () => {
    const s = sink()
    const request = new RecordedSpan(s, 'GET /api/v1/report/{split}/get', SpanKind.SERVER, REMOTE.traceId, TraceFlags.SAMPLED, undefined, undefined)
    const fill = request.shared('report.fill', { 'gateway.credential': 'default' }) as RecordedSpan
    const other = new RecordedSpan(s, 'report.fill', SpanKind.INTERNAL, '0af7651916cd43dd8448eb211c80319d', TraceFlags.SAMPLED, undefined, undefined)
    expect(fill.linkId).toBe(`${fill.traceId}-${fill.spanId}`)
    // Another replica's word, read from Redis: only an id of the form linkId makes, once.
    for (const id of [other.linkId, other.linkId, `${other.linkId} `, other.linkId.toUpperCase(), `${'0'.repeat(32)}-${other.spanId}`, `${other.traceId}-${'0'.repeat(16)}`, `00-${other.linkId}-01`, '']) fill.linkElsewhere(id)
    fill.end()
    other.end()
    request.end()
    expect(fill.links.map((l) => [l.context.traceId, l.context.spanId, l.context.isRemote])).toEqual([
      [request.traceId, request.spanId, undefined],
      [other.traceId, other.spanId, true],
    ])
    const spans = (s.processor as ReturnType<typeof collector>).spans
    expect(Buffer.from(encodeExportRequest(spans as RecordedSpan[])).toString('hex')).toBe(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('hex'))
  })

  it('time a request from the wall clock at its start, its steps within it, and change nothing once ended', () => {
    const spans = recorded(sink(), undefined)
    const request = spans.at(-1) as RecordedSpan
    expect(request.kind).toBe(SpanKind.SERVER)
    expect(request.startTime).toEqual([1_764_000_000, 123_000_000])
    for (const step of spans.slice(0, -1) as RecordedSpan[]) {
      expect(step.startMs).toBeGreaterThanOrEqual(request.startMs)
      expect(step.startMs + step.durationMs).toBeLessThanOrEqual(request.startMs + request.durationMs)
    }
    const [admission] = spans as RecordedSpan[]
    expect(admission!.ended).toBe(true)
    admission!.set({ late: 1 })
    expect(admission!.attributes).toEqual({})
  })
})

describe('the samplers the gateway offers', () => {
  it('each sample the child of a sampled span, so a step of a sampled request is not asked again', () => {
    const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: TraceFlags.SAMPLED })
    const traceId = '00000000000000000000000000000001'
    for (const sampler of SAMPLERS.filter((s) => s !== 'always_off')) {
      const child = samplerOf({ sampler, samplerRatio: 0.5 }).shouldSample(parent, traceId, 'step', SpanKind.INTERNAL, {}, [])
      // The ratio alone decides by the trace id: the child's decision is the root's.
      const root = samplerOf({ sampler, samplerRatio: 0.5 }).shouldSample(ROOT_CONTEXT, traceId, 'root', SpanKind.SERVER, {}, [])
      const expected = sampler === 'traceidratio' ? root.decision : SamplingDecision.RECORD_AND_SAMPLED
      expect([sampler, child.decision]).toEqual([sampler, expected])
    }
  })

  it('decide a new trace by its id alone, as its words read against a bound: for each sampler and ratio, the SDK sampler\'s decision, with no attribute or trace state', () => {
    const ids = ['00000000000000000000000000000001', 'ffffffffffffffffffffffffffffffff', '4bf92f3577b34da6a3ce929d0e0e4736', '028f5c27000000000000000000000000', '028f5c28000000000000000000000000', ...Array.from({ length: 2000 }, () => randomBytes(16).toString('hex'))]
    for (const sampler of SAMPLERS) {
      for (const samplerRatio of [0, 0.01, 0.5, 0.99, 1]) {
        const bound = newTraceBound({ sampler, samplerRatio })
        const wrong = ids.filter((id) => {
          const d = samplerOf({ sampler, samplerRatio }).shouldSample(ROOT_CONTEXT, id, 'GET', SpanKind.SERVER, {}, [])
          if (d.attributes !== undefined || d.traceState !== undefined) return true
          return (d.decision === SamplingDecision.RECORD_AND_SAMPLED) !== traceWord(Buffer.from(id, 'hex'), 0) < bound
        })
        expect([sampler, samplerRatio, wrong]).toEqual([sampler, samplerRatio, []])
      }
    }
  })
})
