import type { IncomingHttpHeaders } from 'node:http'
import { pipeline, type Readable, type Transform } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { GatewayContext } from './context.js'
import { UpstreamError } from '../errors.js'
import type { PlatformClient } from '../platform/client/platform-client.js'
import { isRead } from '../access/team-auth.js'
import { hangUpSignal } from '../platform/client/caller-group.js'
import type { Admission } from '../access/admission.js'
import { targetUrl } from '../access/request-target.js'
import { proxiedWorkClass } from '../access/page-class.js'
import { withRetryAfter } from '../platform/pauses/retry-after.js'
import { traceOf } from '../observe/tracing.js'
import { codingOf, decodedSync, decoderOf, forwardedEncodings } from '../platform/client/token-echo.js'
import { REFUSAL_READ_BYTES, withoutDebugFields } from '../platform/client/debug-fields.js'
import { acceptsCoding, decodedHeaders } from './caller-coding.js'
import { headLength } from './head-length.js'
import { connectionOptions } from '../access/connection-options.js'
import { withoutKeys } from '../observe/key-shape.js'
import { linksOnGateway, onGateway, refreshOnGateway } from '../platform/client/redirect-location.js'
import { isRedirect, sendNoContent, withoutContent } from '../platform/client/redirect-content.js'
import { PROVISIONAL_HEADER, SETTLED_HEADER, USAGE_HEADER } from './reads/report-facts.js'
import { carries } from './connection-teams.js'

// What the platform may see of a caller's request headers: an allowlist, so
// that forwarding, method-override, cookie or proxy headers never reach it. The
// authorization and x-request-id headers are the gateway's; content-type is the
// gateway's own for the bodies it re-serializes; accept-encoding offers only the codings
// whose bodies the gateway reads for its token (token-echo.ts).
const FORWARDED_HEADERS = ['accept-language', 'user-agent'] as const

// The gateway asks for JSON, whatever the caller accepts: Laravel answers an error (a failed
// validation, a 401, a 404) with JSON only to a request that expects it, and a failed
// validation otherwise with a 302 to the previous URL, the platform's root without a referer
// (Illuminate\Http\Concerns\InteractsWithContentTypes::expectsJson, whose `wantsJson` reads
// the first type of `Accept`; Foundation\Exceptions\Handler::convertValidationExceptionToResponse).
const ASKED_TYPE = 'application/json'

// Hop-by-hop headers (RFC 9110, 7.6.1) describe the platform's connection to us, not
// ours to the caller; its session cookie is not the caller's either.
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'content-length']

/**
 * Any other /api/v1 call, top to bottom: admit the caller (key, read/write, rate
 * limit), read and check its body, check its scope, forward what was checked through
 * the platform client, send the platform's answer on (its 5xx as our 502) once it has
 * been received whole, within the answers' memory budget.
 */
export function proxyHandler(
  { config, tracing, usage, clock, answers, metrics }: Pick<GatewayContext, 'config' | 'tracing' | 'usage' | 'clock' | 'answers' | 'metrics'>,
  admission: Admission,
  client: PlatformClient,
) {
  const limit = config.bodyLimit
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const trace = tracing === null ? undefined : traceOf(request.raw)
    // A refusal thrown here leaves the step open: the request's span ends it, failed.
    const admitting = trace?.step('admission')
    const caller = admission.admit(request)
    carries(reply.raw, caller.team.name)
    await admission.readBody(request, caller, limit, reply.raw)
    await admission.checkScope(request.method, caller)
    admitting?.end()
    admission.remember(request.method, request.url, caller.target, caller.team)
    caller.advertisers = admission.namedBy(caller.team, request.method, caller, admission.known(request.url))?.accounts ?? null
    const headers: Record<string, string> = { accept: ASKED_TYPE }
    // Those the caller's Connection names are for the hop to the gateway (RFC 9110, 7.6.1).
    const hop = connectionOptions(request.headers)
    for (const name of FORWARDED_HEADERS) {
      const value = request.headers[name]
      if (typeof value !== 'string' || hop.includes(name)) continue
      // A team key in one is the caller's mistake or another team's key: the platform gets
      // neither; a secret of the gateway's in one is refused, as in the query.
      admission.refuseSecretIn(value, name, caller)
      headers[name] = withoutKeys(value)
    }
    const encodings = typeof request.headers['accept-encoding'] === 'string' && !hop.includes('accept-encoding') ? forwardedEncodings(request.headers['accept-encoding']) : undefined
    if (encodings !== undefined) headers['accept-encoding'] = encodings
    let body: string | Readable | null = null
    if (caller.body) {
      headers['content-type'] = caller.body.contentType
      body = caller.body.text
    } else if (caller.stream) {
      for (const name of ['content-type', 'content-length'] as const) {
        const value = request.headers[name]
        if (typeof value === 'string') headers[name] = value
      }
      body = caller.stream
    }
    const started = performance.now()
    const read = isRead(request.method, caller.target.path)
    const spent = { ms: 0 }
    const res = await client.send(caller.provider, {
      method: request.method,
      url: targetUrl(caller.target),
      headers,
      body,
      requestId: request.id,
      read,
      team: caller.team.name,
      // Its route and the page it asks: a page of 500 rows is not a page of one (page-class.ts).
      workClass: proxiedWorkClass(caller.target, caller.body),
      hangUp: hangUpSignal(reply.raw),
      // Its key removed while its body came or it waited for a seat: nothing is sent (401).
      admitted: () => admission.stillAdmitted(caller),
      spent,
      // One platform call for the team, counted once it is sent (a read sent again is still one):
      // a call refused before it (its key removed, its wait ended, no seat) reached no platform.
      sending: () => {
        if (caller.platformCalls > 0) return
        caller.platformCalls = 1
        usage.platformCall(caller.team.name)
      },
      ...(trace ? { trace } : {}),
    })
      .catch((err: unknown) => {
        // Sent and failed: counted beside the report calls, so that an outage only proxied calls meet shows (GatewayPlatformErrors).
        if (caller.platformCalls > 0) metrics.platformCalls.inc({ call: 'proxy', outcome: proxiedFailure(err) })
        throw err
      })
      .finally(() => usage.platformSpent(caller.team.name, spent.ms))
    metrics.platformCalls.inc({ call: 'proxy', outcome: res.status >= 500 ? 'GW_UPSTREAM' : 'pass' })
    caller.upstreamMs = performance.now() - started
    if (!read && res.status < 300) admission.written(caller)
    // Contract, "Errors": only the platform's 4xx bodies pass through; its 5xx is our 502.
    if (res.status >= 500) {
      res.body.resume()
      throw withRetryAfter(new UpstreamError(`status ${res.status}`), res.headers, clock.now())
    }
    // Received whole at the platform's pace, within the answers' budget: the platform's work ends when it has sent it.
    const answer = await answers.receive(res.body, contentLength(res.headers), { credential: caller.provider.name, team: caller.team.name, path: caller.target.path, log: request.log })
    // A caller that left meanwhile has its access line (499) already: its answer goes to no one.
    if (reply.raw.destroyed) {
      answer.release()
      return reply
    }
    // A read's answer goes to a key still running (401 otherwise: the read may be asked
    // again); a write's outcome goes to its caller whatever happened to its key since the
    // write was sent, so that it is never told a write was not made.
    if (read) {
      try {
        admission.stillAdmitted(caller)
      } catch (refused) {
        answer.release()
        throw refused
      }
    }
    const passed = callerHeaders(res.headers, caller.provider.credential.baseUrl ?? config.platform.baseUrl)
    if (isRedirect(res.status)) {
      // Its page names the platform's address: the caller gets its location alone.
      answer.release()
      return sendNoContent(reply.code(res.status).headers(withoutContent(passed)))
    }
    const coding = codingOf(res.headers)
    const accepted = coding === '' || acceptsCoding(request.headers['accept-encoding'], coding)
    // A refusal is read whole (within REFUSAL_READ_BYTES), for Laravel's debug fields: sent
    // without them, decoded, or as it came; its length known unless decoded past the bound.
    if (res.status >= 400 && request.method !== 'HEAD' && answer.length > 0 && answer.length <= REFUSAL_READ_BYTES) {
      const { body, length, edited } = answer.streamEdited((sent) => {
        const plain = coding === '' ? sent : decodedSync(coding, sent, REFUSAL_READ_BYTES)
        return (plain === null ? null : withoutDebugFields(plain)) ?? (accepted ? null : plain)
      })
      // Not edited, in a coding the caller does not accept: its decoded length was past the bound.
      if (!edited && !accepted) return sendDecoded(reply, res.status, passed, body, coding)
      reply.code(res.status).headers(edited ? decodedHeaders(passed) : passed)
      return reply.header('content-length', length).send(body)
    }
    // In a coding the caller does not accept (a platform that compresses unasked): decoded for it as it streams out.
    if (accepted || request.method === 'HEAD' || answer.length === 0) {
      reply.code(res.status).headers(accepted ? passed : decodedHeaders(passed))
      const length = request.method === 'HEAD' ? headLength(res.status, contentLength(res.headers), accepted) : answer.length
      if (length !== null) reply.header('content-length', length)
      return reply.send(answer.stream())
    }
    return sendDecoded(reply, res.status, passed, answer.stream(), coding)
  }
}

/** A sent proxied call's failure as gateway_platform_calls_total counts it: its GW_* code; `dropped` when its caller left (CallersGoneError). */
function proxiedFailure(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && code.startsWith('GW_') ? code : 'dropped'
}

/** The platform's `body` in `coding` sent decoded, its length unknown; a caller that leaves ends the decoder and the body (pipeline). */
function sendDecoded(reply: FastifyReply, status: number, passed: IncomingHttpHeaders, body: Readable, coding: string): FastifyReply {
  reply.code(status).headers(decodedHeaders(passed))
  return reply.send(pipeline(body, decoderOf(coding) as Transform, () => undefined))
}

function contentLength(headers: IncomingHttpHeaders): string | undefined {
  return typeof headers['content-length'] === 'string' ? headers['content-length'] : undefined
}

// Headers whose meaning is the gateway's own (its cache, a call's cost and finality, a
// job): a platform's, or its CDN's (`x-cache: HIT`), would be read as the gateway's, by
// callers and by the gateway's own access line and usage.
const GATEWAY_HEADERS = ['x-cache', USAGE_HEADER, SETTLED_HEADER, PROVISIONAL_HEADER, 'preference-applied']

// Policies a response sets for its whole origin: the platform's are for the platform's
// origin, and the gateway's origin is the gateway's (it sends no CORS headers; another
// origin's page reads nothing through it, and no upstream clears its callers' storage,
// pins its transport or collects its browsers' reports).
// A browser acts on the others for the whole origin too: a service worker's scope, the
// client hints it sends every later request, the origin's isolation and permissions, its
// sign-in and storage-access state, pages it loads ahead; a page's own content policy
// is the gateway's (answer-fields.ts).
const ORIGIN_POLICIES = [
  'timing-allow-origin', 'alt-svc', 'strict-transport-security', 'clear-site-data', 'nel', 'report-to', 'reporting-endpoints',
  'service-worker-allowed', 'accept-ch', 'critical-ch', 'permissions-policy', 'feature-policy', 'origin-agent-cluster', 'x-permitted-cross-domain-policies', 'x-dns-prefetch-control',
  'speculation-rules', 'supports-loading-mode', 'set-login', 'idp-signin-status', 'activate-storage-access', 'content-security-policy', 'content-security-policy-report-only', 'x-frame-options',
]
const isOriginPolicy = (name: string): boolean => name.startsWith('access-control-') || name.startsWith('cross-origin-') || ORIGIN_POLICIES.includes(name)

// What says how the platform is built and runs: its server's and language's versions, its
// timings (a database's address in a description), its debug tools' headers: Symfony's
// profiler's ids and links (its page of a request lists its headers, the platform token
// among them) and its error renderer's exception and file (x-debug-exception, -file);
// Laravel Debugbar's id, or with its storage off its whole data (`phpdebugbar`,
// `phpdebugbar-1`, …: queries, the database, files); Clockwork's; Xdebug's profiler's
// (x-xdebug-profile-filename: its file's path).
const PLATFORM_INTERNALS = ['server', 'x-powered-by', 'server-timing', 'phpdebugbar']
const DEBUG_PREFIXES = ['x-debug-', 'x-xdebug-', 'x-clockwork-', 'phpdebugbar-']
const isPlatformInternal = (name: string): boolean => DEBUG_PREFIXES.some((prefix) => name.startsWith(prefix)) || PLATFORM_INTERNALS.includes(name)

// A challenge or authentication info (RFC 9110, 11.6 and 11.7) is of the credentials that
// were sent: the platform's are of the gateway's token or of a proxy before the platform,
// never of the caller's key, which the gateway's own 401 challenges (`ApiKey`).
const PLATFORM_CHALLENGES = ['www-authenticate', 'authentication-info', 'proxy-authenticate', 'proxy-authentication-info']

// Instructions a server before the gateway acts on: nginx's X-Accel-* (an internal
// redirect to any of its locations, its cache's time over cache-control, its buffering and
// rate), Envoy's x-envoy-* (`immediate-health-check-fail` takes the replica out of its
// pool, `degraded`, `ratelimited`), LiteSpeed's X-LiteSpeed-* (`Location`, an internal
// redirect; `Cache-Control` over cache-control, `Vary`, `Tag`, `Purge` of its cache),
// Apache's and lighttpd's X-Sendfile and its kin (a file of its own disk: lighttpd's
// X-Sendfile2 with a range, mod_xsendfile's X-Sendfile-Temporary deleted once sent), H2O's
// and Perlbal's X-Reproxy-* (a URL it fetches, or a file it reads, in the answer's place).
// The platform's are for the server before the platform; an ingress or a sidecar before
// the gateway would follow them.
const FRONT_INSTRUCTIONS = ['x-sendfile', 'x-sendfile2', 'x-sendfile-temporary', 'x-lighttpd-send-file']
const FRONT_PREFIXES = ['x-accel-', 'x-envoy-', 'x-litespeed-', 'x-reproxy-']
const isFrontInstruction = (name: string): boolean => FRONT_PREFIXES.some((prefix) => name.startsWith(prefix)) || FRONT_INSTRUCTIONS.includes(name)

// A rate-limit count the platform writes (Laravel's `x-ratelimit-limit` and
// `x-ratelimit-remaining` on every answer; the IETF draft's `ratelimit`, `ratelimit-policy`,
// `ratelimit-remaining`, ...) counts the calls of the credential's token, every team's: on a
// team's answer it would tell, call by call, how often the other teams call the platform.
// A team with a limit of its own reads the gateway's `ratelimit` and `ratelimit-policy`.
const isCredentialCount = (name: string): boolean => /^(x-)?rate-?limit(-|$)/.test(name)

// A proxied answer is the answer to one team's key: a shared cache between callers and the
// gateway (to which a key in x-api-key is no Authorization) must not give it to another key.
// Any answer a cache may store is `private`: a shared cache keeps one to a call without
// Authorization by any freshness it has (max-age, expires, or heuristic, RFC 9111 4.2.2),
// `public` or not, and a CDN that keys by URL alone reads no `vary`.
const SHARED_ONLY = /^(public|s-maxage\s*=.*|proxy-revalidate)$/i
// RFC 9111, 3.5: must-revalidate lets a shared cache keep an answer to a call with
// authorization (a key sent as a bearer) too; it is kept, as a browser reads it, beside `private`.
const SHARED_TOO = /^must-revalidate$/i
// What no shared cache keeps: an unqualified `private` (`private="set-cookie"` keeps the
// rest shareable), or `no-store`, which no cache keeps.
const UNSHARED = /^(private|no-store)$/i
// The caller's accept-encoding shapes the answer too: the platform is offered it, and what
// the caller does not accept is decoded for it.
const VARIED_ON = ['accept-encoding', 'authorization', 'x-api-key']
// Cache directives a cache obeys besides cache-control: RFC 9213's targeted fields
// (`CDN-Cache-Control`, a CDN's own `<name>-CDN-Cache-Control`), the Edge Architecture's
// `Surrogate-Control` (Fastly, Varnish) and Akamai's `Edge-Control`, which a CDN obeys in
// place of cache-control, and `No-Vary-Search`, with which a browser's cache gives one
// query's answer for another (another advertiser's report). The platform's are for its
// own caches; before the gateway they would give one key's or one query's answer for others.
const CACHE_DIRECTIVES = ['surrogate-control', 'edge-control', 'cdn-cache-control', 'no-vary-search']
const isCacheDirective = (name: string): boolean => CACHE_DIRECTIVES.includes(name) || name.endsWith('-cdn-cache-control')

// Headers holding a URL the caller may follow, each with how its URLs are put on the gateway.
const URL_HEADERS: ReadonlyArray<readonly [string, (value: string, platformBase: string) => string]> = [
  ['location', onGateway],
  ['content-location', onGateway],
  ['link', linksOnGateway],
  ['refresh', refreshOnGateway],
]

/**
 * The platform's response headers as the caller gets them: no session cookie, no
 * hop-by-hop headers, none of the gateway's own, no challenge of the platform's, no policy for the platform's origin
 * (CORS, alt-svc, HSTS, clear-site-data, reporting, service workers, client hints, isolation),
 * no count of the shared token's calls, nothing of the platform's internals (server, versions,
 * timings, profiler links), no instruction to a server before the gateway (X-Accel-*, x-envoy-*, X-LiteSpeed-*, X-Sendfile, X-Reproxy-*), private to the
 * key that asked (no CDN's cache directive), and a URL
 * (`location`, `content-location`, `link`, `refresh`) on the platform's own origin (`platformBase`) as the
 * gateway's path, in each of a header's values: a client that follows it comes back to the
 * gateway, which checks the call, instead of taking its team key to the platform's address;
 * no link that a browser or a server before the gateway follows by itself (a preload, a
 * prefetch, a connection made ahead: redirect-location.ts).
 */
export function callerHeaders(headers: IncomingHttpHeaders, platformBase: string | null): IncomingHttpHeaders {
  const out = { ...headers }
  const named = typeof out.connection === 'string' ? out.connection.split(',').map((h) => h.trim().toLowerCase()) : []
  for (const name of [...HOP_BY_HOP, ...named, 'set-cookie', ...GATEWAY_HEADERS, ...PLATFORM_CHALLENGES]) delete out[name]
  for (const name of Object.keys(out)) if (isOriginPolicy(name) || isCredentialCount(name) || isFrontInstruction(name) || isPlatformInternal(name)) delete out[name]
  privateToTheKey(out)
  if (platformBase !== null) {
    for (const [name, rewrite] of URL_HEADERS) {
      const value = out[name]
      if (value === undefined) continue
      // A header the platform repeated comes as a list: each of its values as one alone.
      const values = (Array.isArray(value) ? value : [value]).map((one) => rewrite(one, platformBase)).filter((one) => one !== '')
      if (values.length === 0) delete out[name]
      else out[name] = values.length === 1 ? values[0] : values
    }
  }
  return out
}

/** A field the platform wrote on several lines (a list, as undici gives it) as the one value they make (RFC 9110, 5.3). */
function oneValue(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(', ') : (value ?? '')
}

/** `cache-control` without what lets a shared cache alone keep the answer, `private` unless it says so or `no-store` already, and no CDN's or browser's directive beside it; `vary` names the key headers and accept-encoding. */
function privateToTheKey(out: IncomingHttpHeaders): void {
  for (const name of Object.keys(out)) if (isCacheDirective(name)) delete out[name]
  const directives = oneValue(out['cache-control']).split(',').map((d) => d.trim()).filter((d) => d !== '')
  const kept = directives.filter((d) => !SHARED_ONLY.test(d))
  const keptByNone = kept.length === directives.length && kept.some((d) => UNSHARED.test(d)) && !kept.some((d) => SHARED_TOO.test(d))
  out['cache-control'] = keptByNone ? directives.join(', ') : [...kept.filter((d) => d.toLowerCase() !== 'private'), 'private'].join(', ')
  const vary = oneValue(out.vary).split(',').map((v) => v.trim()).filter((v) => v !== '')
  if (vary.includes('*')) {
    out.vary = '*'
    return
  }
  const named = new Set(vary.map((v) => v.toLowerCase()))
  out.vary = [...vary, ...VARIED_ON.filter((h) => !named.has(h))].join(', ')
}
