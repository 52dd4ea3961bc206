import type { IncomingHttpHeaders } from 'node:http'
import { BadRequestError } from '../errors.js'

// RFC 9110, 7.6.1: the header fields a request's `Connection` names are for its first
// hop only, and a proxy or gateway forwards none of them.

/**
 * The caller's headers the gateway reads to decide a call: who it is, the body's type
 * and framing, the host, the cache directives and validators, the preferences and ids
 * it acts on. A hop before the gateway drops a header that `Connection` names, the
 * gateway would read it: a `Connection` naming one is refused, so that no two layers
 * check different calls.
 */
const READ_BY_GATEWAY: ReadonlySet<string> = new Set([
  'host',
  'x-api-key',
  'authorization',
  'content-type',
  'content-length',
  'transfer-encoding',
  'content-encoding',
  'cache-control',
  'pragma',
  'if-none-match',
  'if-modified-since',
  'prefer',
  'x-cache-warm',
  'x-request-id',
  'traceparent',
  'tracestate',
])

// The values almost every caller sends, which name no header.
const PLAIN = new Set(['close', 'keep-alive'])

/** The header names `Connection` lists, in lower case (none when there is no such header). */
export function connectionOptions(headers: IncomingHttpHeaders): string[] {
  const value = headers.connection
  if (value === undefined || PLAIN.has(value.toLowerCase())) return []
  return value.split(',').map((name) => name.trim().toLowerCase()).filter((name) => name !== '' && !PLAIN.has(name))
}

/** 400 when the request's `Connection` names a header the gateway reads (the message names it: one of ours, never the caller's words). */
export function assertHopSafe(headers: IncomingHttpHeaders): void {
  for (const name of connectionOptions(headers)) {
    if (READ_BY_GATEWAY.has(name)) {
      throw new BadRequestError(`connection: names ${name}, a header the gateway reads; a header named in Connection is for one hop only (RFC 9110, 7.6.1): send it without naming it there`)
    }
  }
}
