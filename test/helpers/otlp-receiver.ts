import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

// An OTLP/HTTP receiver on loopback, as a collector would listen on 4318: it keeps every
// export it is sent (POST /v1/traces) and decodes OTLP/JSON into plain spans. A protobuf
// export is kept as its bytes (the tests look for the ids and names in them).

export type AttributeValue = string | number | boolean

/** One span of an export, its attributes as a plain object. */
export interface ReceivedSpan {
  // Ids in hex, as OTLP/JSON writes them; the parent's empty for a root span.
  traceId: string; spanId: string; parentSpanId: string
  name: string
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number
  startNs: bigint; endNs: bigint
  attributes: Record<string, AttributeValue>
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number
  /** The spans it links to (OTLP's Span.Link): their trace and span ids, in hex. */
  links: { traceId: string; spanId: string }[]
  /** The resource's attributes and the instrumentation scope's name. */
  resource: Record<string, AttributeValue>; scope: string
}

export interface Export {
  path: string
  contentType: string
  headers: Record<string, string | string[] | undefined>
  body: Buffer
  /** The TCP connection it came on, numbered from 1 in the order they carried their first export. */
  connection: number
}

export interface OtlpReceiver {
  /** The base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string
  exports: Export[]
  /** Every span of the JSON exports so far. */
  spans(): ReceivedSpan[]
  close(): Promise<void>
}

interface JsonValue {
  stringValue?: string
  intValue?: string | number
  doubleValue?: number
  boolValue?: boolean
}

function valueOf(v: JsonValue): AttributeValue {
  if (v.stringValue !== undefined) return v.stringValue
  if (v.intValue !== undefined) return Number(v.intValue)
  if (v.doubleValue !== undefined) return v.doubleValue
  return v.boolValue ?? ''
}

function attributes(list: { key: string; value: JsonValue }[] | undefined): Record<string, AttributeValue> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]))
}

interface JsonExport {
  resourceSpans: {
    resource?: { attributes?: { key: string; value: JsonValue }[] }
    scopeSpans: {
      scope?: { name?: string }
      spans: {
        traceId: string
        spanId: string
        parentSpanId?: string
        name: string
        kind: number
        startTimeUnixNano: string | number
        endTimeUnixNano: string | number
        attributes?: { key: string; value: JsonValue }[]
        status?: { code?: number }
        links?: { traceId: string; spanId: string }[]
      }[]
    }[]
  }[]
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const exports: Export[] = []
  const connections = new WeakMap<object, number>()
  let lastConnection = 0
  const server: Server = createServer((req, res) => {
    let connection = connections.get(req.socket)
    if (connection === undefined) connections.set(req.socket, (connection = ++lastConnection))
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      exports.push({ path: req.url ?? '', contentType: req.headers['content-type'] ?? '', headers: req.headers, body: Buffer.concat(chunks), connection })
      // An empty ExportTraceServiceResponse: everything accepted.
      const json = (req.headers['content-type'] ?? '').includes('json')
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : Buffer.alloc(0))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports,
    spans() {
      const out: ReceivedSpan[] = []
      for (const e of exports) {
        if (!e.contentType.includes('json')) continue
        const body = JSON.parse(e.body.toString('utf8')) as JsonExport
        for (const rs of body.resourceSpans) {
          const resource = attributes(rs.resource?.attributes)
          for (const ss of rs.scopeSpans) {
            for (const s of ss.spans) {
              out.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                name: s.name,
                kind: s.kind,
                startNs: BigInt(s.startTimeUnixNano),
                endNs: BigInt(s.endTimeUnixNano),
                attributes: attributes(s.attributes),
                status: s.status?.code ?? 0,
                links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
                resource,
                scope: ss.scope?.name ?? '',
              })
            }
          }
        }
      }
      return out
    },
    close: () => new Promise((resolve) => server.close(() => resolve()).closeAllConnections()),
  }
}
