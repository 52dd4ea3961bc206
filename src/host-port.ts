import { isIP } from 'node:net'

/**
 * `host`:`port` as a URL's authority writes it (RFC 3986, 3.2.2): an IPv6 address in
 * brackets (`[::1]:8080`), a name or an IPv4 address as it is. Every address the gateway
 * prints is written so (its start line, a listen it could not make, the demo's curl line
 * and console URL, the sandbox's URL, Redis' nodes): `http://` before it makes a URL.
 */
export function hostPort(host: string, port: number | string): string {
  return `${isIP(host) === 6 ? `[${host}]` : host}:${port}`
}
