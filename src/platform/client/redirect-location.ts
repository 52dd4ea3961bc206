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

/** A `link` header's targets (RFC 8288: `<uri>; rel=next, <uri>; …`), each as `onGateway` gives it: a client that pages by rel=next stays on the gateway. */
export function linksOnGateway(value: string, platformBase: string): string {
  return value.replace(/<([^>]*)>/g, (_whole, target: string) => `<${onGateway(target, platformBase)}>`)
}

// `refresh: <seconds>; url=<uri>` (HTML's refresh, which browsers honour as a header), the URL optionally quoted.
const REFRESH = /^(\s*\d+(?:\.\d*)?\s*[;,]\s*url\s*=\s*)(['"]?)(.*?)\2(\s*)$/i

/** A `refresh` header's URL as `onGateway` gives it; a refresh without one as it is. */
export function refreshOnGateway(value: string, platformBase: string): string {
  return value.replace(REFRESH, (_whole, lead: string, quote: string, target: string, tail: string) => `${lead}${quote}${onGateway(target, platformBase)}${quote}${tail}`)
}
