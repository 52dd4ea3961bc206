import { describe, expect, it } from 'vitest'
import { SpanKind, TraceFlags } from '@opentelemetry/api'
import { defaultResource } from '@opentelemetry/resources'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer'
import { encodeExportRequest } from '../../src/observe/otlp-protobuf.js'
import { RecordedSpan } from '../../src/observe/recorded-span.js'

// A span's times in protobuf are the encoder's own arithmetic (otlp-protobuf.ts, millisWithin):
// they must be what the SDK's serializer writes from the same span at any wall-clock time.

describe("the protobuf of a span's times", () => {
  it('is the SDK serializer\'s at the edges of a second and within one', () => {
    // A wall clock one step (2^-12 ms at this size) either side of a whole second, the second, and a fraction.
    for (const now of [1_764_000_000_999.999755859375, 1_764_000_001_000, 1_764_000_001_000.000244140625, 1_764_000_000_123.456]) {
      const spans: ReadableSpan[] = []
      const sink = { resource: defaultResource(), scope: { name: 'report-gateway' }, processor: { onStart: () => undefined, onEnd: (s: ReadableSpan) => void spans.push(s), forceFlush: async () => undefined, shutdown: async () => undefined }, now: () => now }
      const request = new RecordedSpan(sink, 'GET', SpanKind.SERVER, '4bf92f3577b34da6a3ce929d0e0e4736', TraceFlags.SAMPLED, undefined, undefined)
      request.step('admission').end()
      request.end()
      expect(spans).toHaveLength(2)
      expect(Buffer.from(encodeExportRequest(spans as RecordedSpan[])).toString('hex')).toBe(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('hex'))
    }
  })
})
