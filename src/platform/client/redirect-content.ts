import type { FastifyReply } from 'fastify'

/**
 * What a caller gets of a platform redirect's content: none. The platform writes a page
 * naming where the redirect leads in its own address (Laravel's `redirect()` is Symfony's
 * RedirectResponse, whose page names the URL three times, a signed URL's query with it;
 * Apache's or nginx's trailing-slash 301 writes its own), which putting `location` on the
 * gateway (redirect-location.ts) does not reach. `location` is all a client follows, and a
 * redirect's content is optional (RFC 9110, 15.4): the caller gets `content-length: 0`
 * and none of the headers that described the page. 304 is no redirect: it has no content
 * and its validators are its point.
 */
export function isRedirect(status: number): boolean {
  return status >= 300 && status < 400 && status !== 304
}

// The headers that describe a content (its type, coding, language, disposition, range,
// digests, validators): of a page the caller does not get. A validator kept would be sent
// back (`if-none-match`, `if-modified-since`) as if it dated what the caller reads next.
const CONTENT_HEADERS = ['content-type', 'content-encoding', 'content-language', 'content-disposition', 'content-range', 'content-md5', 'content-digest', 'repr-digest', 'digest', 'etag', 'last-modified']

/** `headers` without those describing the content. */
export function withoutContent<H extends Record<string, unknown>>(headers: H): H {
  const out = { ...headers }
  for (const name of CONTENT_HEADERS) delete out[name]
  return out
}

/** Ends `reply` with no content, its length said (a HEAD's too: what a GET would be sent). */
export function sendNoContent(reply: FastifyReply): FastifyReply {
  return reply.header('content-length', '0').send()
}
