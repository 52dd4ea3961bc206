// `node bench/span-cost.mjs` (after `npm run build`; run it under the bench lock): in one
// process, no I/O, the CPU time per L1 hit of making its three spans and encoding them as
// OTLP protobuf, the SDK's way (its Tracer and ProtobufTraceSerializer) and the gateway's
// (observe/recorded-span.ts, observe/otlp-protobuf.ts), 5 rounds.
const cpu = () => process.cpuUsage().user / 1000
const { RecordedSpan, newTraceId } = await import('../dist/observe/recorded-span.js')
const { encodeExportRequest } = await import('../dist/observe/otlp-protobuf.js')
const { defaultResource } = await import('@opentelemetry/resources')
const { BasicTracerProvider } = await import('@opentelemetry/sdk-trace-base')
const { ProtobufTraceSerializer } = await import('@opentelemetry/otlp-transformer')
const { trace, ROOT_CONTEXT } = await import('@opentelemetry/api')
const resource = defaultResource()
let spans = []
const processor = { onStart() {}, onEnd: (s) => spans.push(s), forceFlush: async () => {}, shutdown: async () => {} }
const sink = { resource, scope: { name: 'report-gateway', version: '0.1.0' }, processor, now: () => Date.now() }
const REQ = Object.freeze({ 'http.request.method': 'GET', 'url.path': '/api/v1/report/x/get', 'url.scheme': 'http', 'network.protocol.version': '1.1', 'http.route': '/api/v1/report/{split}/get', 'client.address': '127.0.0.1', 'server.port': 8080, 'server.address': '127.0.0.1', 'user_agent.original': 'wrk' })
const L1 = Object.freeze({ 'gateway.cache.tier': 'l1', 'gateway.cache.result': 'hit' })
const tracer = new BasicTracerProvider({ resource, spanLimits: { attributeValueLengthLimit: 1024 }, spanProcessors: [processor] }).getTracer('report-gateway', '0.1.0')
function ours(i) {
  const root = new RecordedSpan(sink, 'GET /api/v1/report/{split}/get', 1, newTraceId(), 1, undefined, undefined)
  root.set(REQ)
  root.step('admission').end()
  const l = root.step('cache.lookup')
  l.set(L1)
  l.end()
  root.set({ 'http.response.status_code': 200, 'gateway.request_id': `abc-${i}`, 'gateway.team': 'bench', 'gateway.cache.status': 'HIT' })
  root.end()
}
function sdk(i) {
  const root = tracer.startSpan('GET /api/v1/report/{split}/get', { kind: 1 }, ROOT_CONTEXT)
  root.setAttributes({ ...REQ })
  const ctx = trace.setSpan(ROOT_CONTEXT, root)
  tracer.startSpan('admission', {}, ctx).end()
  const l = tracer.startSpan('cache.lookup', {}, ctx)
  l.setAttributes(L1)
  l.end()
  root.setAttributes({ 'http.response.status_code': 200, 'gateway.request_id': `abc-${i}` })
  root.setAttributes({ 'gateway.team': 'bench' })
  root.setAttributes({ 'gateway.cache.status': 'HIT' })
  root.end()
}
const N = 150_000
for (let round = 0; round < 5; round++) {
  const out = []
  for (const [name, make, encode] of [['sdk', sdk, (b) => ProtobufTraceSerializer.serializeRequest(b)], ['gateway', ours, (b) => encodeExportRequest(b)]]) {
    let t = cpu()
    for (let i = 0; i < N; i++) {
      make(i)
      if (spans.length >= 1536) spans = []
    }
    const made = ((cpu() - t) / N) * 1000
    spans = []
    for (let i = 0; i < 171; i++) make(i)
    const batch = spans.slice(0, 512)
    spans = []
    t = cpu()
    for (let i = 0; i < 1000; i++) encode(batch)
    const enc = ((cpu() - t) / 1000 / 512) * 3 * 1000
    out.push(`${name}: made ${made.toFixed(2)} µs, encoded ${enc.toFixed(2)} µs`)
  }
  console.log(`a hit's three spans, ${out.join('; ')}`)
}
