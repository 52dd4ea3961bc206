import type { Attributes, AttributeValue } from '@opentelemetry/api'
import type { InstrumentationScope } from '@opentelemetry/core'
import type { Resource } from '@opentelemetry/resources'

// The OTLP/HTTP protobuf body (ExportTraceServiceRequest) of the gateway's spans, byte for
// byte what the SDK's ProtobufTraceSerializer writes for the same spans
// (test/unit/otlp-protobuf.test.ts compares them), at a fraction of its cost: a span's
// precomputed attributes are encoded once per attribute object, the resource and the scope
// once per process, ids go from hex to bytes without a buffer of their own, and each length
// is written once, after its message (moved by a byte when its varint is longer than one).
// The fields and their order are those of opentelemetry/proto/trace/v1/trace.proto as the
// SDK writes them (0.223: otlp-transformer's trace-serializer.js).

/** What the encoder reads of a span: the gateway's RecordedSpan (observe/recorded-span.ts). */
export interface EncodableSpan {
  readonly traceId: string
  /** The trace id as 16 bytes of `traceBytes` from `traceAt`, copied rather than `traceId` decoded; null: none. */
  readonly traceBytes: Uint8Array | null
  readonly traceAt: number
  /** The span's id: 8 bytes of `idBytes` from `idAt`. */
  readonly idBytes: Uint8Array
  readonly idAt: number
  readonly traceFlags: number
  readonly traceState: { serialize(): string } | undefined
  /** A parent: a span of the gateway's (its id as bytes) or a caller's (its id in hex). */
  readonly parentSpanContext: { spanId: string; isRemote?: boolean; idBytes?: Uint8Array; idAt?: number } | undefined
  readonly name: string
  /** SpanKind of the API (INTERNAL 0, SERVER 1, CLIENT 2, …). */
  readonly kind: number
  /** Wall-clock start, in milliseconds since the epoch (Date.now()). */
  readonly startMs: number
  /** Milliseconds from start to end (performance.now()). */
  readonly durationMs: number
  /** The span's precomputed attributes as encoded by `encodeSpanAttributes`, or null. */
  readonly baseBytes: Uint8Array | null
  /** A second precomputed set, written after `baseBytes`, or null. */
  readonly moreBytes: Uint8Array | null
  /** Attributes set on the span itself, after the precomputed ones. */
  readonly own: Attributes | null
  readonly statusCode: number
  /** The spans it links to (the gateway's own, ids as bytes) and how many more it dropped past the limit; null: none. */
  readonly linked: { readonly spans: readonly LinkedSpan[]; readonly dropped: number } | null
  readonly resource: Resource
  readonly instrumentationScope: InstrumentationScope
}

/** What a link reads of the span it names. */
export interface LinkedSpan {
  readonly traceId: string
  readonly traceBytes: Uint8Array | null
  readonly traceAt: number
  readonly idBytes: Uint8Array
  readonly idAt: number
  readonly traceFlags: number
  readonly traceState: { serialize(): string } | undefined
  /** A span of another replica (RemoteSpan): its link says so. */
  readonly isRemote?: boolean
}

const SPAN_ATTRIBUTES_FIELD = 9
/** Bytes kept for the length of a batch's messages (16 KiB to 2 MiB for a batch of 512 spans). */
const BATCH_RESERVE = 3
const INT64_MIN = -(2 ** 63)
const INT64_END = 2 ** 63

/** A growing buffer of protobuf fields. */
class ProtoOut {
  buf: Buffer
  pos = 0

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size)
  }

  room(n: number): void {
    if (this.pos + n <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < this.pos + n) size *= 2
    const grown = Buffer.allocUnsafe(size)
    this.buf.copy(grown, 0, 0, this.pos)
    this.buf = grown
  }

  varint(value: number): void {
    this.room(10)
    if (value >= 0 && value <= 0xffffffff) {
      let v = value >>> 0
      while (v > 0x7f) {
        this.buf[this.pos++] = (v & 0x7f) | 0x80
        v >>>= 7
      }
      this.buf[this.pos++] = v
      return
    }
    // A negative or wide int64: ten bytes of two's complement at most.
    let v = BigInt.asUintN(64, BigInt(value))
    while (v > 0x7fn) {
      this.buf[this.pos++] = Number(v & 0x7fn) | 0x80
      v >>= 7n
    }
    this.buf[this.pos++] = Number(v)
  }

  tag(field: number, wire: number): void {
    const key = (field << 3) | wire
    if (key >= 0x80) return this.varint(key)
    this.room(1)
    this.buf[this.pos++] = key
  }

  string(text: string): void {
    // Short ASCII (names, keys, ids, most values) byte by byte: no call into C++ for it.
    if (text.length < 0x80) {
      this.room(text.length + 1)
      const buf = this.buf
      let at = this.pos + 1
      for (let i = 0; i < text.length; i += 1) {
        const c = text.charCodeAt(i)
        if (c >= 0x80) {
          at = -1
          break
        }
        buf[at++] = c
      }
      if (at !== -1) {
        buf[this.pos] = text.length
        this.pos = at
        return
      }
    }
    const n = Buffer.byteLength(text, 'utf8')
    this.varint(n)
    this.room(n)
    this.pos += this.buf.write(text, this.pos, n, 'utf8')
  }

  raw(bytes: Uint8Array): void {
    this.room(bytes.length)
    this.buf.set(bytes, this.pos)
    this.pos += bytes.length
  }

  // The last trace id written, and where its bytes are: a trace's spans are written one
  // after the other (its steps end before it) and share its id, copied rather than decoded again.
  #trace = ''
  #traceAt = 0

  /** An id (`bytes`) given as hex. */
  hex(id: string): void {
    const n = id.length >>> 1
    this.room(n + 1)
    const buf = this.buf
    buf[this.pos++] = n
    if (id === this.#trace) {
      const from = this.#traceAt
      for (let i = 0; i < n; i += 1) buf[this.pos + i] = buf[from + i] as number
    } else {
      if (!hexInto(buf, this.pos, id, n)) buf.write(id, this.pos, n, 'hex')
      if (n === 16) {
        this.#trace = id
        this.#traceAt = this.pos
      }
    }
    this.pos += n
  }

  /** An id (`bytes`) given as its `n` bytes (8: a span's, 16: a trace's) in `from` at `at`. */
  id(from: Uint8Array, at: number, n = 8): void {
    this.room(n + 1)
    const buf = this.buf
    buf[this.pos++] = n
    for (let i = 0; i < n; i += 1) buf[this.pos + i] = from[at + i] as number
    this.pos += n
  }

  /**
   * A span's last fields at once, for a span without links: no attribute, event or link
   * dropped (10, 12, 14: the gateway's spans hold fewer than the SDK's limits of 128), its
   * status as its code alone (15: a SpanStatusCode, 0 to 2), its flags (16, fixed32).
   */
  spanEnd(statusCode: number, flags: number): void {
    this.room(16)
    const buf = this.buf
    let at = this.pos
    buf[at++] = 0x50
    buf[at++] = 0
    buf[at++] = 0x60
    buf[at++] = 0
    buf[at++] = 0x70
    buf[at++] = 0
    buf[at++] = 0x7a
    buf[at++] = 2
    buf[at++] = 0x18
    buf[at++] = statusCode
    buf[at++] = 0x85
    buf[at++] = 0x01
    this.pos = at
    this.fixed32(flags)
  }

  /** No attribute or event dropped (10, 12), and no event (11): what a span with links writes before them. */
  noneDropped(): void {
    this.room(4)
    const buf = this.buf
    buf[this.pos++] = 0x50
    buf[this.pos++] = 0
    buf[this.pos++] = 0x60
    buf[this.pos++] = 0
  }

  /** After a span's links: how many it dropped (14), its status as its code alone (15), its flags (16, fixed32). */
  linksEnd(dropped: number, statusCode: number, flags: number): void {
    this.tag(14, 0)
    this.varint(dropped)
    this.room(4)
    const buf = this.buf
    buf[this.pos++] = 0x7a
    buf[this.pos++] = 2
    buf[this.pos++] = 0x18
    buf[this.pos++] = statusCode
    this.tag(16, 5)
    this.fixed32(flags)
  }

  fixed32(value: number): void {
    this.room(4)
    const buf = this.buf
    buf[this.pos++] = value & 0xff
    buf[this.pos++] = (value >>> 8) & 0xff
    buf[this.pos++] = (value >>> 16) & 0xff
    buf[this.pos++] = (value >>> 24) & 0xff
  }

  double(value: number): void {
    this.room(8)
    this.buf.writeDoubleLE(value, this.pos)
    this.pos += 8
  }

  /** Nanoseconds since the epoch as fixed64, from whole seconds and nanoseconds (as the SDK's HrTime). */
  time(seconds: number, nanos: number): void {
    // seconds × 1e9 exceeds 2^53: split as the SDK does, each product exact.
    const lowSeconds = seconds & 0xffff
    const highSeconds = (seconds / 0x10000) >>> 0
    const fromLow = lowSeconds * 1e9
    const fromHigh = highSeconds * 1e9
    const low = (fromLow >>> 0) + (((fromHigh & 0xffff) * 0x10000) >>> 0) + nanos
    const high = (Math.floor(fromLow / 0x100000000) + ((fromHigh / 0x10000) >>> 0) + Math.floor(low / 0x100000000)) >>> 0
    this.fixed32(low >>> 0)
    this.fixed32(high)
  }

  /**
   * Starts a length-delimited message, `reserve` bytes kept for its length: one for most,
   * two for a span with attributes (128 bytes to 16 KiB; one without has fewer than 128),
   * three for the messages that hold a batch's spans.
   */
  begin(reserve = 1): number {
    this.room(reserve)
    const at = this.pos
    this.pos += reserve
    return at
  }

  /** Ends the message `begin(reserve)` started: its length written before it, the bytes moved when it takes more or fewer bytes than kept. */
  end(at: number, reserve = 1): void {
    const length = this.pos - at - reserve
    if (reserve === 1 && length < 0x80) {
      this.buf[at] = length
      return
    }
    const size = varintSize(length)
    const shift = size - reserve
    if (shift !== 0) {
      if (shift > 0) this.room(shift)
      this.buf.copyWithin(at + size, at + reserve, this.pos)
      this.pos += shift
      // The trace id remembered within the message moved with it.
      if (this.#traceAt > at) this.#traceAt += shift
    }
    const end = this.pos
    this.pos = at
    this.varint(length)
    this.pos = end
  }

  bytes(): Buffer {
    return this.buf.subarray(0, this.pos)
  }
}

// Hex digits' values by character code (-1 for any other character).
const HEX_VALUE = new Int8Array(128).fill(-1)
for (let i = 0; i < 16; i += 1) {
  HEX_VALUE[i.toString(16).charCodeAt(0)] = i
  HEX_VALUE[i.toString(16).toUpperCase().charCodeAt(0)] = i
}

/**
 * The `n` bytes of the hex `id` written at `at`, in JavaScript: an id is 8 or 16 bytes, less
 * than the call into C++ of `Buffer#write(…, 'hex')` costs. False, with the bytes not all
 * written, when `id` holds anything but hex digits (the caller writes it as Buffer does).
 */
const hexValue = (code: number): number => (code < 0x80 ? (HEX_VALUE[code] as number) : -1)

function hexInto(buf: Buffer, at: number, id: string, n: number): boolean {
  for (let i = 0; i < n; i += 1) {
    const high = hexValue(id.charCodeAt(2 * i))
    const low = hexValue(id.charCodeAt(2 * i + 1))
    if ((high | low) < 0) return false
    buf[at + i] = (high << 4) | low
  }
  return true
}

function varintSize(value: number): number {
  let size = 1
  while (value >= 0x80) {
    value = Math.floor(value / 0x80)
    size += 1
  }
  return size
}

function anyValue(out: ProtoOut, value: AttributeValue | null | undefined): void {
  if (typeof value === 'string') {
    out.tag(1, 2)
    out.string(value)
  } else if (typeof value === 'boolean') {
    out.tag(2, 0)
    out.varint(value ? 1 : 0)
  } else if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= INT64_MIN && value < INT64_END) {
      out.tag(3, 0)
      out.varint(value)
    } else {
      out.tag(4, 1)
      out.double(value)
    }
  } else if (Array.isArray(value)) {
    out.tag(5, 2)
    const array = out.begin()
    for (const item of value) {
      out.tag(1, 2)
      const at = out.begin()
      anyValue(out, item)
      out.end(at)
    }
    out.end(array)
  }
}

/** Attributes as repeated KeyValue in `field`, in their own order. */
function attributes(out: ProtoOut, attrs: Attributes, field: number): void {
  for (const key in attrs) {
    if (!Object.prototype.hasOwnProperty.call(attrs, key)) continue
    out.tag(field, 2)
    const kv = out.begin()
    out.tag(1, 2)
    out.string(key)
    out.tag(2, 2)
    const value = out.begin()
    anyValue(out, attrs[key])
    out.end(value)
    out.end(kv)
  }
}

/** A span's attributes encoded once (the span's field 9, repeated), to be copied into each span that holds them. */
export function encodeSpanAttributes(attrs: Attributes): Uint8Array {
  const out = new ProtoOut(256)
  attributes(out, attrs, SPAN_ATTRIBUTES_FIELD)
  return Uint8Array.from(out.bytes())
}

// The resource's and the scope's messages, tag included, once per object.
const ONCE = new WeakMap<object, Uint8Array>()

/** Field 1 (the resource of ResourceSpans, the scope of ScopeSpans) holding what `write` writes, encoded once per `of`. */
function once(of: object, write: (out: ProtoOut) => void): Uint8Array {
  let bytes = ONCE.get(of)
  if (bytes === undefined) {
    const out = new ProtoOut(1024)
    out.tag(1, 2)
    const at = out.begin()
    write(out)
    out.end(at)
    bytes = Uint8Array.from(out.bytes())
    ONCE.set(of, bytes)
  }
  return bytes
}

const resourceBytes = (resource: Resource): Uint8Array =>
  once(resource, (out) => {
    attributes(out, resource.attributes, 1)
    out.tag(2, 0)
    out.varint(0)
  })

const scopeBytes = (scope: InstrumentationScope): Uint8Array =>
  once(scope, (out) => {
    out.tag(1, 2)
    out.string(scope.name)
    if (scope.version) {
      out.tag(2, 2)
      out.string(scope.version)
    }
  })

/**
 * `ms % 1000` for `ms` ≥ 0 and its whole `seconds` (`Math.trunc(ms / 1000)`), without the
 * floating-point remainder's call: the subtraction is exact when `seconds` is the quotient's
 * floor (the remainder then needs fewer bits than `ms` holds), and the remainder is taken
 * when the division rounded across a whole second.
 */
function millisWithin(ms: number, seconds: number): number {
  const within = ms - seconds * 1000
  return within >= 0 && within < 1000 ? within : ms % 1000
}

/** A span's or a link's trace id, span id and trace state: fields 1 to 3 of either message. */
function context(out: ProtoOut, s: LinkedSpan): void {
  out.tag(1, 2)
  if (s.traceBytes !== null) out.id(s.traceBytes, s.traceAt, 16)
  else out.hex(s.traceId)
  out.tag(2, 2)
  out.id(s.idBytes, s.idAt)
  const state = s.traceState?.serialize()
  if (state) {
    out.tag(3, 2)
    out.string(state)
  }
}

function span(out: ProtoOut, s: EncodableSpan): void {
  context(out, s)
  const parent = s.parentSpanContext
  if (parent?.idBytes !== undefined) {
    out.tag(4, 2)
    out.id(parent.idBytes, parent.idAt as number)
  } else if (parent?.spanId) {
    out.tag(4, 2)
    out.hex(parent.spanId)
  }
  out.tag(5, 2)
  out.string(s.name)
  out.tag(6, 0)
  out.varint(s.kind + 1)
  // As the SDK times a span: its start from Date.now(), its end that plus the measured duration.
  const startSeconds = Math.trunc(s.startMs / 1000)
  const startNanos = Math.round(millisWithin(s.startMs, startSeconds) * 1e6)
  const durationSeconds = Math.trunc(s.durationMs / 1000)
  let endSeconds = startSeconds + durationSeconds
  let endNanos = startNanos + Math.round(millisWithin(s.durationMs, durationSeconds) * 1e6)
  if (endNanos >= 1e9) {
    endNanos -= 1e9
    endSeconds += 1
  }
  out.tag(7, 1)
  out.time(startSeconds, startNanos)
  out.tag(8, 1)
  out.time(endSeconds, endNanos)
  if (s.baseBytes !== null) out.raw(s.baseBytes)
  if (s.moreBytes !== null) out.raw(s.moreBytes)
  if (s.own !== null) attributes(out, s.own, SPAN_ATTRIBUTES_FIELD)
  const flags = (s.traceFlags & 0xff) | 0x100 | (parent?.isRemote ? 0x200 : 0)
  if (s.linked === null) return out.spanEnd(s.statusCode, flags)
  out.noneDropped()
  for (const l of s.linked.spans) link(out, l)
  out.linksEnd(s.linked.dropped, s.statusCode, flags)
}

/** A link (the span's field 13) to a span of the gateway's: no attribute, its flags as the SDK's (a local span's). */
function link(out: ProtoOut, l: LinkedSpan): void {
  out.tag(13, 2)
  const at = out.begin()
  context(out, l)
  out.tag(5, 0)
  out.varint(0)
  out.tag(6, 5)
  // SpanFlags: HAS_IS_REMOTE (0x100), and IS_REMOTE (0x200) for another replica's span.
  out.fixed32((l.traceFlags & 0xff) | (l.isRemote === true ? 0x300 : 0x100))
  out.end(at)
}

/** The ExportTraceServiceRequest of `spans`, grouped by resource then scope as the SDK groups them. */
export function encodeExportRequest(spans: readonly EncodableSpan[]): Uint8Array {
  const groups = new Map<Resource, Map<InstrumentationScope, EncodableSpan[]>>()
  // The gateway's spans share one resource and one scope: a span with the last one's is put in its list.
  let lastResource: Resource | undefined
  let lastScope: InstrumentationScope | undefined
  let into: EncodableSpan[] = []
  for (const s of spans) {
    const resource = s.resource
    const scope = s.instrumentationScope
    if (resource !== lastResource || scope !== lastScope) {
      let scopes = groups.get(resource)
      if (scopes === undefined) groups.set(resource, (scopes = new Map()))
      let found = scopes.get(scope)
      if (found === undefined) scopes.set(scope, (found = []))
      into = found
      lastResource = resource
      lastScope = scope
    }
    into.push(s)
  }
  const out = new ProtoOut(spans.length * 320 + 1024)
  for (const [resource, scopes] of groups) {
    out.tag(1, 2)
    const resourceSpans = out.begin(BATCH_RESERVE)
    out.raw(resourceBytes(resource))
    for (const [scope, list] of scopes) {
      out.tag(2, 2)
      const scopeSpans = out.begin(BATCH_RESERVE)
      out.raw(scopeBytes(scope))
      for (const s of list) {
        out.tag(2, 2)
        const reserve = s.baseBytes === null && s.moreBytes === null && s.own === null ? 1 : 2
        const at = out.begin(reserve)
        span(out, s)
        out.end(at, reserve)
      }
      if (scope.schemaUrl) {
        out.tag(3, 2)
        out.string(scope.schemaUrl)
      }
      out.end(scopeSpans, BATCH_RESERVE)
    }
    if (resource.schemaUrl) {
      out.tag(3, 2)
      out.string(resource.schemaUrl)
    }
    out.end(resourceSpans, BATCH_RESERVE)
  }
  return out.bytes()
}
