import { promisify } from 'node:util'
import type { Trace } from '../observe/tracing.js'
import { gunzipSync, gzip, gzipSync } from 'node:zlib'
import type { TokenProvider } from '../platform/tokens/token-provider.js'
import { UpstreamError, UpstreamTimeoutError, type GatewayError } from '../errors.js'
import { transient } from '../platform/client/transient.js'
import { upstreamError, type PlatformClient, type PlatformResponse, type SentResponse } from '../platform/client/platform-client.js'
import { onGateway } from '../platform/client/redirect-location.js'
import { codingOf, named } from '../platform/client/token-echo.js'
import { withoutDebugFields } from '../platform/client/debug-fields.js'
import { etagOf, type CacheEntry } from '../cache/cache-entry.js'
import { contentLanguage } from '../cache/content-language.js'
import { withRetryAfter } from '../platform/pauses/retry-after.js'
import type { HeldAnswer, PlatformAnswers } from '../platform/client/answer-buffer.js'
import type { Logger } from 'pino'
import type { QueueTeam } from '../platform/client/caller-group.js'
import { cacheControlAllowsStore, lifetimes, type TtlPolicy } from './ttl-policy.js'
import type { CanonicalReport } from './report-query.js'
import { reportBodyKind, type BodyKind } from './report-body.js'
import { varyAllowsSharing } from './answer-vary.js'
import { systemClock } from '../clock.js'
import type { CallTurns } from './call-turns.js'

/** What one platform call for a report gave. */
export type FetchResult =
  /**
   * A 200 to cache, for `account`: the account of the token the call was sent with
   * (TokenProvider.accountOf), which a token put in while the call waited makes another
   * than the one its key was made for. Absent: a copy another replica filled.
   */
  | { kind: 'entry'; entry: CacheEntry; account?: string }
  /** An answer to pass on as it is and not to cache (the platform's 4xx, a no-store 200, a 200 whose `vary` no later fill matches), to `account` as `entry`'s is. */
  | { kind: 'pass'; status: number; headers: Record<string, string>; body: Buffer; account?: string }
  /** A 200 larger than the entry limit, held in the answers' budget: sent on uncached; only the caller that made the call reads it. */
  | { kind: 'oversize'; status: number; headers: Record<string, string>; answer: HeldAnswer }
  /**
   * The platform failed (5xx, 429, timeout, connection error, refused token, a 200 that
   * is no JSON report: `unusable` says what it was): stale-if-error applies.
   */
  | { kind: 'failed'; error: GatewayError; response?: { status: number; headers: Record<string, string>; body: Buffer }; unusable?: { bodyKind: BodyKind; contentType: string | null; bytes: number } }

export interface FetcherDeps {
  /** The call's budget, from the time it is asked (its wait for a turn counted), when shorter than platform.timeout. */
  timeoutMs?: number
  maxEntryBytes: number
  /** What a 200 must hold to be a report (cache.reportFields, report-body.ts). */
  reportFields: readonly string[]
  /** Where the answer is held on its way to the caller, and whose log names a caller cut off. */
  answers: PlatformAnswers
  log: Pick<Logger, 'warn'>
  ttl: TtlPolicy
  now?: () => number
  /** Where the call's start and its completion each wait for a turn on the event loop (call-turns.ts); none: at once. */
  turns?: CallTurns
}

// A large body is compressed on libuv's thread pool, so that a fill never blocks the hit
// path's event loop for long. A small one is compressed in place: 4 KB takes about 40 µs,
// while the hop to the pool and back delays every caller waiting for the fill by
// milliseconds when the loop is busy, as it is when a stampede arrives.
const gzipAsync = promisify(gzip)
export const INLINE_GZIP_BYTES = 16 * 1024

/** `body` gzip-compressed: in place when small, else on the thread pool. */
export function compress(body: Buffer): Buffer | Promise<Buffer> {
  return body.length <= INLINE_GZIP_BYTES ? gzipSync(body) : gzipAsync(body)
}

// What a 200 that is no report carries, in the words of its error's message.
const BODY_WORDS: Record<Exclude<BodyKind, 'json'>, string> = {
  html: 'html',
  empty: 'empty',
  'truncated-json': 'truncated-json',
  'mislabelled-json': 'mislabelled-json',
  'no-report': 'JSON that holds no report (cache.reportFields)',
  other: 'something else',
}

// Headers of a passed-through platform answer that a caller may see.
const PASSED_HEADERS = ['content-type', 'retry-after', 'content-language']

/** `origin.workClass`: the report's work class (work-class.ts), built once by the fill that makes the call. */
export async function fetchReport(
  client: PlatformClient,
  provider: TokenProvider,
  report: CanonicalReport,
  origin: { requestId: string; team: string; workClass: string; hangUp?: AbortSignal; admitted?: (seatedOn?: string) => void; queue?: QueueTeam; urgency?: () => number; trace?: Trace; spent?: { ms: number } },
  deps: FetcherDeps,
): Promise<FetchResult> {
  const now = deps.now ?? systemClock.now
  const asked = now()
  // The call's start is the gateway's own CPU too, in its team's turn; nothing is spent on
  // a call whose callers all hung up meanwhile (as on one dropped in the governor's queue).
  if (deps.turns !== undefined && !(await deps.turns.turn(origin.team, origin.hangUp))) return { kind: 'failed', error: upstreamError(origin.hangUp?.reason) }
  // The wait for the turn is within the call's budget.
  const timeoutMs = deps.timeoutMs === undefined ? undefined : deps.timeoutMs - (now() - asked)
  if (timeoutMs !== undefined && timeoutMs <= 0) return { kind: 'failed', error: new UpstreamTimeoutError() }
  let res: SentResponse
  try {
    // The gateway's own headers, the same on every fill of the key: none of the caller's
    // (its language, its agent) shapes a copy that every team of the credential reads.
    res = await client.send(provider, {
      method: report.method,
      url: `${report.path}${report.query ? `?${report.query}` : ''}`,
      headers: {
        accept: 'application/json',
        'accept-encoding': 'gzip',
        ...(report.body !== null ? { 'content-type': 'application/json' } : {}),
      },
      body: report.body,
      requestId: origin.requestId,
      team: origin.team,
      workClass: origin.workClass,
      ...(origin.hangUp ? { hangUp: origin.hangUp } : {}),
      ...(origin.admitted ? { admitted: origin.admitted } : {}),
      ...(origin.queue ? { queue: origin.queue } : {}),
      read: true,
      ...(origin.urgency ? { urgency: origin.urgency } : {}),
      ...(origin.trace ? { trace: origin.trace } : {}),
      ...(origin.spent ? { spent: origin.spent } : {}),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    })
  } catch (err) {
    return { kind: 'failed', error: upstreamError(err) }
  }
  const headers = pickHeaders(res.headers)
  // A redirect is passed on with where it leads, on the gateway when it leads to the platform.
  const location = res.headers.location
  if (res.status >= 300 && res.status < 400 && typeof location === 'string') headers.location = onGateway(location, client.baseOf(provider))
  const coding = codingOf(res.headers)
  const gzipped = coding === 'gzip'
  // Received whole at the platform's pace, within the answers' budget, whatever its size.
  let held: HeldAnswer
  try {
    held = await deps.answers.receive(res.body, contentLength(res.headers), { credential: provider.name, team: origin.team, path: report.path, log: deps.log })
  } catch (err) {
    return { kind: 'failed', error: upstreamError(err) }
  }
  // Asked in gzip or none: a body in another coding (the token scan read it) is one the
  // gateway neither keeps nor decodes for a caller, who would get bytes it cannot read.
  if (coding !== '' && !gzipped) {
    held.release()
    return { kind: 'failed', error: new UpstreamError(`the platform answered in a content coding the gateway did not ask for (${named(coding)}): not passed on`) }
  }
  // The answer is in and its seat ended: what is left is the gateway's own CPU, in its team's turn.
  if (deps.turns !== undefined) await deps.turns.turn(origin.team)
  // A 200 in gzip within the entry limit, decoded once (within it): its report, or PAST.
  const decoded = res.status === 200 && gzipped && held.length <= deps.maxEntryBytes ? gunzipWithin(held.peek(), deps.maxEntryBytes) : undefined
  if (decoded === PAST || (res.status === 200 && held.length > deps.maxEntryBytes)) {
    // Too big to cache, as sent or decoded: sent on to the caller from memory, its bytes freed as it reads.
    if (gzipped) headers['content-encoding'] = 'gzip'
    return { kind: 'oversize', status: 200, headers, answer: held }
  }
  try {
    const result = await fromBody(res.status, res.headers, headers, held.bytes(), decoded ?? null, report, { ...deps, now }, asked)
    return result.kind === 'entry' || result.kind === 'pass' ? { ...result, account: res.account } : result
  } finally {
    // The body is copied into what the read returns (an entry: in the L1 cache's bound from then on).
    held.release()
  }
}

/** What a received platform answer within cache.maxEntryBytes gives; `decoded`: a 200's gzip decoded (null: it does not decode). */
async function fromBody(
  status: number,
  raw: PlatformResponse['headers'],
  headers: Record<string, string>,
  received: Buffer,
  decoded: Buffer | null,
  report: CanonicalReport,
  deps: FetcherDeps & { now: () => number },
  asked: number,
): Promise<FetchResult> {
  const gzipped = codingOf(raw) === 'gzip'
  if (status !== 200) {
    const plain = gzipped ? (safeGunzip(received, deps.maxEntryBytes) ?? Buffer.alloc(0)) : received.length > deps.maxEntryBytes ? Buffer.from(received.subarray(0, deps.maxEntryBytes)) : received
    // A refusal passed on: without Laravel's debug fields (debug-fields.ts).
    const body = status < 500 ? (withoutDebugFields(plain) ?? plain) : plain
    const response = { status, headers, body }
    if (status >= 500 || status === 429) {
      const error = new UpstreamError(`status ${status}`)
      return { kind: 'failed', error: withRetryAfter(status >= 500 ? transient(error) : error, raw, deps.now()), response }
    }
    return { kind: 'pass', ...response }
  }
  const identity = gzipped ? decoded : received
  if (identity === null) return { kind: 'failed', error: new UpstreamError('unreadable gzip body') }
  // A maintenance page or a cut-off body would be served as HIT to every replica for a day;
  // one its server marks no-store is no report either: a read is not answered 200 with it
  // (nor with Laravel's debug fields), nor a job ended done.
  const bodyKind = reportBodyKind(headers['content-type'], identity, deps.reportFields)
  if (bodyKind !== 'json') {
    const error = new UpstreamError(`the platform answered 200 with ${BODY_WORDS[bodyKind]} rather than a JSON report`)
    return {
      kind: 'failed',
      // A page, an empty or a cut-off body is what stands in front of the platform's app
      // answers while the app is down (its maintenance page, a CDN's or a proxy's error
      // page), and JSON that holds no report is the app's error answered with a 200 (a
      // middleware's, as with a 500): a later try may not meet either. JSON under another
      // content type is the app's own answer, the same on every try.
      error: bodyKind === 'mislabelled-json' ? error : transient(error),
      unusable: { bodyKind, contentType: headers['content-type'] ?? null, bytes: identity.length },
    }
  }
  if (!cacheControlAllowsStore(raw['cache-control'] as string | undefined) || !varyAllowsSharing(raw.vary)) {
    return { kind: 'pass', status: 200, headers, body: identity }
  }
  const fetchedAt = deps.now()
  // The copy says the language its body is in, as the platform's answer did.
  const language = contentLanguage(headers['content-language'])
  return {
    kind: 'entry',
    entry: {
      contentType: headers['content-type'] ?? 'application/json',
      ...(language === undefined ? {} : { contentLanguage: language }),
      gzip: gzipped ? received : await compress(identity),
      identity,
      fetchedAt,
      calledAt: asked,
      ...lifetimes(report.dateTo, fetchedAt, deps.ttl),
      advertiserIds: report.advertiserIds,
      etag: etagOf(identity),
    },
  }
}

function contentLength(headers: PlatformResponse['headers']): string | undefined {
  return typeof headers['content-length'] === 'string' ? headers['content-length'] : undefined
}

function pickHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of PASSED_HEADERS) {
    const v = raw[name]
    if (typeof v === 'string') out[name] = v
  }
  return out
}

function safeGunzip(buf: Buffer, limit: number): Buffer | null {
  try {
    return gunzipSync(buf, { maxOutputLength: limit })
  } catch {
    return null
  }
}

/** A gzip body that decodes to more than its limit. */
const PAST = Symbol('past the limit')

/** `buf` gunzipped within `limit` bytes; PAST: it decodes to more; null: it does not decode. */
function gunzipWithin(buf: Buffer, limit: number): Buffer | typeof PAST | null {
  try {
    return gunzipSync(buf, { maxOutputLength: limit })
  } catch (err) {
    return (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' ? PAST : null
  }
}
