import type { IncomingMessage } from 'node:http'

/** A caller's user agent and a path are the longest span attribute values (and a CLIENT span's name holds a path): bounded. */
export const ATTRIBUTE_VALUE_LIMIT = 1024

// What a traced request's steps see of OpenTelemetry (observe/tracing.ts says when and
// how): a span to add to and end, and the parent of the steps within it. Types alone, so
// that the SDK's module (otel-tracing.ts) and the rest of the gateway share them without
// either loading the other.

/** Attribute values as OpenTelemetry takes them (semantic-convention names). */
export type SpanAttributes = Record<string, string | number | boolean>

/** A span being timed: one step of a request, and the parent of the steps within it. */
export interface Trace {
  /** The trace's id (32 hex digits): the access log line carries it. */
  readonly traceId: string
  /** Whether its spans are recorded (sampled); a trace not recorded makes no span and takes no attribute. */
  readonly recording: boolean
  /** A child span (INTERNAL), started now. */
  step(name: string, attributes?: SpanAttributes): Trace
  /** A child span of a platform call (CLIENT), started now, and the `traceparent` that names it to the platform. */
  call(name: string, attributes: SpanAttributes): { span: Trace; traceparent: string }
  /**
   * A span (INTERNAL) starting a trace of its own, started now and linked to this span (and
   * this span to it): the work of a cached report's fill, which every team of the
   * credential reads, so that the platform is asked in no caller's trace. Recorded when
   * this span is, so that a recorded read always finds its fill.
   */
  shared(name: string, attributes: SpanAttributes): Trace
  /** Links this span and `other` to each other (both recorded; at most LINK_LIMIT links a span, the rest counted as dropped). */
  link(other: Trace): void
  /**
   * This span as another replica's span links to it (`<trace id>-<span id>`, 49 characters),
   * told over Redis: null when not recorded (no span to link to).
   */
  readonly linkId: string | null
  /**
   * Links this span to another replica's, named by its `linkId` (once; an id of any other
   * form is ignored): that replica links its span to this one itself.
   */
  linkElsewhere(id: string): void
  set(attributes: SpanAttributes): void
  /**
   * Ends the span: `error` (a GW_* code, an error's name, a status) marks it failed
   * (`error.type`); a step within it still open (a refusal thrown mid-way skipped its end)
   * ends with it, failed with `stepError` (default `error`).
   */
  end(error?: string, stepError?: string): void
}

/** What the SDK's module provides: the SERVER span of a request, and the end of it all. */
export interface RequestTracer {
  /** The span of a request on the proxy listener, started now, the caller's `traceparent` honoured. */
  start(req: TracedRequest): Trace
  /** Sends the spans still held and stops. */
  close(): Promise<void>
}

export interface TracingOptions {
  /** The gateway's version: `service.version`. */
  version: string
  /** This replica's id (as GET /admin/cluster lists it): `service.instance.id`. */
  instanceId: string
  /** The wall clock (milliseconds since the epoch): when each span starts. */
  now: () => number
  /** Where OpenTelemetry's own warnings go (an export that failed, say). */
  warn: (message: string) => void
  /**
   * Whether a text holds a secret of the gateway's (admission's search): a request's path
   * or user-agent that does is exported as `[REDACTED]` whole, as admission refuses it.
   */
  holdsSecret: (text: string) => boolean
}

/** What a request's trace reads of it: Node's request, or a plain GET read on its connection (http/plain-get.ts). */
export type TracedRequest = Pick<IncomingMessage, 'method' | 'url' | 'headers' | 'httpVersion' | 'socket'>
