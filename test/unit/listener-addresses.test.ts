import { describe, expect, it } from 'vitest'
import { bindingsOverlap, listenerAddressProblem, listenHostFault } from '../../src/config/listener-addresses.js'

// Two listeners on one port: whether the second can bind beside the first, from the
// addresses each binds (a name resolved as Node's listen resolves it).

describe('bindingsOverlap', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['::1', '0:0:0:0:0:0:0:1'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['::FFFF:7F00:1', '127.0.0.1'],
    ['0.0.0.0', '10.1.2.3'],
    ['::', '127.0.0.1'],
    ['::', '::1'],
    ['0.0.0.0', '::'],
    ['0.0.0.0', '::ffff:10.1.2.3'],
  ])('%s and %s overlap', (a, b) => {
    expect(bindingsOverlap(a, b)).toBe(true)
    expect(bindingsOverlap(b, a)).toBe(true)
  })

  it.each([
    ['127.0.0.1', '127.0.0.2'],
    ['127.0.0.1', '::1'],
    // IPv4's wildcard leaves IPv6 addresses free (bound side by side on Linux).
    ['0.0.0.0', '::1'],
    ['10.1.2.3', '10.1.2.4'],
  ])('%s and %s can both bind', (a, b) => {
    expect(bindingsOverlap(a, b)).toBe(false)
    expect(bindingsOverlap(b, a)).toBe(false)
  })
})

describe('listenerAddressProblem', () => {
  const at = (host: string, adminHost: string, port = 8080, adminPort = port) => ({ host, port, admin: { host: adminHost, port: adminPort } })
  const names: Record<string, string> = { localhost: '127.0.0.1', 'pod.example': '10.1.2.3' }
  const resolve = async (name: string) => {
    const address = names[name]
    if (address === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' })
    return address
  }

  it('names both settings when a name resolves to the other listener\'s address on the same port', async () => {
    expect(await listenerAddressProblem(at('localhost', '127.0.0.1'), resolve)).toBe(
      'ADMIN_PORT: the same port as PORT (8080), on addresses that overlap (ADMIN_HOST 127.0.0.1, HOST localhost): the admin listener cannot bind beside the proxy listener; set another ADMIN_PORT (default 8081)',
    )
    expect(await listenerAddressProblem(at('0.0.0.0', 'pod.example'), resolve)).not.toBeNull()
  })

  it('says nothing on two ports, on port 0 (each its own), at addresses that do not overlap, or for a name that does not resolve (the listen says so)', async () => {
    expect(await listenerAddressProblem(at('localhost', '127.0.0.1', 8080, 8081), resolve)).toBeNull()
    expect(await listenerAddressProblem(at('0.0.0.0', '0.0.0.0', 0), resolve)).toBeNull()
    expect(await listenerAddressProblem(at('localhost', '::1'), resolve)).toBeNull()
    expect(await listenerAddressProblem(at('nowhere.example', '127.0.0.1'), resolve)).toBeNull()
  })
})

// What a listener binds as written: an IP address, or a name it resolves.
describe('listenHostFault', () => {
  it.each(['0.0.0.0', '127.0.0.1', '::', '::1', 'fe80::1%eth0', '::ffff:10.1.2.3', 'localhost', 'report-gateway-0.report-gateway.reports.svc.cluster.local', 'host_1.', 'gw'])('%s is listened on', (host) => {
    expect(listenHostFault(host, 'HOST', 'PORT')).toBeNull()
  })

  it.each([
    ['127.0.0.1 ', 'it has spaces at its ends; remove them'],
    [' ', 'it has spaces at its ends; remove them'],
    ['0.0.0.0:8080', 'write the port in PORT'],
    ['localhost:', 'write the port in PORT'],
    ['http://0.0.0.0', 'write the host alone, without a scheme or path'],
    ['gw/', 'write the host alone, without a scheme or path'],
    ['gw..svc', 'write an IP address or a name of letters, digits, - and dots'],
    ['-gw', 'write an IP address or a name of letters, digits, - and dots'],
    ['999.1.1.1', 'its last part is a number, so it is no host name, and it is no IPv4 address (four numbers from 0 to 255, e.g. 127.0.0.1)'],
    ['0.0.0.0.0', 'its last part is a number, so it is no host name, and it is no IPv4 address (four numbers from 0 to 255, e.g. 127.0.0.1)'],
    ['10.0.0.256', 'its last part is a number, so it is no host name, and it is no IPv4 address (four numbers from 0 to 255, e.g. 127.0.0.1)'],
    ['127.1', 'its last part is a number, so it is no host name; a URL reads it as the IPv4 address 127.0.0.1: write that'],
    ['0x7f.0.0.1', 'its last part is a number, so it is no host name; a URL reads it as the IPv4 address 127.0.0.1: write that'],
  ])('%j is refused: %s', (host, why) => {
    expect(listenHostFault(host, 'HOST', 'PORT')).toBe(`HOST: ${JSON.stringify(host)} is not an address to listen on (an IP address, IPv6 without brackets, or a host name): ${why}`)
  })

  it('names an IPv6 address in brackets and how to write it', () => {
    expect(listenHostFault('[::1]', 'ADMIN_HOST', 'ADMIN_PORT')).toBe('ADMIN_HOST: [::1] is an IPv6 address in brackets, as a URL writes it; write it without them (::1)')
  })
})
