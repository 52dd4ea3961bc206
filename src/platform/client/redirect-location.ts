/**
 * A URL the platform gives its caller to follow (`location`, `content-location`) as the
 * gateway passes it on: on the platform's own origin (`platformBase`), the gateway's path,
 * so that a client that follows it comes back to the gateway, which checks the call,
 * instead of taking its team key to the platform's address; another origin's, or a
 * relative one (already the gateway's), as it is.
 */
export function onGateway(value: string, platformBase: string): string {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return value // relative (already the gateway's), or not a URL at all
  }
  return url.origin === new URL(platformBase).origin ? `${url.pathname}${url.search}${url.hash}` : value
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
