import type { IncomingHttpHeaders } from 'node:http'

// The content coding of an answer, as its caller accepts it (RFC 9110, 12.5.3): a coding
// the caller's `accept-encoding` does not accept is decoded for it by the gateway (it
// decodes every coded platform answer to search it: token-echo.ts). No accept-encoding is
// read as `identity` alone: RFC 9110 lets a server send any coding then, but the callers
// that send none (curl without --compressed, a script reading bytes) read no coding.

/**
 * Whether `header` (a caller's `accept-encoding`) accepts `coding` (lower-case, `gzip` for
 * `x-gzip` too): its own member decides wherever it stands, `*` (the codings not named)
 * only when it is not named, and a weight of 0 is "not acceptable"; the weight's name `q`
 * is case-insensitive (12.4.2).
 */
export function acceptsCoding(header: string | string[] | undefined, coding: string): boolean {
  if (header === undefined) return false
  let star: boolean | undefined
  for (const part of (typeof header === 'string' ? header : header.join(',')).split(',')) {
    const [named, ...params] = part.split(';')
    const name = named?.trim().toLowerCase()
    if (name !== coding && name !== '*' && !(name === 'x-gzip' && coding === 'gzip')) continue
    const q = params.map((p) => p.trim()).find((p) => p.length > 1 && (p[0] === 'q' || p[0] === 'Q') && p[1] === '=')
    const accepted = q === undefined || Number(q.slice(2)) > 0
    if (name !== '*') return accepted
    star ??= accepted
  }
  return star ?? false
}

// What describes the coded bytes rather than what they decode to: their coding and
// length, and the digests of the content (Content-MD5, Content-Digest) or of the
// representation, which its coding is part of (Repr-Digest, Digest: RFC 9530, 3).
const CODED_ONLY = ['content-encoding', 'content-length', 'content-md5', 'content-digest', 'repr-digest', 'digest']

/**
 * `headers` of an answer as it is sent decoded: without what describes the coded bytes,
 * and a strong `etag` made weak (RFC 9110, 8.8.3: a strong one names these very bytes;
 * the decoded ones are the same representation's, not the same bytes), as nginx's gunzip does.
 */
export function decodedHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out = { ...headers }
  for (const name of CODED_ONLY) delete out[name]
  const etag = out.etag
  if (typeof etag === 'string' && !etag.startsWith('W/')) out.etag = `W/${etag}`
  return out
}
