// A base of no real host: a reference resolved against it keeps this host unless it names
// one of its own (an absolute URL, or a network-path reference `//host/…`, which URL
// parsers also read in `/\host/…`, as a client following it does).
const NO_HOST = new URL('http://no-host.invalid/')

/**
 * A URL the platform gives its caller to follow (`location`, `content-location`) as the
 * gateway passes it on: one naming the platform's host (`platformBase`'s, in any scheme or
 * port, absolute or network-path), the gateway's path, so that a client that follows it
 * comes back to the gateway, which checks the call, instead of taking its team key to the
 * platform's address (a platform behind a load balancer that ends TLS writes its own URLs
 * with `http`); another host's, or a reference naming none (already the gateway's), as it is.
 */
export function onGateway(value: string, platformBase: string): string {
  let url: URL
  try {
    url = new URL(value, NO_HOST)
  } catch {
    return value // not a URL at all
  }
  if (url.host === NO_HOST.host) return value
  return url.hostname === new URL(platformBase).hostname ? `${url.pathname}${url.search}${url.hash}` : value
}

// Relations a browser or a server before the gateway acts on by itself, with no caller
// asking: it fetches the target (preload, modulepreload, prefetch, prerender, a compression
// dictionary, a stylesheet, a service worker), or connects to or resolves its host
// (preconnect, dns-prefetch); nginx's and h2o's HTTP/2 push and a CDN's Early Hints turn a
// preload into a push or a 103. A platform's would have them reach any origin, or the
// gateway, for no call a caller made.
const FOLLOWED_UNASKED = new Set(['preload', 'modulepreload', 'prefetch', 'prerender', 'compression-dictionary', 'stylesheet', 'serviceworker', 'preconnect', 'dns-prefetch'])

// One link-value of a `link` header (RFC 8288, 3): `<uri>` and its parameters, up to a comma
// outside the target and outside quotes; or, for a header that is no list of those, a run
// up to the next comma. A `<` or a quote left open runs to the end (never a match tried
// again from each later character: the time is linear in the header's length).
const LINK_VALUE = /\s*(?:<[^>]*>?(?:[^,"]|"(?:[^"\\]|\\.)*"?)*|[^,]+)/g
// A link-value's parameters, each whole: `; name`, `; name=token`, `; name="quoted; text"`.
const PARAMETER = /;\s*([^=;\s]+)\s*(?:=\s*(?:"((?:[^"\\]|\\.)*)"?|([^;]*)))?/g

/**
 * A `link` header (RFC 8288: `<uri>; rel=next, <uri>; …`) as the caller gets it: each
 * target as `onGateway` gives it, so that a client that pages by rel=next stays on the
 * gateway, and no link-value whose relations hold one followed unasked (FOLLOWED_UNASKED).
 * An empty string: none is left.
 */
export function linksOnGateway(value: string, platformBase: string): string {
  const kept: string[] = []
  for (const [whole] of value.matchAll(LINK_VALUE)) {
    const link = whole.trim()
    if (link === '') continue
    if (relationsOf(link).some((relation) => FOLLOWED_UNASKED.has(relation))) continue
    kept.push(link.replace(/^<([^>]*)>/, (_target, target: string) => `<${onGateway(target, platformBase)}>`))
  }
  return kept.join(', ')
}

// `refresh: <seconds>; url=<uri>` (HTML's refresh, which browsers honour as a header), the URL optionally quoted.
const REFRESH = /^(\s*\d+(?:\.\d*)?\s*[;,]\s*url\s*=\s*)(['"]?)(.*?)\2(\s*)$/i

/** A `refresh` header's URL as `onGateway` gives it; a refresh without one as it is. */
export function refreshOnGateway(value: string, platformBase: string): string {
  return value.replace(REFRESH, (_whole, lead: string, quote: string, target: string, tail: string) => `${lead}${quote}${onGateway(target, platformBase)}${quote}${tail}`)
}

/** The relation types of every `rel` parameter of a link-value, lower-cased; a quoted text holding `rel=` is none. */
function relationsOf(link: string): string[] {
  const relations: string[] = []
  for (const [, name, quoted, token] of link.replace(/^<[^>]*>/, '').matchAll(PARAMETER)) {
    if (name?.toLowerCase() !== 'rel') continue
    const text = quoted === undefined ? (token ?? '') : quoted.replace(/\\(.)/g, '$1')
    relations.push(...text.trim().toLowerCase().split(/\s+/))
  }
  return relations
}
