import type { ServerResponse } from 'node:http'
import { pipeline, Readable } from 'node:stream'
import { createGunzip } from 'node:zlib'
import type { FastifyReply } from 'fastify'
import type { CacheEntry } from '../../cache/cache-entry.js'
import { STATUS_200, renderHeaderLines, takesRenderedHead, writeRenderedHead } from '../../perf/rendered-head.js'
import { answerFieldLines, pushAnswerFields, setReportFacts, type AnswerFields } from '../answer-fields.js'
import type { ReportFacts } from './report-facts.js'
import type { CacheResult, Forward } from '../../reports/report-cache.js'
import { fillMsOf } from '../../reports/fill-time.js'
import { CACHE_STATUS, entryCacheStatus, passedCacheStatus } from './cache-status.js'
import { isRedirect, sendNoContent, withoutContent } from '../../platform/client/redirect-content.js'
import { holdsFigures } from '../../reports/finality.js'
import { acceptsCoding } from '../caller-coding.js'

/**
 * What an entry's answer varies on: its encoding, the two headers that carry a key, and
 * `prefer`. A browser keeps a `private` answer and serves it again to a request whose URL
 * and named headers match: without the key's headers here, it would serve one team's copy
 * to a request with another team's key, without asking the gateway. A read that prefers
 * `respond-async` may be answered 202 where one without is answered 200 (RFC 7240, 2).
 */
export const VARY = 'accept-encoding, authorization, prefer, x-api-key'

/**
 * An answer that no cache of the gateway keeps (BYPASS: the platform's 4xx or redirect, a
 * report too large or not to be stored; a job's status, which changes as it runs): one
 * team's, which no cache downstream may keep either, a shared one for another key least of all.
 */
export const NOT_STORED = 'private, no-store'

type Headers = Record<string, string | string[] | undefined>

// Report response headers (contract, "Report requests"), written in one place for both
// entrances: the Fastify route and the fast path of hits.

/** The read is a cache warm-up (`x-cache-warm: 1`, as `npm run warm` sends): its platform call waits behind every other. */
export function isWarmUp(headers: Headers): boolean {
  return headers['x-cache-warm'] === '1'
}

// Callers send the same accept-encoding on every request: the last answer is kept.
let lastAccept: string | undefined
let lastGzip = false

export function acceptsGzip(header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false
  if (header === lastAccept) return lastGzip
  lastGzip = acceptsCoding(header, 'gzip')
  lastAccept = header
  return lastGzip
}

/**
 * A cached entry's answer to one caller: 200 with its body, or 304 (no body) to a
 * matching If-None-Match. The headers are a flat list of names and values, the form
 * Node's writeHead reads with one indexed loop: an object would be walked key by key
 * through an inline cache that sees every shape the answers take.
 */
interface EntryAnswer {
  code: 200 | 304
  headers: string[]
  body: Buffer | null
}

// What every answer of an entry shares, worked out at its first answer rather than on
// every hit; entries are never changed, so it stays true for the entry's life.
interface EntryFields {
  etag: string
  etagGzip: string
  cacheControl: string
  /** The entry's whole freshness in seconds: `max-age`. */
  maxAge: number
  /** The `age` and `cache-status` lines of a hit in the second its age last was (`hitAge`): hits within a second share them. */
  hitAge: number
  hitLines: string
  /** The rendered heads of its 200 answers (entryHead) by status and encoding, made at their first use. */
  heads: (string | null | undefined)[]
}

type EntryStatus = 'HIT' | 'MISS' | 'STALE' | 'REFRESH'
const STATUS_SLOT: Record<EntryStatus, number> = { HIT: 0, MISS: 2, STALE: 4, REFRESH: 6 }
const entryFields = new WeakMap<CacheEntry, EntryFields>()

function fieldsOf(entry: CacheEntry): EntryFields {
  let fields = entryFields.get(entry)
  if (fields === undefined) {
    const maxAge = Math.max(0, Math.floor((entry.freshUntil - entry.fetchedAt) / 1000))
    fields = {
      etag: `"${entry.etag}"`,
      etagGzip: `"${entry.etag}-gzip"`,
      cacheControl: `private, max-age=${maxAge}`,
      maxAge,
      hitAge: -1,
      hitLines: '',
      heads: [],
    }
    entryFields.set(entry, fields)
  }
  return fields
}

/**
 * The headers and body of a cached entry for one caller. `max-age` is the entry's whole
 * freshness and `age` how much of it has passed (RFC 9111), so any cache downstream
 * keeps it fresh exactly as long as the gateway does; `cache-status` says the same, and
 * why the read went to the platform (`forward`, absent for a hit). Each representation has its own
 * strong ETag; If-None-Match is compared weakly (RFC 9110), so either answers 304.
 */
function entryResponse(
  entry: CacheEntry,
  status: EntryStatus,
  forward: Forward | undefined,
  now: number,
  gzip: boolean,
  ifNoneMatch: string | string[] | undefined,
  cacheControl: string | null,
): EntryAnswer {
  const fields = fieldsOf(entry)
  const age = ageOf(entry, fields, status, now)
  const headers = ['x-cache', status, CACHE_STATUS, entryCacheStatus(status, fields.maxAge - age, forward), 'etag', gzip ? fields.etagGzip : fields.etag, 'vary', VARY, 'cache-control', cacheControl ?? fields.cacheControl]
  if (carriesAge(status)) headers.push('age', String(age))
  if (ifNoneMatch !== undefined && matches(ifNoneMatch, entry.etag)) return { code: 304, headers, body: null }
  headers.push('content-type', entry.contentType)
  if (entry.contentLanguage !== undefined) headers.push('content-language', entry.contentLanguage)
  if (gzip) {
    headers.push('content-encoding', 'gzip')
    return { code: 200, headers, body: entry.gzip }
  }
  return { code: 200, headers, body: entry.identity ?? withoutPlainBody() }
}

// Every entry the cache hands out holds its plain body, decompressed once within
// cache.maxEntryBytes (cache/tiered-store.ts): none is decompressed here, unbounded.
function withoutPlainBody(): never {
  throw new Error('a cache entry reached its answer without its plain body')
}

/** Whether an answer with `status` carries `age` (RFC 9111): it comes from the stored copy. */
function carriesAge(status: EntryStatus): boolean {
  return status === 'HIT' || status === 'STALE'
}

/**
 * The `age` of an entry's answer at `now`: whole seconds since it was fetched; a STALE
 * copy's at least max-age + 1, so that its `ttl` is negative and a cache downstream takes
 * it as stale (an age overstated by a second at most, as RFC 9111 prefers to understating it).
 */
function ageOf(entry: CacheEntry, fields: EntryFields, status: EntryStatus, now: number): number {
  const age = Math.max(0, Math.floor((now - entry.fetchedAt) / 1000))
  return status === 'STALE' ? Math.max(age, fields.maxAge + 1) : age
}

/**
 * The lines of one answer of an entry after its rendered head: `age` (HIT, STALE) and
 * `cache-status`. A hit's are made once a second per entry, not once per hit.
 */
function answerLines(entry: CacheEntry, fields: EntryFields, status: EntryStatus, forward: Forward | undefined, now: number): string {
  const age = ageOf(entry, fields, status, now)
  if (status === 'HIT' && forward === undefined) {
    if (fields.hitAge !== age) {
      fields.hitLines = `age: ${age}\r\n${CACHE_STATUS}: ${entryCacheStatus(status, fields.maxAge - age, undefined)}\r\n`
      fields.hitAge = age
    }
    return fields.hitLines
  }
  return `${carriesAge(status) ? `age: ${age}\r\n` : ''}${CACHE_STATUS}: ${entryCacheStatus(status, fields.maxAge - age, forward)}\r\n`
}

/**
 * The status line and the headers every 200 answer of `entry` with `status` shares, in
 * one text rendered and checked once per entry (perf/rendered-head.ts), content-length
 * included: a hit adds its age, request id and rate-limit lines. Null when the entry
 * keeps no plain body to send or a value of it is no
 * valid header value: that answer goes through writeHead, which refuses it as it must.
 */
export function entryHead(entry: CacheEntry, status: EntryStatus, gzip: boolean): string | null {
  return headOf(entry, fieldsOf(entry), status, gzip)
}

function headOf(entry: CacheEntry, fields: EntryFields, status: EntryStatus, gzip: boolean): string | null {
  const variant = STATUS_SLOT[status] + (gzip ? 1 : 0)
  let head = fields.heads[variant]
  if (head === undefined) {
    const body = gzip ? entry.gzip : entry.identity
    const lines =
      body &&
      renderHeaderLines([
        'x-cache', status,
        'etag', gzip ? fields.etagGzip : fields.etag,
        'vary', VARY,
        'cache-control', fields.cacheControl,
        'content-type', entry.contentType,
        ...(entry.contentLanguage === undefined ? [] : ['content-language', entry.contentLanguage]),
        ...(gzip ? ['content-encoding', 'gzip'] : []),
        'content-length', String(body.length),
      ])
    head = lines ? [STATUS_200, lines].join('') : null
    fields.heads[variant] = head
  }
  return head
}

/** A plain 200 of an entry to one caller: its status line and header lines, and its body. */
export interface PlainAnswer {
  lines: string
  body: Buffer
}

/**
 * The plain 200 of `entry` with `status` to a caller that sent `requestHeaders`, with its
 * answer fields (`own`): the entry's rendered head and this answer's lines (`age` for HIT
 * and STALE, `cache-status`, the fields). Null where the answer is no plain 200 (an
 * If-None-Match to compare) or the entry's values are no header values: writeHead writes
 * it, and refuses what it must.
 */
export function plainAnswer(entry: CacheEntry, status: EntryStatus, forward: Forward | undefined, now: number, requestHeaders: Headers, own: AnswerFields): PlainAnswer | null {
  if (requestHeaders['if-none-match'] !== undefined) return null
  const gzip = acceptsGzip(requestHeaders['accept-encoding'])
  // One lookup of the entry's fields serves its head and this answer's lines.
  const fields = fieldsOf(entry)
  const head = headOf(entry, fields, status, gzip)
  if (head === null) return null
  return { lines: `${head}${answerLines(entry, fields, status, forward, now)}${answerFieldLines(own)}`, body: (gzip ? entry.gzip : entry.identity) as Buffer }
}

/**
 * Writes the answer of `entry` with `status` to `res`, for a caller that sent
 * `requestHeaders`, with its answer fields (`own`); returns the status code written (200,
 * or 304 to a matching If-None-Match). The one writer of an entry's answer on a
 * ServerResponse, for both entrances there: a plain 200 from its rendered text
 * (plainAnswer) where `res` takes one, any other through writeHead, which checks every
 * value. (A plain GET's hit read on its connection is written there from plainAnswer.)
 * A copy gone at `until` (a job's result at its expiresAt) answers with a `max-age` of at
 * most the whole seconds left to it: no cache downstream keeps it past that.
 */
export function writeEntry(res: ServerResponse, entry: CacheEntry, status: EntryStatus, forward: Forward | undefined, now: number, requestHeaders: Headers, own: AnswerFields, until?: number): 200 | 304 {
  const capped = until === undefined ? null : cappedCacheControl(fieldsOf(entry), now, until)
  const plain = capped === null && takesRenderedHead(res) ? plainAnswer(entry, status, forward, now, requestHeaders, own) : null
  if (plain !== null) {
    writeRenderedHead(res, plain.lines, plain.body)
    return 200
  }
  const answer = entryResponse(entry, status, forward, now, acceptsGzip(requestHeaders['accept-encoding']), requestHeaders['if-none-match'], capped)
  const out = answer.headers
  if (answer.body) out.push('content-length', String(answer.body.length))
  pushAnswerFields(out, own)
  res.writeHead(answer.code, out)
  res.end(answer.body)
  return answer.code
}

/**
 * The `cache-control` of an entry's answer whose copy is gone at `until`, when the whole
 * seconds left to it (at least 0) are fewer than the entry's freshness; null when they are
 * not, and the entry's own holds.
 */
function cappedCacheControl(fields: EntryFields, now: number, until: number): string | null {
  const left = Math.max(0, Math.floor((until - now) / 1000))
  return left < fields.maxAge ? `private, max-age=${left}` : null
}

/** Whether an If-None-Match list names the entry (either representation), or is `*`. */
function matches(header: string | string[], tag: string): boolean {
  const text = typeof header === 'string' ? header : header.join(',')
  if (!text.includes(tag) && text.trim() !== '*') return false
  for (const part of text.split(',')) {
    const t = part.trim()
    if (t === '*') return true
    const opaque = t.startsWith('W/') ? t.slice(2) : t
    if (opaque === `"${tag}"` || opaque === `"${tag}-gzip"`) return true
  }
  return false
}


/**
 * Writes a report read's `result` through the route: an entry's answer by writeEntry (with
 * `until`, the instant its copy is gone: a job's result's expiresAt), an answer passed on
 * uncached, or a stream.
 */
export function sendReport(reply: FastifyReply, result: CacheResult & { until?: number }, requestHeaders: Headers, now: number, own: () => AnswerFields, facts: (entry: CacheEntry | null, fillMs: number) => ReportFacts): FastifyReply {
  switch (result.kind) {
    case 'entry':
      reply.hijack()
      reply.header('x-cache', result.status)
      writeEntry(reply.raw, result.entry, result.status, result.forward, now, requestHeaders, { ...own(), report: facts(result.entry, fillMsOf(result)) }, result.until)
      return reply
    case 'pass': {
      // A redirect's page names the platform's address: the caller gets its location alone
      // (a job's kept one too). What its call cost, every answer passed on says; a finality,
      // only one that holds figures (not a redirect, a refusal or a failure).
      const redirect = isRedirect(result.status)
      setReportFacts(reply, facts(null, fillMsOf(result)), holdsFigures(result.status))
      reply.code(result.status).headers(redirect ? withoutContent(result.headers) : result.headers).header('x-cache', 'BYPASS').header(CACHE_STATUS, passedCacheStatus(result.forward, result.status)).header('cache-control', NOT_STORED).header('vary', VARY)
      if (redirect) return sendNoContent(reply)
      // A 204 has no content (RFC 9110, 15.3.5) and no content-length (8.6): sent as an empty
      // stream, whose type and length Fastify leaves unsaid, so that its HEAD (Fastify's, which
      // says `content-length: 0` of a payload of none) is its GET. A 205 says `content-length: 0` (15.3.6).
      return result.status === 204 ? reply.removeHeader('content-type').send(Readable.from([])) : reply.send(result.body)
    }
    case 'stream': {
      setReportFacts(reply, facts(null, fillMsOf(result)))
      const gzip = acceptsGzip(requestHeaders['accept-encoding'])
      reply.code(200).header('content-type', result.headers['content-type'] ?? 'application/json').header('x-cache', 'BYPASS').header(CACHE_STATUS, passedCacheStatus(result.forward, 200)).header('cache-control', NOT_STORED).header('vary', VARY)
      // pipeline, not pipe: a cut-off caller or platform ends both streams.
      if (result.gzipped && !gzip) return reply.send(pipeline(result.stream, createGunzip(), () => undefined))
      if (result.gzipped) reply.header('content-encoding', 'gzip')
      // Held whole, as the platform sent it: its length is known (a gunzipped one's is not).
      return reply.header('content-length', result.length).send(result.stream)
    }
  }
}
