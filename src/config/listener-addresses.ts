import { lookup as dnsLookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { hostAsWritten } from './webhook-hosts.js'

// Whether the two listeners can bind where they are told to. On one port, the second
// cannot bind an address the first holds: the same address under two spellings
// (0:0:0:0:0:0:0:1 and ::1, ::ffff:127.0.0.1 and 127.0.0.1), a name and the address it
// resolves to (localhost and 127.0.0.1), or any address of a wildcard's family (0.0.0.0:
// every IPv4 address; ::, which Node binds dual-stack: every address). That is told as a
// setting's problem before either listens, not as a port in use. A name is resolved as
// Node's listen resolves it (the first address dns.lookup gives; Fastify binds no other
// address of `localhost` for a server of its serverFactory), so the comparison is of what
// each listener will bind.

/** An address as a listener binds it: IPv4 in dotted form (an IPv4-mapped IPv6 address included), IPv6 in its shortest form. */
function canonical(ip: string): string {
  if (isIP(ip) !== 6) return ip
  const short = new URL(`http://[${ip}]`).hostname.slice(1, -1)
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(short)
  if (mapped === null) return short
  const high = parseInt(mapped[1]!, 16)
  const low = parseInt(mapped[2]!, 16)
  return [high >> 8, high & 255, low >> 8, low & 255].join('.')
}

/** Whether listeners on one port at IP addresses `a` and `b` cannot both bind. */
export function bindingsOverlap(a: string, b: string): boolean {
  const [x, y] = [canonical(a), canonical(b)]
  if (x === y || x === '::' || y === '::') return true
  const v4 = (ip: string) => isIP(ip) === 4
  return (x === '0.0.0.0' && v4(y)) || (y === '0.0.0.0' && v4(x))
}

/**
 * Why a listener cannot bind `host` as written, or null. A listener binds an IP address, or
 * resolves a name; anything else is a name no resolver knows, and the start would stop at
 * the listen (exit 1, `getaddrinfo ENOTFOUND`, a space at the end unseen in the line): an
 * IPv6 address in brackets, as a URL writes it; spaces at its ends (a .env line); a scheme
 * or a path; a port. A name whose last part is a number (`999.1.1.1`, `127.1`) is no host
 * name, and resolves only where the resolver reads it as an IPv4 address in some spelling, or
 * not at all: it is told with the address a URL reads in it, or as no address at all.
 * `setting` names the host's setting, `portSetting` the port's.
 */
export function listenHostFault(host: string, setting: string, portSetting: string): string | null {
  if (isIP(host) !== 0) return null
  const inner = /^\[(.*)\]$/.exec(host)?.[1]
  if (inner !== undefined && isIP(inner) === 6) return `${setting}: ${host} is an IPv6 address in brackets, as a URL writes it; write it without them (${inner})`
  const fault = (why: string) => `${setting}: ${JSON.stringify(host)} is not an address to listen on (an IP address, IPv6 without brackets, or a host name): ${why}`
  if (/^[\w.-]+$/.test(host) && /(?:^|\.)(?:\d+|0x[0-9a-f]*)\.?$/i.test(host)) {
    const written = hostAsWritten(host)
    const numeric = 'its last part is a number, so it is no host name'
    return fault(written !== null && isIP(written) === 4 ? `${numeric}; a URL reads it as the IPv4 address ${written}: write that` : `${numeric}, and it is no IPv4 address (four numbers from 0 to 255, e.g. 127.0.0.1)`)
  }
  if (/^[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$/.test(host)) return null
  return fault(host.trim() !== host ? 'it has spaces at its ends; remove them' : /^[^:/]+:\d*$/.test(host) ? `write the port in ${portSetting}` : /[/@?#]/.test(host) ? 'write the host alone, without a scheme or path' : 'write an IP address or a name of letters, digits, - and dots')
}

/** Resolves a host as Node's listen does: the first address dns.lookup gives for a name. */
export type Resolve = (host: string) => Promise<string>

const resolveAsListen: Resolve = async (host) => (await dnsLookup(host)).address

/**
 * The problem with the two listeners' addresses (`HOST`/`PORT`, `ADMIN_HOST`/`ADMIN_PORT`):
 * both on one port at addresses that overlap; null when they can both bind, or when a name
 * does not resolve (the listen that follows says so).
 */
export async function listenerAddressProblem(config: { host: string; port: number; admin: { host: string; port: number } }, resolve: Resolve = resolveAsListen): Promise<string | null> {
  const { host, port, admin } = config
  if (port === 0 || port !== admin.port) return null
  const address = async (name: string) => (isIP(name) === 0 ? resolve(name).catch(() => null) : name)
  const [proxyAt, adminAt] = await Promise.all([address(host), address(admin.host)])
  if (proxyAt === null || adminAt === null || !bindingsOverlap(proxyAt, adminAt)) return null
  return `ADMIN_PORT: the same port as PORT (${port}), on addresses that overlap (ADMIN_HOST ${admin.host}, HOST ${host}): the admin listener cannot bind beside the proxy listener; set another ADMIN_PORT (default 8081)`
}
