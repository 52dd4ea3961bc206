import { request, type Dispatcher } from 'undici'
import type { FastifyError } from 'fastify'
import { PlatformAuthError, UpstreamError, UpstreamTimeoutError } from '../errors.js'
import type { TokenProvider } from './token-provider.js'

export interface PlatformCall {
  method: 'GET' | 'POST'
  /** Path and query, as the gateway serialized them. */
  url: string
  body?: string
  requestId: string
}

export interface PlatformJson {
  status: number
  json: unknown
}

const JSON_HEADERS = { accept: 'application/json', 'content-type': 'application/json' }
// Lookup replies (campaign lists) are small; a larger one is refused rather than buffered.
const MAX_REPLY_BYTES = 16 * 1024 * 1024

/**
 * Calls the platform for the gateway itself (campaign ownership lookups): the
 * credential's token injected, one shared re-login and one retry on a 401 (these calls
 * are reads), failures mapped to the contract's GW_* errors.
 */
export class PlatformClient {
  readonly #dispatcher: Dispatcher
  readonly #timeoutMs: number

  constructor(opts: { dispatcher: Dispatcher; timeoutMs: number }) {
    this.#dispatcher = opts.dispatcher
    this.#timeoutMs = opts.timeoutMs
  }

  async json(provider: TokenProvider, baseUrl: string, call: PlatformCall): Promise<PlatformJson> {
    const first = provider.usable() ? provider.current() : null
    if (!first) throw new PlatformAuthError(`credential ${provider.name} has no usable token`)
    let reply = await this.#once(baseUrl, call, first.token)
    if (reply.status === 401) {
      const renewed = await provider.recover(first.token)
      if (!renewed) throw new PlatformAuthError('no new token could be had')
      reply = await this.#once(baseUrl, call, renewed.token)
      if (reply.status === 401) {
        void provider.recover(renewed.token)
        throw new PlatformAuthError('the platform refused a freshly obtained token')
      }
    }
    if (reply.status >= 500 || reply.status === 429) throw new UpstreamError(`status ${reply.status}`)
    return reply
  }

  async #once(baseUrl: string, call: PlatformCall, token: string): Promise<PlatformJson> {
    let res: Dispatcher.ResponseData
    try {
      res = await request(`${baseUrl}${call.url}`, {
        method: call.method,
        dispatcher: this.#dispatcher,
        headers: { ...JSON_HEADERS, authorization: `Bearer ${token}`, 'x-request-id': call.requestId },
        body: call.body,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
        signal: AbortSignal.timeout(this.#timeoutMs),
      })
    } catch (err) {
      throw upstreamError(err)
    }
    try {
      const chunks: Buffer[] = []
      let size = 0
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length
        if (size > MAX_REPLY_BYTES) throw new UpstreamError(`a reply larger than ${MAX_REPLY_BYTES} bytes`)
        chunks.push(chunk)
      }
      const text = Buffer.concat(chunks).toString('utf8')
      let json: unknown = null
      try {
        json = text ? JSON.parse(text) : null
      } catch {
        // a non-JSON reply (an HTML error page, say): the caller sees the status only
      }
      return { status: res.statusCode, json }
    } catch (err) {
      res.body.destroy()
      throw upstreamError(err)
    }
  }
}

export function upstreamError(err: unknown): FastifyError {
  if ((err as { code?: string }).code?.startsWith('GW_')) return err as FastifyError
  const code = (err as { code?: string; name?: string }).code ?? ''
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || (err as Error).name === 'TimeoutError') {
    return new UpstreamTimeoutError({ cause: err })
  }
  return new UpstreamError(code || 'connection error', { cause: err })
}
