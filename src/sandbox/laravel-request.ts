import type { IncomingHttpHeaders } from 'node:http'
import { parsePhpParams, phpJsonDecode, phpToJs } from './php-input.js'
import { parsePhpMultipart } from './php-multipart.js'

// What a Laravel controller on the platform reads of a request (Symfony's Request and
// Laravel's Illuminate\Http\Request), so that the sandbox reads every request the way
// the platform would, quirks included.

export interface LaravelRequest {
  /** The method Laravel routes by: a POST may name another (X-HTTP-Method-Override, `_method`). */
  method: string
  /** `$request->query`, parsed as PHP parses a query string. */
  query: Record<string, unknown>
  /** The input source: the JSON body, else the form body (a multipart form's fields on POST; the query for GET and HEAD). */
  body: Record<string, unknown>
  /** `$request->input()`: the input source over the query. */
  input: Record<string, unknown>
}

export interface RawRequest {
  method: string
  /** The request target as received: path and raw query. */
  url: string
  headers: IncomingHttpHeaders
  body: Buffer | null
}

const FORM = 'application/x-www-form-urlencoded'
const MULTIPART = 'multipart/form-data'
const SYMFONY_FORM_METHODS = new Set(['PUT', 'DELETE', 'PATCH'])
const METHOD = /^[A-Z]+$/

export function laravelRequest(raw: RawRequest): LaravelRequest {
  const q = raw.url.indexOf('?')
  const query = arrayCast(phpToJs(parsePhpParams(q === -1 ? '' : raw.url.slice(q + 1))))
  const contentType = raw.headers['content-type'] ?? ''
  const realMethod = raw.method.toUpperCase()
  let body: Record<string, unknown>
  // Laravel's isJson(): the type holds `/json` or `+json` anywhere, parameters included.
  if (contentType.includes('/json') || contentType.includes('+json')) {
    body = arrayCast(raw.body === null ? undefined : phpJsonDecode(raw.body))
  } else if (realMethod === 'GET' || realMethod === 'HEAD') {
    body = query
  } else if (raw.body !== null && isForm(realMethod, contentType)) {
    body = arrayCast(phpToJs(parsePhpParams(raw.body.toString('latin1'))))
  } else if (raw.body !== null && realMethod === 'POST' && mediaType(contentType) === MULTIPART) {
    body = arrayCast(phpToJs(parsePhpMultipart(raw.body.toString('latin1'), contentType)))
  } else {
    body = {}
  }
  return { method: overridden(realMethod, raw.headers, body, query), query, body, input: { ...query, ...body } }
}

/** The type as PHP reads it to choose `$_POST`'s parser (main/SAPI.c): up to the first `;`, `,` or space, in any case. */
const mediaType = (contentType: string): string => contentType.split(/[;, ]/)[0]?.toLowerCase() ?? ''

/** PHP fills `$_POST` for a POST form; Symfony parses the form of PUT, DELETE and PATCH itself. */
function isForm(method: string, contentType: string): boolean {
  if (method === 'POST') return mediaType(contentType) === FORM
  return SYMFONY_FORM_METHODS.has(method) && contentType.startsWith(FORM)
}

/**
 * Laravel's `expectsJson()` (Illuminate\Http\Concerns\InteractsWithContentTypes): an
 * XMLHttpRequest (`X-Requested-With`, not PJAX) that accepts any type, or an `Accept`
 * whose first type, by quality, is JSON. Its exception handler answers a failed
 * validation with JSON only then (Handler::convertValidationExceptionToResponse).
 */
export function expectsJson(headers: IncomingHttpHeaders): boolean {
  const acceptable = acceptableTypes(headers.accept)
  const ajax = headers['x-requested-with'] === 'XMLHttpRequest' && !headers['x-pjax']
  const any = acceptable.length === 0 || acceptable[0] === '*/*' || acceptable[0] === '*'
  const wantsJson = acceptable[0] !== undefined && /\/json|\+json/.test(acceptable[0].toLowerCase())
  return (ajax && any) || wantsJson
}

/** Symfony's getAcceptableContentTypes(): the types of `Accept`, by quality (highest first), in order among equals. */
function acceptableTypes(accept: string | undefined): string[] {
  const items = (accept ?? '').split(',').map((item, index) => {
    const [type = '', ...params] = item.split(';').map((part) => part.trim())
    const q = params.find((p) => /^q=/i.test(p))
    return { type, index, quality: q === undefined ? 1 : Number(q.slice(2)) }
  })
  return items.filter((i) => i.type !== '').sort((a, b) => b.quality - a.quality || a.index - b.index).map((i) => i.type)
}

/** Symfony's getMethod() with Laravel's `_method` parameter override switched on. */
function overridden(method: string, headers: IncomingHttpHeaders, body: Record<string, unknown>, query: Record<string, unknown>): string {
  if (method !== 'POST') return method
  const header = headers['x-http-method-override']
  const named = typeof header === 'string' ? header : (body._method ?? query._method)
  if (typeof named !== 'string') return method
  const upper = named.toUpperCase()
  return METHOD.test(upper) ? upper : method
}

/** An object or a list as PHP's array cast of it; anything else (a failed decode included) is empty. */
function arrayCast(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return {}
  return Array.isArray(value) ? { ...value } : (value as Record<string, unknown>)
}
