export const API_PREFIX = '/api/v1/'

// Percent-encodings of `.`, `/`, `\`, `%` (double encoding) and NUL: a platform or a
// proxy on the way could decode them into a path outside /api/v1/.
const ENCODED_DANGER = /%(2e|2f|5c|25|00)/i
const ENCODED_WORDS: Record<string, string> = {
  '2E': '%2E (an encoded .)',
  '2F': '%2F (an encoded /)',
  '5C': '%5C (an encoded \\)',
  '25': '%25 (an encoded %: an escape escaped again)',
  '00': '%00 (an encoded NUL)',
}
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/

/**
 * True when the raw request path can only mean a platform path under /api/v1/,
 * whatever decoding or normalization happens downstream.
 */
export function isSafeApiPath(rawUrl: string): boolean {
  return pathOf(rawUrl).startsWith(API_PREFIX) && unsafeSpelling(rawUrl) === null
}

/**
 * What in the raw request path a decoding or normalizing server on the way could read as
 * another path, in words that repeat none of the path (the caller wrote it): an encoded
 * `.`, `/`, `\`, `%` or NUL, a `\`, `//`, a dot segment, a control character; null for none.
 */
export function unsafeSpelling(rawUrl: string): string | null {
  const path = pathOf(rawUrl)
  const encoded = ENCODED_DANGER.exec(path)
  if (encoded !== null) return ENCODED_WORDS[(encoded[1] as string).toUpperCase()] as string
  if (path.includes('\\')) return 'a \\'
  if (path.includes('//')) return '// (an empty segment)'
  if (CONTROL.test(path)) return 'a control character'
  const dots = path.split('/').find((segment) => segment === '.' || segment === '..')
  return dots === undefined ? null : `a ${dots} segment`
}

/** The request path without its query string. */
export function pathOf(rawUrl: string): string {
  const q = rawUrl.indexOf('?')
  return q === -1 ? rawUrl : rawUrl.slice(0, q)
}

/**
 * The path parts of the configured token URLs that sit on a host a proxied call goes to:
 * `baseUrls`, the default credential's base address first (a relative token URL is resolved
 * against it), then each other credential's. Hosts, not origins, are compared: another
 * scheme or port of the platform's host may be the same application. A token URL on
 * another host (an SSO's) is no route of the platform's: a caller's call of that path
 * reaches the platform, never it.
 */
export function tokenPaths(baseUrls: string | readonly (string | null)[] | null, tokenUrls: string[]): Set<string> {
  const bases = (typeof baseUrls === 'string' || baseUrls === null ? [baseUrls] : baseUrls).filter((u): u is string => u !== null)
  const hosts = new Set(bases.flatMap((u) => (URL.canParse(u) ? [new URL(u).hostname] : [])))
  const first = bases[0]
  const paths = new Set<string>(['/oauth/token'])
  for (const tokenUrl of tokenUrls) {
    try {
      const url = new URL(tokenUrl, first ? `${first}/` : 'http://platform.invalid/')
      // Without a base address known, every token URL's path is refused.
      if (hosts.size === 0 || hosts.has(url.hostname)) paths.add(comparable(url.pathname))
    } catch {
      // config validation already refused malformed token URLs
    }
  }
  return paths
}

export function isTokenPath(rawUrl: string, paths: Set<string>): boolean {
  return paths.has(comparable(pathOf(rawUrl)))
}

// The platform's router decodes the path before matching it, so `/api/v1/auth/t%6Fken`
// is its token route too: compare decoded. (Encoded `/`, `\`, `.`, `%` never get here:
// isSafeApiPath refuses them first.) Case and trailing slashes are ignored as well, and a
// run of `/` is one, as the router reads it (canonical-path.ts): a token URL written
// `/api/v1//auth/token` is sent to the route a caller names `/api/v1/auth/token`.
function comparable(path: string): string {
  let decoded = path
  try {
    decoded = decodeURIComponent(path)
  } catch {
    // a malformed escape: compared as sent
  }
  const single = decoded.includes('//') ? decoded.replace(/\/{2,}/g, '/') : decoded
  return single.replace(/\/+$/, '').toLowerCase()
}
