// RFC 9112, 3.2.2: a server accepts a request target in absolute form
// (`GET http://host/path?q HTTP/1.1`), as a client configured with a proxy sends it. The
// gateway serves its path and query as it serves the origin form: the authority names no
// other origin the gateway could reach, and the path is read afterwards by the same rules
// (dot segments, percent-encoding, the routes) as any other. The host it names is kept
// beside the request (http/server.ts, targetHostOf) for the admin listener's check of the
// names it answers to, which reads it as it reads Host (admin/admin-host-check.ts).

const ABSOLUTE = /^https?:\/\/[^/?#]*/i

/** The origin form of a request target: itself unless absolute, else its path and query (`/` where it has no path). */
export function originForm(target: string): string {
  if (target.startsWith('/')) return target
  const authority = ABSOLUTE.exec(target)
  if (authority === null) return target
  const rest = target.slice(authority[0].length)
  return rest.startsWith('/') ? rest : `/${rest}`
}

/**
 * The host (and port) an absolute-form target names, without its userinfo: `evil.example:8443`
 * of `https://user@evil.example:8443/x`, "" of `http:///x`; null for any other target.
 */
export function targetHost(target: string): string | null {
  if (target.startsWith('/')) return null
  const authority = ABSOLUTE.exec(target)
  if (authority === null) return null
  const after = authority[0].indexOf('//') + 2
  return authority[0].slice(Math.max(after, authority[0].lastIndexOf('@') + 1))
}

// RFC 9110, 7.2 and RFC 3986, 3.2.2: `uri-host [ ":" port ]`, the host a name, an IPv4
// address or an IPv6 literal in brackets (a zone as `%25`), or empty (a target without one).
const HOST_VALUE = /^(?:\[[0-9A-Fa-f:.]+(?:%25[\w.~-]+)?\]|[\w.~!$&'()*+,;=%-]*)(?::\d*)?$/

/** Whether a Host header's value names a host (and port) as RFC 9110 has it. */
export function isHostValue(host: string): boolean {
  return HOST_VALUE.test(host)
}
