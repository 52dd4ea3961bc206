import { isIP, isIPv4, isIPv6 } from 'node:net'

/**
 * Which `Host` the admin listener answers to. A browser sends the name of the page's own
 * site: a page of another site whose name comes to resolve to the listener's address (DNS
 * rebinding) names that site, and is refused. Answered: no `Host` (HTTP/1.0; no browser
 * omits it), an IP address (v4, v6 in brackets), `localhost`, and the names of
 * `admin.hosts`; with any port or none, in any case, with or without the root's trailing
 * dot. A name is never matched by a part of it (`127.0.0.1.nip.io`,
 * `localhost.attacker.example`).
 */
export class AdminHosts {
  readonly #names: ReadonlySet<string>

  /** `names`: admin.hosts, and admin.host when it is a name rather than an address. */
  constructor(names: readonly string[]) {
    this.#names = new Set(['localhost', ...names.filter((n) => isIP(n) === 0).map(hostName)])
  }

  /** The name of a refused `Host` as it was sent, without its port; null when the listener answers it. */
  refused(host: string | undefined): string | null {
    if (host === undefined || host === '') return null
    const [name, rest] = splitHost(host)
    if (portOnly(rest) && (ipv6Literal(name) || isIPv4(hostName(name)) || this.#names.has(hostName(name)))) return null
    return (name === '' ? host : name).slice(0, MAX_NAME)
  }
}

/** The longest DNS name: a refused name is repeated in the answer up to it. */
const MAX_NAME = 253

/** A DNS name as the listener compares it: lower case, without the root's trailing dot. */
export function hostName(name: string): string {
  const lower = name.toLowerCase()
  return lower.endsWith('.') ? lower.slice(0, -1) : lower
}

/** A `Host` value cut before its port: `name` and `:8081`, `[::1]` and `:8081`; the rest is "" without a port. */
function splitHost(host: string): [string, string] {
  const end = host.startsWith('[') ? host.indexOf(']') + 1 : host.indexOf(':')
  return end <= 0 ? [host, ''] : [host.slice(0, end), host.slice(end)]
}

function ipv6Literal(name: string): boolean {
  return name.startsWith('[') && name.endsWith(']') && isIPv6(name.slice(1, -1))
}

function portOnly(rest: string): boolean {
  return rest === '' || /^:\d{1,5}$/.test(rest)
}
