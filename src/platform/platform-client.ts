import { setMaxListeners } from 'node:events'
import type { IncomingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import { request, type Dispatcher } from 'undici'
import type { FastifyError } from 'fastify'
import { PlatformAuthError, ShuttingDownError, UpstreamError, UpstreamTimeoutError } from '../errors.js'
import type { TokenProvider } from './token-provider.js'

export interface PlatformCall {
  method: string
  /** Path and query, as the gateway serialized them. */
  url: string
  /** Request headers besides authorization and x-request-id (the caller's allowlisted ones, or the gateway's). */
  headers?: Record<string, string>
  /** A string or buffer can be sent again after a re-login; a stream cannot. */
  body?: string | Buffer | Readable | null
  requestId: string
  /** A read: after a 401, retried once with a new token (a write never is). */
  read: boolean
  /** The whole call's budget when shorter than platform.timeout (a report waiter's remaining time). */
  timeoutMs?: number
  /** Set by send(): aborts the call at its deadline or at shutdown; anything queued for the call honours it. */
  signal?: AbortSignal
}

export interface PlatformResponse {
  status: number
  headers: IncomingHttpHeaders
  body: Dispatcher.ResponseData['body']
}

export interface PlatformJson {
  status: number
  json: unknown
}

const JSON_HEADERS = { accept: 'application/json', 'content-type': 'application/json' }
// Lookup replies (campaign lists) are small; a larger one is refused rather than buffered.
const MAX_JSON_REPLY_BYTES = 16 * 1024 * 1024

/**
 * The one place that calls the platform (issue #6): the proxy, the report fill, the
 * ownership lookups and the admin probe. It injects the credential's token, does the
 * shared re-login plus one retry for reads on a 401, and maps failures to GW_* errors.
 */
export class PlatformClient {
  readonly #dispatcher: Dispatcher
  readonly #timeoutMs: number
  readonly #defaultBase: string
  // Every call in flight listens on it: no listener limit (Node warns past 10).
  readonly #shutdown = maxListenersOff(new AbortController())

  constructor(opts: { dispatcher: Dispatcher; timeoutMs: number; defaultBaseUrl: string | null }) {
    this.#dispatcher = opts.dispatcher
    this.#timeoutMs = opts.timeoutMs
    this.#defaultBase = opts.defaultBaseUrl ?? ''
  }

  /**
   * One call with the provider's current token. Any status but 401 is the caller's to
   * read (its body must be consumed or destroyed); a 401 after the re-login, or on a
   * write, is GW_PLATFORM_AUTH.
   */
  async send(provider: TokenProvider, platformCall: PlatformCall): Promise<PlatformResponse> {
    const deadline = this.#deadline(platformCall.timeoutMs)
    try {
      const res = await this.#send(provider, { ...platformCall, signal: deadline.signal })
      // The deadline stays armed until the body is read whole (or dropped): a platform
      // trickling its body is cut off at the deadline too.
      res.body.once('close', deadline.done)
      return res
    } catch (err) {
      deadline.done()
      throw err
    }
  }

  /** Aborts every call still at the platform (the end of the shutdown grace). */
  abortAll(): void {
    this.#shutdown.abort(new ShuttingDownError())
  }

  // One deadline per caller (issue #9): queue wait, connect, headers, a re-login and the
  // complete body are all bounded by one timer, not each by its own.
  #deadline(timeoutMs = this.#timeoutMs): { signal: AbortSignal; done: () => void } {
    const controller = new AbortController()
    const shutdown = this.#shutdown.signal
    const onShutdown = () => controller.abort(shutdown.reason)
    const done = () => {
      clearTimeout(timer)
      shutdown.removeEventListener('abort', onShutdown)
    }
    // Also ends a call whose body nobody reads or drops (its 'close' never comes).
    const timer = setTimeout(() => {
      controller.abort(new UpstreamTimeoutError())
      done()
    }, Math.min(timeoutMs, this.#timeoutMs))
    timer.unref()
    if (shutdown.aborted) onShutdown()
    else shutdown.addEventListener('abort', onShutdown, { once: true })
    return { signal: controller.signal, done }
  }

  async #send(provider: TokenProvider, call: PlatformCall): Promise<PlatformResponse> {
    const first = provider.usable() ? provider.current() : null
    if (!first) throw new PlatformAuthError(`credential ${provider.name} has no usable token`)
    const base = provider.credential.baseUrl ?? this.#defaultBase
    const res = await this.#once(base, call, first.token)
    if (res.status !== 401) return res
    res.body.resume()
    const renewed = await abortable(provider.recover(first.token), call.signal)
    const replayable = call.body === undefined || call.body === null || typeof call.body === 'string' || Buffer.isBuffer(call.body)
    if (!renewed) throw new PlatformAuthError('no new token could be had')
    if (!call.read || !replayable) throw new PlatformAuthError('the platform refused the token (a write is not retried)')
    const again = await this.#once(base, call, renewed.token)
    if (again.status !== 401) return again
    again.body.resume()
    void provider.recover(renewed.token)
    throw new PlatformAuthError('the platform refused a freshly obtained token')
  }

  /** A read whose JSON answer the gateway itself needs (ownership lookups). */
  async json(provider: TokenProvider, call: Omit<PlatformCall, 'read' | 'headers'>): Promise<PlatformJson> {
    const res = await this.send(provider, { ...call, read: true, headers: JSON_HEADERS })
    if (res.status >= 500 || res.status === 429) {
      res.body.resume()
      throw new UpstreamError(`status ${res.status}`)
    }
    const text = await readText(res.body, MAX_JSON_REPLY_BYTES)
    let json: unknown = null
    try {
      json = text ? JSON.parse(text) : null
    } catch {
      // a non-JSON reply (an HTML error page, say): the caller sees the status only
    }
    return { status: res.status, json }
  }

  /** The status the platform gives a token not yet in use (PUT /admin/token's check). */
  async probe(baseUrl: string, token: string, call: Omit<PlatformCall, 'read'>): Promise<number> {
    const deadline = this.#deadline()
    try {
      const res = await this.#once(baseUrl, { ...call, read: true, signal: deadline.signal }, token)
      res.body.resume()
      return res.status
    } finally {
      deadline.done()
    }
  }

  async #once(baseUrl: string, call: PlatformCall, token: string): Promise<PlatformResponse> {
    try {
      const res = await request(`${baseUrl}${call.url}`, {
        method: call.method as Dispatcher.HttpMethod,
        dispatcher: this.#dispatcher,
        headers: { ...call.headers, authorization: `Bearer ${token}`, 'x-request-id': call.requestId },
        body: call.body ?? undefined,
        signal: call.signal,
      })
      return { status: res.statusCode, headers: res.headers as IncomingHttpHeaders, body: res.body }
    } catch (err) {
      throw upstreamError(err)
    }
  }
}

function maxListenersOff(controller: AbortController): AbortController {
  setMaxListeners(0, controller.signal)
  return controller
}

/** `work`, or the signal's reason once it aborts first. */
function abortable<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work
  if (signal.aborted) return Promise.reject(signal.reason as Error)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error)
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

async function readText(body: AsyncIterable<Buffer> & { destroy(): void }, limit: number): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  try {
    for await (const chunk of body) {
      size += chunk.length
      if (size > limit) throw new UpstreamError(`a reply larger than ${limit} bytes`)
      chunks.push(chunk)
    }
  } catch (err) {
    body.destroy()
    throw upstreamError(err)
  }
  return Buffer.concat(chunks).toString('utf8')
}

export function upstreamError(err: unknown): FastifyError {
  if ((err as { code?: string }).code?.startsWith('GW_')) return err as FastifyError
  const code = (err as { code?: string }).code ?? ''
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || (err as Error).name === 'TimeoutError') {
    return new UpstreamTimeoutError({ cause: err })
  }
  return new UpstreamError(code || 'connection error', { cause: err })
}
