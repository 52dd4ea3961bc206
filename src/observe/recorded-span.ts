import { randomFillSync } from 'node:crypto'
// Imported, not the global: Node defines the global `performance` as an accessor.
import { performance } from 'node:perf_hooks'
import { SpanKind, SpanStatusCode, TraceFlags, type Attributes, type HrTime, type SpanContext, type SpanStatus, type TraceState } from '@opentelemetry/api'
import { addHrTimes, millisToHrTime, type InstrumentationScope } from '@opentelemetry/core'
import type { Resource } from '@opentelemetry/resources'
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base'
import { encodeSpanAttributes, type EncodableSpan, type LinkedSpan } from './otlp-protobuf.js'
import { ATTRIBUTE_VALUE_LIMIT, type SpanAttributes, type Trace } from './trace.js'

// A sampled span of the gateway, made by the gateway rather than the SDK's Tracer: what a
// request's step costs is a small object and two clock readings, and the rest is built
// when the span is exported. It is the SDK's ReadableSpan for its BatchSpanProcessor
// and its exporters (the JSON one reads the getters below, built then), and carries what
// the protobuf encoder (otlp-protobuf.ts) reads directly. It does what the SDK's span
// does for the gateway's spans, no more: a request's start from the wall clock, its steps'
// and every end from the monotonic clock, string values cut to ATTRIBUTE_VALUE_LIMIT,
// nothing changed once ended. Events are not used by the gateway; links only between its own
// spans (a fill's span and the reads that waited for it; a fill's span and the fill's span
// of another replica waiting for it, RemoteSpan), at most LINK_LIMIT a span.


/** Links a span holds at most (the SDK's default linkCountLimit); more are counted as dropped. */
export const LINK_LIMIT = 128

/** Where the gateway's spans go, and what they all share. */
export interface SpanSink {
  readonly resource: Resource
  readonly scope: InstrumentationScope
  readonly processor: SpanProcessor
  /** The wall clock, in milliseconds since the epoch. */
  now(): number
}

const NONE: Attributes = Object.freeze({})
const NO_LINKS: ReadableSpan['links'] = []
const NO_EVENTS: ReadableSpan['events'] = []

// Precomputed attributes (frozen objects a span takes as they are) and their encoding;
// null for an object with a value past the limit, which a span copies and cuts instead.
const PRECOMPUTED = new WeakMap<Attributes, Uint8Array | null>()

function precomputedBytes(attributes: Attributes): Uint8Array | null {
  let bytes = PRECOMPUTED.get(attributes)
  if (bytes === undefined) {
    const within = Object.values(attributes).every((v) => typeof v !== 'string' || v.length <= ATTRIBUTE_VALUE_LIMIT)
    bytes = within ? encodeSpanAttributes(attributes) : null
    PRECOMPUTED.set(attributes, bytes)
  }
  return bytes
}

// Ids from a pool of random bytes, refilled 4 KiB at a time (W3C: 16 bytes, 8 bytes, never
// all zero). A span keeps where its id is in the pool (the encoder copies the bytes), and
// makes its hex only when read; a pool is replaced when used up, never written again.
const POOL_BYTES = 4096
let pool = Buffer.alloc(0)
let taken = 0

/** Takes `bytes` random bytes, not all zero, from the pool: their offset in `pool`. */
function takeId(bytes: number): number {
  for (;;) {
    if (taken + bytes > pool.length) {
      pool = randomFillSync(Buffer.allocUnsafe(POOL_BYTES))
      taken = 0
    }
    const at = taken
    taken += bytes
    for (let i = at; i < taken; i += 1) if (pool[i] !== 0) return at
  }
}

/** Whether `a` and `b` hold a key in common. */
function sharesKey(a: Attributes, b: Attributes): boolean {
  for (const key in b) if (key in a) return true
  return false
}

function newId(bytes: number): string {
  const at = takeId(bytes)
  return pool.toString('hex', at, at + bytes)
}

export const newTraceId = (): string => newId(16)
export const newSpanId = (): string => newId(8)

/** Draws a new trace's 16 bytes: their offset in `idPool()`, the pool until the next draw. */
export const drawTraceId = (): number => takeId(16)

/** The pool the last id was drawn from (it is replaced when used up, never written again). */
export const idPool = (): Buffer => pool

// Trace.linkId: a trace id and a span id, in lower-case hex, neither all zero (W3C).
const LINK_ID = /^([0-9a-f]{32})-([0-9a-f]{16})$/
const ZEROS = /^0+$/

/** A recorded span of another replica, named by its Trace.linkId: what a link reads of it. */
class RemoteSpan implements LinkedSpan, SpanContext {
  readonly isRemote = true
  readonly traceState = undefined
  readonly traceBytes = null
  readonly traceAt = 0
  readonly idAt = 0
  readonly idBytes: Buffer
  // Only a recorded span is named to another replica.
  readonly traceFlags = TraceFlags.SAMPLED

  constructor(
    readonly traceId: string,
    readonly spanId: string,
  ) {
    this.idBytes = Buffer.from(spanId, 'hex')
  }

  /** The span `id` names, null for an id of any other form (another replica's word, read from Redis). */
  static of(id: string): RemoteSpan | null {
    const m = LINK_ID.exec(id)
    return m === null || ZEROS.test(m[1]!) || ZEROS.test(m[2]!) ? null : new RemoteSpan(m[1]!, m[2]!)
  }
}

export class RecordedSpan implements ReadableSpan, EncodableSpan, Trace {
  readonly recording = true
  /** The span's id: 8 bytes of `idBytes` from `idAt`. */
  readonly idBytes: Buffer
  readonly idAt: number
  /** A trace id the gateway drew: 16 bytes of `traceBytes` from `traceAt`, its hex made when read; null: given in hex. */
  readonly traceBytes: Buffer | null
  readonly traceAt: number
  #traceHex: string | null
  readonly startMs: number
  readonly #startPerf: number
  readonly #sink: SpanSink
  /** Milliseconds from start to end; -1 while open. */
  durationMs = -1
  statusCode: number = SpanStatusCode.UNSET
  /** Precomputed attributes, shared, and their encoding. */
  base: Attributes = NONE
  baseBytes: Uint8Array | null = null
  /** A second precomputed set after `base` (a request's answer: its status, team, cache result), and its encoding. */
  more: Attributes = NONE
  moreBytes: Uint8Array | null = null
  /** Attributes of this span alone, after the precomputed ones. */
  own: Attributes | null = null
  /** The spans it links to, in the order linked, and how many more past LINK_LIMIT; null: none (one field, for a span's size). */
  linked: { spans: (RecordedSpan | RemoteSpan)[]; dropped: number } | null = null
  // Steps within it still open: a list through their #next.
  #first: RecordedSpan | null = null
  #last: RecordedSpan | null = null
  #next: RecordedSpan | null = null

  /**
   * `traceId`: the trace's id in hex (a caller's, say); null: a new trace, or a step's
   * local parent's, drawn from the id pool as bytes and made hex only when read (the access
   * log, a platform call's `traceparent`, the JSON exporter): the protobuf encoder copies
   * the bytes, and a hit's span never makes the string; a number: a new trace's id drawn
   * just before (drawTraceId, its sampler's decision read from it), at that offset of the pool.
   */
  constructor(
    sink: SpanSink,
    readonly name: string,
    readonly kind: SpanKind,
    traceId: string | number | null,
    readonly traceFlags: number,
    readonly traceState: TraceState | undefined,
    readonly parentSpanContext: SpanContext | undefined,
  ) {
    this.#sink = sink
    if (typeof traceId === 'string') {
      this.traceBytes = null
      this.traceAt = 0
      this.#traceHex = traceId
    } else if (traceId !== null) {
      this.traceAt = traceId
      this.traceBytes = pool
      this.#traceHex = null
    } else if (parentSpanContext instanceof RecordedSpan) {
      this.traceBytes = parentSpanContext.traceBytes
      this.traceAt = parentSpanContext.traceAt
      this.#traceHex = parentSpanContext.#traceHex
    } else {
      this.traceAt = takeId(16)
      this.traceBytes = pool
      this.#traceHex = null
    }
    this.idAt = takeId(8)
    this.idBytes = pool
    this.#startPerf = performance.now()
    // A step starts from its request's wall-clock start and the monotonic time since: one
    // reading of the wall clock a request, and its steps within it whatever the clock does.
    this.startMs = parentSpanContext instanceof RecordedSpan ? parentSpanContext.startMs + (this.#startPerf - parentSpanContext.#startPerf) : sink.now()
  }

  get spanId(): string {
    return this.idBytes.toString('hex', this.idAt, this.idAt + 8)
  }

  get traceId(): string {
    return (this.#traceHex ??= (this.traceBytes as Buffer).toString('hex', this.traceAt, this.traceAt + 16))
  }

  /** The span's context: the span itself, which holds its fields (no object of its own). */
  spanContext(): SpanContext {
    return this
  }

  step(name: string, attributes?: SpanAttributes): Trace {
    return this.#child(name, SpanKind.INTERNAL, attributes)
  }

  call(name: string, attributes: SpanAttributes): { span: Trace; traceparent: string } {
    const span = this.#child(name, SpanKind.CLIENT, attributes)
    return { span, traceparent: `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 0xff).toString(16).padStart(2, '0')}` }
  }

  shared(name: string, attributes: SpanAttributes): Trace {
    // A trace of its own: a new id, no parent and no trace state; recorded as this span is.
    const span = new RecordedSpan(this.#sink, name, SpanKind.INTERNAL, null, this.traceFlags, undefined, undefined)
    span.set(attributes)
    span.link(this)
    return span
  }

  link(other: Trace): void {
    if (!(other instanceof RecordedSpan)) return
    this.#linkTo(other)
    other.#linkTo(this)
  }

  get linkId(): string {
    return `${this.traceId}-${this.spanId}`
  }

  linkElsewhere(id: string): void {
    const other = RemoteSpan.of(id)
    if (other === null || this.linked?.spans.some((s) => s instanceof RemoteSpan && s.spanId === other.spanId && s.traceId === other.traceId)) return
    this.#linkTo(other)
  }

  #linkTo(other: RecordedSpan | RemoteSpan): void {
    if (this.durationMs >= 0) return
    const linked = (this.linked ??= { spans: [], dropped: 0 })
    if (linked.spans.length < LINK_LIMIT) linked.spans.push(other)
    else linked.dropped += 1
  }

  /**
   * Adds attributes: a frozen object is taken as it is (precomputed) as the span's first or
   * second set, when it holds none of the keys already set; anything else is copied.
   */
  set(attributes: Attributes): void {
    if (this.durationMs >= 0) return
    if (this.own === null && this.more === NONE && Object.isFrozen(attributes)) {
      const bytes = precomputedBytes(attributes)
      if (bytes !== null) {
        if (this.base === NONE) {
          this.base = attributes
          this.baseBytes = bytes
          return
        }
        if (!sharesKey(this.base, attributes)) {
          this.more = attributes
          this.moreBytes = bytes
          return
        }
      }
    }
    let own = (this.own ??= {})
    for (const key in attributes) {
      // A key the precomputed ones hold is changed where it stands, as the SDK would.
      if ((this.base !== NONE && key in this.base) || (this.more !== NONE && key in this.more)) {
        own = this.own = { ...this.base, ...this.more, ...own }
        this.base = NONE
        this.baseBytes = null
        this.more = NONE
        this.moreBytes = null
      }
      const value = attributes[key]
      own[key] = typeof value === 'string' && value.length > ATTRIBUTE_VALUE_LIMIT ? value.substring(0, ATTRIBUTE_VALUE_LIMIT) : value
    }
  }

  end(error?: string, stepError: string | undefined = error): void {
    if (this.durationMs >= 0) return
    for (let child = this.#first; child !== null; child = child.#next) child.end(stepError)
    if (error !== undefined) {
      this.set({ 'error.type': error })
      this.statusCode = SpanStatusCode.ERROR
    }
    this.durationMs = performance.now() - this.#startPerf
    this.#sink.processor.onEnd(this)
  }

  #child(name: string, kind: SpanKind, attributes: SpanAttributes | undefined): RecordedSpan {
    // Every sampler the gateway offers samples the child of a sampled span (otel-tracing.ts).
    const child = new RecordedSpan(this.#sink, name, kind, this.#traceHex, this.traceFlags, this.traceState, this)
    if (attributes !== undefined) child.set(attributes)
    if (this.#last === null) this.#first = child
    else this.#last.#next = child
    this.#last = child
    return child
  }

  // ReadableSpan, built when read (the JSON exporter, tests).

  get attributes(): Attributes {
    return { ...this.base, ...this.more, ...this.own }
  }

  get startTime(): HrTime {
    return millisToHrTime(this.startMs)
  }

  get endTime(): HrTime {
    return addHrTimes(this.startTime, millisToHrTime(Math.max(0, this.durationMs)))
  }

  get duration(): HrTime {
    return millisToHrTime(Math.max(0, this.durationMs))
  }

  get ended(): boolean {
    return this.durationMs >= 0
  }

  get status(): SpanStatus {
    return { code: this.statusCode }
  }

  get resource(): Resource {
    return this.#sink.resource
  }

  get instrumentationScope(): InstrumentationScope {
    return this.#sink.scope
  }

  get links(): ReadableSpan['links'] {
    return this.linked === null ? NO_LINKS : this.linked.spans.map((context) => ({ context }))
  }

  get droppedLinksCount(): number {
    return this.linked?.dropped ?? 0
  }

  get events(): ReadableSpan['events'] {
    return NO_EVENTS
  }

  get droppedAttributesCount(): number {
    return 0
  }

  get droppedEventsCount(): number {
    return 0
  }

}
