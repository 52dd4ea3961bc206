import { promisify } from 'node:util'
import { gunzipSync, gzip } from 'node:zlib'
import { request, type Dispatcher } from 'undici'
import type { FastifyError } from 'fastify'
import type { TokenProvider } from '../platform/token-provider.js'
import { PlatformAuthError, UpstreamError } from '../errors.js'
import { upstreamError } from '../platform/platform-client.js'
import type { CacheEntry } from '../cache/cache-entry.js'
import { cacheControlAllowsStore, lifetimes, type TtlPolicy } from './ttl-policy.js'
import type { CanonicalReport } from './report-query.js'

/** What one platform call for a report gave. */
export type FetchResult =
  /** A 200 to cache. */
  | { kind: 'entry'; entry: CacheEntry }
  /** An answer to pass on as it is and not to cache (the platform's 4xx, a no-store 200). */
  | { kind: 'pass'; status: number; headers: Record<string, string>; body: Buffer }
  /** A 200 larger than the entry limit: streams through; only the caller that made the call can read it. */
  | { kind: 'oversize'; status: number; headers: Record<string, string>; head: Buffer[]; rest: AsyncIterable<Buffer> }
  /** The platform failed (5xx, 429, timeout, connection error, refused token): stale-if-error applies. */
  | { kind: 'failed'; error: FastifyError; response?: { status: number; headers: Record<string, string>; body: Buffer } }

export interface FetcherDeps {
  dispatcher: Dispatcher
  timeoutMs: number
  maxEntryBytes: number
  ttl: TtlPolicy
  now?: () => number
}

// Compression runs on libuv's thread pool: a fill never blocks the hit path's event loop.
const gzipAsync = promisify(gzip)

// Headers of a passed-through platform answer that a caller may see.
const PASSED_HEADERS = ['content-type', 'retry-after', 'content-language']

export async function fetchReport(
  baseUrl: string,
  report: CanonicalReport,
  provider: TokenProvider,
  requestId: string,
  deps: FetcherDeps,
): Promise<FetchResult> {
  const first = provider.current()
  if (!first || !provider.usable()) return { kind: 'failed', error: new PlatformAuthError(`credential ${provider.name} has no usable token`) }
  let result = await callOnce(baseUrl, report, first.token, requestId, deps)
  if (result === 'unauthorized') {
    const renewed = await provider.recover(first.token)
    result = renewed ? await callOnce(baseUrl, report, renewed.token, requestId, deps) : 'unauthorized'
    if (result === 'unauthorized') {
      if (renewed) void provider.recover(renewed.token)
      return { kind: 'failed', error: new PlatformAuthError('the platform answered 401') }
    }
  }
  return result
}

async function callOnce(
  baseUrl: string,
  report: CanonicalReport,
  token: string,
  requestId: string,
  deps: FetcherDeps,
): Promise<FetchResult | 'unauthorized'> {
  const now = deps.now ?? Date.now
  const url = `${baseUrl}${report.path}${report.query ? `?${report.query}` : ''}`
  let res: Dispatcher.ResponseData
  try {
    res = await request(url, {
      method: report.method,
      dispatcher: deps.dispatcher,
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json',
        'accept-encoding': 'gzip',
        'x-request-id': requestId,
        ...(report.body !== null ? { 'content-type': 'application/json' } : {}),
      },
      body: report.body ?? undefined,
      headersTimeout: deps.timeoutMs,
      bodyTimeout: deps.timeoutMs,
    })
  } catch (err) {
    return { kind: 'failed', error: upstreamError(err) }
  }
  if (res.statusCode === 401) {
    res.body.resume()
    return 'unauthorized'
  }
  const headers = pickHeaders(res.headers)
  const gzipped = res.headers['content-encoding'] === 'gzip'
  if (res.statusCode !== 200) {
    let body: Buffer
    try {
      body = await readAll(res.body, deps.maxEntryBytes)
    } catch (err) {
      return { kind: 'failed', error: upstreamError(err) }
    }
    if (gzipped) body = safeGunzip(body, deps.maxEntryBytes) ?? Buffer.alloc(0)
    const response = { status: res.statusCode, headers, body }
    if (res.statusCode >= 500 || res.statusCode === 429) {
      return { kind: 'failed', error: new UpstreamError(`status ${res.statusCode}`), response }
    }
    return { kind: 'pass', ...response }
  }

  const head: Buffer[] = []
  let size = 0
  // The iterator is driven by hand: leaving a for-await loop early destroys the body,
  // and an oversize answer still has its rest to stream.
  const chunks = (res.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]()
  try {
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
      head.push(next.value)
      size += next.value.length
      if (size > deps.maxEntryBytes) {
        // Too big to cache: the caller gets what was read and the rest as it streams.
        if (gzipped) headers['content-encoding'] = 'gzip'
        return { kind: 'oversize', status: 200, headers, head, rest: { [Symbol.asyncIterator]: () => chunks } }
      }
    }
  } catch (err) {
    return { kind: 'failed', error: upstreamError(err) }
  }
  const raw = Buffer.concat(head, size)
  const identity = gzipped ? safeGunzip(raw, deps.maxEntryBytes) : raw
  if (identity === null) return { kind: 'failed', error: new UpstreamError('unreadable gzip body') }
  if (!cacheControlAllowsStore(res.headers['cache-control'] as string | undefined)) {
    return { kind: 'pass', status: 200, headers, body: identity }
  }
  const fetchedAt = now()
  return {
    kind: 'entry',
    entry: {
      contentType: headers['content-type'] ?? 'application/json',
      gzip: gzipped ? raw : await gzipAsync(identity),
      identity,
      fetchedAt,
      ...lifetimes(report.dateTo, fetchedAt, deps.ttl),
      advertiserIds: report.advertiserIds,
    },
  }
}

function pickHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of PASSED_HEADERS) {
    const v = raw[name]
    if (typeof v === 'string') out[name] = v
  }
  return out
}

async function readAll(body: AsyncIterable<Buffer>, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.length
    if (size <= limit) chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

function safeGunzip(buf: Buffer, limit: number): Buffer | null {
  try {
    return gunzipSync(buf, { maxOutputLength: limit })
  } catch {
    return null
  }
}
