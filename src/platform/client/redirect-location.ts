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
