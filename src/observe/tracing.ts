import type { TracingConfig } from '../config/tracing.js'
import type { SpanAttributes, Trace, TracedRequest, TracingOptions } from './trace.js'

export type { SpanAttributes, Trace, TracedRequest, TracingOptions } from './trace.js'

// OpenTelemetry traces of the proxy listener's requests (docs/decisions/opentelemetry.md).
// Off by default: without an OTLP endpoint (config/tracing.ts) the gateway's `tracing` is
// null, nothing of OpenTelemetry is imported, and every step below tests one value for
// undefined: a hit allocates nothing for traces. On, each request is a SERVER span with a
// child span per step (admission, the cache lookup, the wait for a fill, the governor's
// queue, the platform call; a cached report's fill is a trace of its own, Trace.shared,
// linked to the reads that wait for it), made by observe/otel-tracing.ts, the only module
// that imports the OpenTelemetry SDK, loaded by startTracing only then.

export interface Tracing {
  /**
   * Starts the SERVER span of a request on the proxy listener (the caller's `traceparent`
   * honoured), kept for `traceOf`; a request read on its connection and handed to Node
   * (carryTrace) keeps the span begun there.
   */
  begin(req: TracedRequest): void
  /** Sends the spans still held and stops. */
  close(): Promise<void>
}

// A request's span is kept on the request, under a symbol: with tracing on every request
// gets it (one shape for all), which a WeakMap would cost in each collection; off, none does.
const TRACE = Symbol('trace')
type Traced = TracedRequest & { [TRACE]?: Trace }

/** The span of a request `Tracing.begin` started; undefined when tracing is off or the request is not traced. */
export function traceOf(req: TracedRequest): Trace | undefined {
  return (req as Traced)[TRACE]
}

// A span begun for a request read on its connection, kept there until Node reads that
// request from the connection (http/socket-entrance.ts): its span goes on, not a second.
const CARRIED = Symbol('a span carried to the request Node reads next')
type Carrying = TracedRequest['socket'] & { [CARRIED]?: { url: string; trace: Trace } | undefined }

/** Hands the span of `req`, read on its connection, to the request Node reads next from that connection. */
export function carryTrace(req: TracedRequest): void {
  const trace = traceOf(req)
  if (trace !== undefined) (req.socket as Carrying)[CARRIED] = { url: req.url as string, trace }
}

/** Health probes of the proxy listener are not traced: a probe every few seconds is no request of a caller. */
function isTraced(url: string | undefined): boolean {
  return url !== undefined && url !== '/healthz' && url !== '/readyz'
}

/**
 * `work` in a child span of `parent` named `name`, ended when it settles (its error's
 * code or name as `error.type`); without a parent, or with one that records nothing (a
 * request the sampler left out), `work`'s own promise, with nothing made (`attributes`
 * not even asked): no async frame of its own waits with it.
 */
export function traced<T>(parent: Trace | undefined, name: string, attributes: () => SpanAttributes, work: () => Promise<T>): Promise<T> {
  return parent === undefined || !parent.recording ? untraced(work) : inSpan(parent, name, attributes, work)
}

/** `work()`, a throw of it as its rejection (as an async function's would be). */
function untraced<T>(work: () => Promise<T>): Promise<T> {
  try {
    return work()
  } catch (err) {
    return Promise.reject(err as Error)
  }
}

async function inSpan<T>(parent: Trace, name: string, attributes: () => SpanAttributes, work: () => Promise<T>): Promise<T> {
  const span = parent.step(name, attributes())
  try {
    const value = await work()
    span.end()
    return value
  } catch (err) {
    span.end(errorType(err))
    throw err
  }
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({})
// What a trace that records nothing is given for a call: it makes no span of them.
const UNRECORDED_CALL = 'unrecorded'
const NO_ATTRIBUTES: SpanAttributes = Object.freeze({})

/**
 * A platform call `send(headers)` in a CLIENT span of `parent`: `headers` holds the
 * gateway's own `traceparent` naming that span, never a caller's; the span ends with the
 * answer's status (a 5xx is an error) or the call's failure. Without a parent, `send` with
 * no header and nothing made; with one that records nothing, `send` with its trace's
 * `traceparent` (not sampled), nothing made and `about` not asked.
 */
export function tracedCall<T extends { statusCode: number }>(parent: Trace | undefined, about: () => { name: string; attributes: SpanAttributes }, send: (headers: Readonly<Record<string, string>>) => Promise<T>): Promise<T> {
  if (parent?.recording === true) return callInSpan(parent, about, send)
  try {
    return send(parent === undefined ? NO_HEADERS : { traceparent: parent.call(UNRECORDED_CALL, NO_ATTRIBUTES).traceparent })
  } catch (err) {
    return Promise.reject(err as Error)
  }
}

async function callInSpan<T extends { statusCode: number }>(parent: Trace, about: () => { name: string; attributes: SpanAttributes }, send: (headers: Readonly<Record<string, string>>) => Promise<T>): Promise<T> {
  const { name, attributes } = about()
  const { span, traceparent } = parent.call(name, attributes)
  try {
    const res = await send({ traceparent })
    span.set({ 'http.response.status_code': res.statusCode })
    span.end(res.statusCode >= 500 ? String(res.statusCode) : undefined)
    return res
  } catch (err) {
    span.end(errorType(err))
    throw err
  }
}

/** What failed, for `error.type`: a GW_* or Node error code, else the error's name. */
export function errorType(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code === 'string' && code !== '') return code
  return err instanceof Error ? err.name : 'unknown'
}

/** The gateway's tracing as configured: null when off, and then nothing of OpenTelemetry is loaded. */
export async function startTracing(config: TracingConfig | null, about: TracingOptions): Promise<Tracing | null> {
  if (config === null) return null
  const { otelTracing } = await import('./otel-tracing.js')
  const tracer = await otelTracing(config, about)
  return {
    begin(req) {
      const socket = req.socket as Carrying
      const carried = socket[CARRIED]
      if (carried !== undefined) socket[CARRIED] = undefined
      if (carried !== undefined && carried.url === req.url) (req as Traced)[TRACE] = carried.trace
      else if (isTraced(req.url)) (req as Traced)[TRACE] = tracer.start(req)
    },
    close: () => tracer.close(),
  }
}
