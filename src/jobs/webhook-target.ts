import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { lookup } from 'node:dns/promises'
import { BlockList, isIP, type LookupFunction } from 'node:net'
import { networkInterfaces } from 'node:os'
import { hostPort } from '../host-port.js'

// Where a webhook's connection may go: the addresses its host resolves to, never the
// platform's socket, a link-local address nor a cloud's metadata service. Which hosts a webhook may name at all is
// config/webhook-hosts.ts.

/** The port a URL connects to: its own, else its scheme's. */
function portOf(url: URL): number {
  return url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port)
}

/** Resolves a host name to its addresses, as a connection would (dns.lookup, every family). */
export type LookupAll = (host: string) => Promise<string[]>

export const lookupAll: LookupAll = async (host) => (await lookup(host, { all: true })).map((a) => a.address)

/** A URL's host as an address literal (IPv6 without its brackets), or null for a name. */
export function literalOf(url: URL): string | null {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  return isIP(host) === 0 ? null : host
}

/**
 * The platform's sockets (each base URL's addresses, as resolved now, at its port) as a
 * check of where a webhook's connection goes: an allowed host name may resolve to the
 * platform's address (`localhost` beside a platform at 127.0.0.1, a name an operator
 * did not know points there), which the host names' comparison does not see. An IPv4
 * address matches its IPv4-mapped IPv6 spelling (`::ffff:127.0.0.1`) too.
 *
 * A platform on this host (its address a loopback, an unspecified or an interface address
 * of this host) is taken to be at every address of this host at its port: a listener bound
 * to 0.0.0.0 answers at each of them, and a connection to 0.0.0.0 or `::` reaches this
 * host's listeners, so `http://0.0.0.0:<port>` reaches a platform at 127.0.0.1:<port>. How
 * the platform's listener is bound is not known here; each of them is refused.
 */
export async function platformSockets(baseUrls: readonly string[], resolve: LookupAll = lookupAll, hostAddresses: readonly string[] = interfaceAddresses()): Promise<PlatformCheck> {
  const thisHost = thisHostList(hostAddresses)
  const onThisHost = (address: string): boolean => thisHost.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4')
  const byPort = new Map<number, BlockList>()
  const sockets: string[] = []
  for (const base of baseUrls) {
    const url = URL.parse(base)
    if (url === null) continue
    const list = byPort.get(portOf(url)) ?? new BlockList()
    byPort.set(portOf(url), list)
    const literal = literalOf(url)
    // A platform name that does not resolve now is no address a connection reaches.
    const addresses = literal === null ? await resolve(url.hostname).catch(() => []) : [literal]
    for (const address of addresses) {
      list.addAddress(address, isIP(address) === 6 ? 'ipv6' : 'ipv4')
      sockets.push(`${address} ${portOf(url)}`)
      if (onThisHost(address)) addThisHost(list, hostAddresses)
    }
  }
  const check = (address: string, port: number): boolean => byPort.get(port)?.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4') ?? false
  return Object.assign(check, { key: [...new Set(sockets)].sort().join(',') })
}

/** This host's interface addresses (IPv6 link-local ones without their zone). */
function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address.replace(/%.*$/, '')))
}

/** Every address at which a connection reaches this host: loopback, unspecified, `hostAddresses` (its interfaces). */
function addThisHost(list: BlockList, hostAddresses: readonly string[]): void {
  list.addSubnet('127.0.0.0', 8, 'ipv4')
  list.addAddress('0.0.0.0', 'ipv4')
  list.addAddress('::1', 'ipv6')
  list.addAddress('::', 'ipv6')
  for (const address of hostAddresses) if (isIP(address) !== 0) list.addAddress(address, isIP(address) === 6 ? 'ipv6' : 'ipv4')
}

function thisHostList(hostAddresses: readonly string[]): BlockList {
  const list = new BlockList()
  addThisHost(list, hostAddresses)
  return list
}

/** Whether a socket (address, port) is the platform's; `key` names the sockets of the resolution it checks against, the same key for the same sockets. */
export type PlatformCheck = ((address: string, port: number) => boolean) & { readonly key: string }

// Link-local addresses hold a cloud instance's metadata service (169.254.169.254, its
// IPv6 fe80:: peers), whose answers are the instance's credentials: no receiver lives
// there, and a name in the allow-list whose DNS a team controls could point at it.
const LINK_LOCAL = new BlockList()
LINK_LOCAL.addSubnet('169.254.0.0', 16, 'ipv4')
LINK_LOCAL.addSubnet('fe80::', 10, 'ipv6')

// The metadata and credential services clouds keep outside link-local answer with
// credentials as well: AWS's instance metadata over IPv6 (fd00:ec2::254) and its EKS Pod
// Identity agent (fd00:ec2::23), Google Cloud's metadata server over IPv6 (fd20:ce::254),
// Scaleway's instance metadata over IPv6 (fd00:42::42), Oracle Cloud's over IPv6
// (fd00:c1::a9fe:a9fe), Akamai's (Linode's) metadata service over IPv6 (fd00:a9fe:a9fe::1),
// Alibaba Cloud's instance metadata (100.100.100.200, over IPv6 fd00:100::100:200), Azure's
// WireServer (168.63.129.16, the VM agent's endpoint, whose answers carry extensions'
// settings), Oracle Cloud Classic's instance metadata (192.0.0.192); each IPv4 one in the
// IPv6 spellings that reach it too (carriedIPv4).
const CLOUD_SERVICES = new BlockList()
for (const address of ['fd00:ec2::254', 'fd00:ec2::23', 'fd20:ce::254', 'fd00:42::42', 'fd00:c1::a9fe:a9fe', 'fd00:a9fe:a9fe::1', 'fd00:100::100:200']) CLOUD_SERVICES.addAddress(address, 'ipv6')
for (const address of ['100.100.100.200', '168.63.129.16', '192.0.0.192']) CLOUD_SERVICES.addAddress(address, 'ipv4')

/** The 16 bytes of an IPv6 address (a valid one; its zone dropped). */
function ipv6Bytes(address: string): number[] {
  const text = address.replace(/%.*$/, '').replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_all, a: string, b: string, c: string, d: string) => `${((+a << 8) | +b).toString(16)}:${((+c << 8) | +d).toString(16)}`)
  const groups = (part: string | undefined): number[] => (part ? part.split(':').map((g) => parseInt(g, 16)) : [])
  const [head, tail] = text.split('::')
  const before = groups(head)
  const after = groups(tail)
  const all = tail === undefined ? before : [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after]
  return all.flatMap((group) => [group >> 8, group & 0xff])
}

/**
 * The IPv6 prefixes under which an address carries an IPv4 one that a translator or a
 * tunnel delivers to, and where each puts it: IPv4-mapped (::ffff:0:0/96) and
 * IPv4-compatible (::/96, RFC 4291), IPv4-translated (::ffff:0:0:0/96, RFC 2765), NAT64's
 * well-known prefix (64:ff9b::/96, RFC 6052, which a DNS64 resolver answers for a name
 * that has only an IPv4 address), its local-use prefix (64:ff9b:1::/48, RFC 8215) at each
 * RFC 6052 length a NAT64 there may use (/48, /56, /64, /96: the bytes around the u octet,
 * byte 8), 6to4 (2002::/16, RFC 3056) and Teredo (2001::/32, RFC 4380: its server, and its
 * client inverted).
 */
const CARRIERS: readonly [prefix: number[], at: (b: number[]) => number[][]][] = [
  [ipv6Bytes('::ffff:0:0').slice(0, 12), (b) => [b.slice(12)]],
  [ipv6Bytes('::').slice(0, 12), (b) => [b.slice(12)]],
  [ipv6Bytes('::ffff:0:0:0').slice(0, 12), (b) => [b.slice(12)]],
  [ipv6Bytes('64:ff9b::').slice(0, 12), (b) => [b.slice(12)]],
  [ipv6Bytes('64:ff9b:1::').slice(0, 6), (b) => [[b[6], b[7], b[9], b[10]], [b[7], b[9], b[10], b[11]], b.slice(9, 13), b.slice(12)] as number[][]],
  [ipv6Bytes('2002::').slice(0, 2), (b) => [b.slice(2, 6)]],
  [ipv6Bytes('2001::').slice(0, 4), (b) => [b.slice(4, 8), b.slice(12).map((x) => x ^ 0xff)]],
]

/** The IPv4 addresses an IPv6 `address` carries (CARRIERS); none for an IPv4 address or any other. */
export function carriedIPv4(address: string): string[] {
  if (isIP(address) !== 6) return []
  const bytes = ipv6Bytes(address)
  return CARRIERS.filter(([prefix]) => prefix.every((byte, i) => bytes[i] === byte)).flatMap(([, at]) => at(bytes).map((v4) => v4.join('.')))
}

/**
 * Why a connection to `address` for `url` may not be made (the platform's socket, a
 * link-local address, a cloud's metadata service, itself or as an IPv4 address it carries:
 * carriedIPv4); null when it may.
 */
export function socketRefusal(url: URL, address: string, isPlatform: (address: string, port: number) => boolean): string | null {
  for (const checked of [address, ...carriedIPv4(address)]) {
    const carrier = checked === address ? '' : `, carried by ${address}`
    if (isPlatform(checked, portOf(url))) return `${url.hostname} resolves to the platform's address (${hostPort(checked, portOf(url))}${carrier})`
    const family = isIP(checked) === 6 ? 'ipv6' : 'ipv4'
    if (LINK_LOCAL.check(checked, family)) return `${url.hostname} resolves to a link-local address (${checked}${carrier}): an instance's metadata service lives there, never a receiver`
    if (CLOUD_SERVICES.check(checked, family)) return `${url.hostname} resolves to a cloud's metadata or credential service (${checked}${carrier}), never a receiver`
  }
  return null
}

/** A connection refused because its host resolved to the platform's socket. */
export class PlatformAddressError extends Error {}

/**
 * The lookup a webhook's connection makes (net's `lookup` option): the system's, refusing
 * an answer that holds the platform's socket, so the addresses checked are the ones the
 * connection then uses (a name that resolves elsewhere at the check and to the platform
 * at the connection is refused too).
 */
export function guardedLookup(url: URL, isPlatform: (address: string, port: number) => boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, options, (err, address, family) => {
      if (err) return callback(err, address as string, family)
      const all = Array.isArray(address) ? address.map((a: LookupAddress) => a.address) : [address]
      const refused = all.map((a) => socketRefusal(url, a, isPlatform)).find((r) => r !== null)
      if (refused) return callback(new PlatformAddressError(refused) as NodeJS.ErrnoException, '', 4)
      callback(null, address as string, family)
    })
  }
}
