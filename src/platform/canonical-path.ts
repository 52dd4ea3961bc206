// One path, one spelling. The platform's router decodes percent-escapes of unreserved
// characters and ignores a trailing slash, so `…/campaigns/get/` and `…/c%61mpaigns/get`
// are its `…/campaigns/get`. The gateway keys its cache and its route pauses by the same
// spelling: two spellings of one report were two cache entries and two platform calls,
// and two routes to the pauses (two throttled routes pause the whole credential).

/** A percent-escape of an unreserved character (RFC 3986: ALPHA, DIGIT, `-`, `.`, `_`, `~`), either case. */
export const UNRESERVED_ESCAPE = /%(4[1-9a-f]|5[0-9a]|6[1-9a-f]|7[0-9a]|3[0-9]|2d|2e|5f|7e)/gi

/** Any percent-escape, either case. */
const ESCAPE = /%[0-9a-f]{2}/gi
/** An unreserved character. */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/

/**
 * The one spelling of a text's percent-escapes (RFC 3986, 6.2.2.1 and 6.2.2.2): an escape
 * of an unreserved character is that character, any other has its hex digits in capitals
 * (`%2f` is `%2F`, one octet).
 */
export function canonicalEscapes(text: string): string {
  if (!text.includes('%')) return text
  return text.replace(ESCAPE, (escape) => {
    const char = String.fromCharCode(parseInt(escape.slice(1), 16))
    return UNRESERVED.test(char) ? char : escape.toUpperCase()
  })
}

/**
 * The one spelling of a path: its escapes in their one spelling (canonicalEscapes), runs
 * of `/` as one, no trailing `/` (but the root's). Idempotent, and every spelling of a
 * path that differs only in those ways gives the same result.
 */
export function canonicalPath(path: string): string {
  const decoded = canonicalEscapes(path)
  const single = decoded.includes('//') ? decoded.replace(/\/{2,}/g, '/') : decoded
  return single.length > 1 && single.endsWith('/') ? single.slice(0, -1) || '/' : single
}
