import type { IncomingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import { request, type Dispatcher } from 'undici'
import type { FastifyError } from 'fastify'
import { PlatformAuthError, UpstreamError, UpstreamTimeoutError } from '../errors.js'
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
  async send(provider: TokenProvider, call: PlatformCall): Promise<PlatformResponse> {
    const first = provider.usable() ? provider.current() : null
    if (!first) throw new PlatformAuthError(`credential ${provider.name} has no usable token`)
    const base = provider.credential.baseUrl ?? this.#defaultBase
    const res = await this.#once(base, call, first.token)
    if (res.status !== 401) return res
    res.body.resume()
    const renewed = await provider.recover(first.token)
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
    const res = await this.#once(baseUrl, { ...call, read: true }, token)
    res.body.resume()
    return res.status
  }

  async #once(baseUrl: string, call: PlatformCall, token: string): Promise<PlatformResponse> {
    try {
      const res = await request(`${baseUrl}${call.url}`, {
        method: call.method as Dispatcher.HttpMethod,
        dispatcher: this.#dispatcher,
        headers: { ...call.headers, authorization: `Bearer ${token}`, 'x-request-id': call.requestId },
        body: call.body ?? undefined,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
      })
      return { status: res.statusCode, headers: res.headers as IncomingHttpHeaders, body: res.body }
    } catch (err) {
      throw upstreamError(err)
    }
  }
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
