import { describe, expect, it } from 'vitest'
import { webhookRefusal } from '../../src/config/webhook-hosts.js'
import { literalOf, platformSockets, socketRefusal } from '../../src/jobs/webhook-target.js'

// Where a webhook may point: by its host name against the allow-list and the platform's
// names, and by its address against the platform's sockets as resolved (a fixed lookup here).

const resolve = async (host: string): Promise<string[]> => ({ 'platform.internal': ['10.0.0.7', 'fd00::7'] })[host] ?? []

describe('webhook targets', () => {
  it('refuses a URL by its name: not allowed, the platform\'s, with a user, another scheme', () => {
    expect(webhookRefusal('https://hooks.example.org/x', ['hooks.example.org'], ['platform.internal'])).toBeNull()
    expect(webhookRefusal('https://HOOKS.example.org/x', ['hooks.example.org'], [])).toBeNull()
    expect(webhookRefusal('https://other.example.org/x', ['hooks.example.org'], [])).toMatch(/not in jobs.webhookHosts/)
    expect(webhookRefusal('https://platform.internal/x', ['platform.internal'], ['platform.internal'])).toMatch(/platform's own host/)
    expect(webhookRefusal('https://u:p@hooks.example.org/x', ['hooks.example.org'], [])).toMatch(/credentials/)
    expect(webhookRefusal('gopher://hooks.example.org/x', ['hooks.example.org'], [])).toMatch(/only http and https/)
  })

  it('says, of a platform on loopback (the sandbox on a laptop), how a receiver on the same machine is named', () => {
    // The name is refused whatever the port; another name of the machine at another port is
    // another service, which each attempt's socket check lets through.
    expect(webhookRefusal('http://127.0.0.1:9000/hooks', ['127.0.0.1'], ['127.0.0.1'])).toMatch(/127\.0\.0\.1 is the platform's own host, .*; on the platform's own machine, name the receiver otherwise: http:\/\/localhost:<its port>\/…, with localhost in jobs\.webhookHosts$/)
    expect(webhookRefusal('http://localhost:9000/hooks', ['localhost'], ['localhost'])).toMatch(/; on the platform's own machine, name the receiver otherwise: http:\/\/127\.0\.0\.1:<its port>\/…, with 127\.0\.0\.1 in jobs\.webhookHosts$/)
    expect(webhookRefusal('http://[::1]:9000/hooks', ['[::1]'], ['[::1]'])).toMatch(/name the receiver otherwise: http:\/\/localhost:<its port>\/…/)
    expect(webhookRefusal('https://platform.internal/x', ['platform.internal'], ['platform.internal'])).toMatch(/; point the webhook at a receiver on another host$/)
  })

  it('knows the platform\'s sockets by address and port, an IPv4 address in its IPv6-mapped spelling too', async () => {
    const isPlatform = await platformSockets(['https://platform.internal', 'http://127.0.0.1:8080'], resolve)
    expect(isPlatform('10.0.0.7', 443)).toBe(true)
    expect(isPlatform('fd00::7', 443)).toBe(true)
    expect(isPlatform('::ffff:10.0.0.7', 443)).toBe(true)
    expect(isPlatform('10.0.0.7', 80)).toBe(false)
    expect(isPlatform('127.0.0.1', 8080)).toBe(true)
    expect(isPlatform('::ffff:7f00:1', 8080)).toBe(true)
    expect(isPlatform('10.0.0.9', 443)).toBe(false)
  })

  it('takes a platform on this host to be at every address of this host at its port: loopback, unspecified, its interfaces', async () => {
    const isPlatform = await platformSockets(['http://127.0.0.1:8080'], resolve, ['192.168.5.4', 'fe80::5'])
    for (const address of ['127.0.0.1', '127.0.0.2', '127.255.0.9', '0.0.0.0', '::ffff:0.0.0.0', '::1', '::', '192.168.5.4', 'fe80::5']) expect(isPlatform(address, 8080), address).toBe(true)
    expect(isPlatform('0.0.0.0', 8081)).toBe(false)
    expect(isPlatform('10.0.0.7', 8080)).toBe(false)
    const atInterface = await platformSockets(['http://192.168.5.4:8080'], resolve, ['192.168.5.4'])
    expect(atInterface('0.0.0.0', 8080)).toBe(true)
    expect(atInterface('127.0.0.1', 8080)).toBe(true)
    const elsewhere = await platformSockets(['https://platform.internal'], resolve, ['192.168.5.4'])
    for (const address of ['127.0.0.1', '0.0.0.0', '::', '192.168.5.4']) expect(elsewhere(address, 443), address).toBe(false)
  })

  it('names the sockets it checks against: the same key for the same resolution in any order, another for another', async () => {
    const bases = ['https://platform.internal', 'http://127.0.0.1:8080']
    const key = (await platformSockets(bases, resolve)).key
    expect((await platformSockets([...bases].reverse(), resolve)).key).toBe(key)
    expect((await platformSockets(bases, async () => ['10.0.0.8'])).key).not.toBe(key)
    expect((await platformSockets(['https://platform.internal:8443', 'http://127.0.0.1:8080'], resolve)).key).not.toBe(key)
  })

  it('refuses an address literal of the platform\'s socket, whatever name the platform is given', async () => {
    const isPlatform = await platformSockets(['https://platform.internal'], resolve)
    for (const url of ['https://10.0.0.7/hook', 'https://[::ffff:10.0.0.7]/hook', 'https://[fd00::7]:443/hook', 'https://167772167/hook']) {
      const parsed = new URL(url)
      const literal = literalOf(parsed)
      expect(literal, url).not.toBeNull()
      expect(socketRefusal(parsed, literal as string, isPlatform), url).toMatch(/resolves to the platform's address/)
    }
    // The socket as a URL writes it: an IPv6 address in brackets before its port (host-port.ts).
    expect(socketRefusal(new URL('https://[fd00::7]/hook'), 'fd00::7', isPlatform)).toBe("[fd00::7] resolves to the platform's address ([fd00::7]:443)")
    expect(socketRefusal(new URL('https://hooks.example.org/hook'), '::ffff:10.0.0.7', isPlatform)).toBe("hooks.example.org resolves to the platform's address ([::ffff:10.0.0.7]:443)")
    const elsewhere = new URL('https://10.0.0.7:8443/hook')
    expect(socketRefusal(elsewhere, literalOf(elsewhere) as string, isPlatform)).toBeNull()
    expect(literalOf(new URL('https://hooks.example.org/'))).toBeNull()
  })

  it("refuses a link-local address (a cloud's instance metadata) and the metadata and credential services clouds keep elsewhere, by literal or by what a name resolves to", async () => {
    const isPlatform = await platformSockets(['https://platform.internal'], resolve)
    const linkLocal = /resolves to a link-local address \(.+\): an instance's metadata service lives there, never a receiver/
    const cloudService = /resolves to a cloud's metadata or credential service \(.+\), never a receiver/
    for (const [url, address, refusal] of [
      ['http://169.254.169.254/latest/meta-data', '169.254.169.254', linkLocal],
      ['https://hooks.example.org/hook', '169.254.170.2', linkLocal],
      ['https://[fe80::1]/hook', 'fe80::1', linkLocal],
      ['https://hooks.example.org/hook', '::ffff:169.254.169.254', linkLocal],
      // AWS's instance metadata over IPv6 and its EKS Pod Identity agent; Alibaba Cloud's instance metadata.
      ['http://[fd00:ec2::254]/latest/meta-data/iam/security-credentials/', 'fd00:ec2::254', cloudService],
      ['https://hooks.example.org/hook', 'fd00:ec2::254', cloudService],
      ['https://hooks.example.org/hook', 'fd00:ec2::23', cloudService],
      ['http://100.100.100.200/latest/meta-data/', '100.100.100.200', cloudService],
      ['https://hooks.example.org/hook', '::ffff:100.100.100.200', cloudService],
      // Azure's WireServer (the VM agent's endpoint, whose answers carry extensions' settings).
      ['http://168.63.129.16/machine?comp=goalstate', '168.63.129.16', cloudService],
      ['https://hooks.example.org/hook', '::ffff:168.63.129.16', cloudService],
      // Google Cloud's metadata server over IPv6, Scaleway's instance metadata over IPv6,
      // Oracle Cloud Classic's instance metadata (outside link-local, each).
      ['http://[fd20:ce::254]/computeMetadata/v1/', 'fd20:ce::254', cloudService],
      ['https://hooks.example.org/hook', 'fd20:ce::254', cloudService],
      ['https://hooks.example.org/hook', 'fd00:42::42', cloudService],
      // Oracle Cloud's, Akamai's (Linode's) and Alibaba Cloud's instance metadata over IPv6.
      ['http://[fd00:c1::a9fe:a9fe]/opc/v2/instance/', 'fd00:c1::a9fe:a9fe', cloudService],
      ['https://hooks.example.org/hook', 'fd00:a9fe:a9fe::1', cloudService],
      ['https://hooks.example.org/hook', 'fd00:100::100:200', cloudService],
      ['http://192.0.0.192/latest/', '192.0.0.192', cloudService],
      ['https://hooks.example.org/hook', '::ffff:192.0.0.192', cloudService],
      ['https://hooks.example.org/hook', '64:ff9b::c000:c0', cloudService],
      // The same services through a NAT64 gateway's well-known prefix (RFC 6052), as a DNS64 resolver answers.
      ['https://hooks.example.org/hook', '64:ff9b::a9fe:a9fe', linkLocal],
      ['https://[64:ff9b::169.254.169.254]/hook', '64:ff9b::169.254.169.254', linkLocal],
      ['https://hooks.example.org/hook', '64:ff9b::6464:64c8', cloudService],
      ['https://hooks.example.org/hook', '64:ff9b::a83f:8110', cloudService],
    ] as const) {
      expect(socketRefusal(new URL(url), address, isPlatform), `${url} at ${address}`).toMatch(refusal)
    }
    for (const address of ['10.0.0.9', 'fd00:ec2::1', 'fd00::254', '100.100.100.201', '100.64.0.1', '64:ff9b::a00:9', '64:ff9b::6464:64c9', 'fd20:ce::253', 'fd00:42::41', 'fd00:c1::a9fe:a9ff', 'fd00:a9fe:a9fe::2', 'fd00:100::100:201', '192.0.0.193']) expect(socketRefusal(new URL('https://hooks.example.org/hook'), address, isPlatform), address).toBeNull()
  })

  // Every IPv6 address a translator or tunnel delivers to an IPv4 address it carries: that
  // IPv4 address is checked as if it were resolved itself.
  it('refuses an IPv6 address that carries a refused IPv4 address: NAT64 local-use prefixes (RFC 8215) at every RFC 6052 length, 6to4, Teredo, IPv4-compatible and -translated', async () => {
    const isPlatform = await platformSockets(['https://platform.internal'], resolve)
    const hook = new URL('https://hooks.example.org/hook')
    for (const [address, refusal] of [
      // 169.254.169.254 under 64:ff9b:1::/48 as a /96, /64, /56 and /48 NAT64 prefix (the u octet, bits 64-71, zero).
      ['64:ff9b:1::a9fe:a9fe', /link-local/],
      ['64:ff9b:1:2:3:4:169.254.169.254', /link-local/],
      ['64:ff9b:1:0:a9:fea9:fe00:0', /link-local/],
      ['64:ff9b:1:a9:fe:a9fe::', /link-local/],
      ['64:ff9b:1:a9fe:a9:fea9:fe00:0', /link-local/],
      ['64:ff9b:1:a9fe:a9fe:0:a9fe:a9fe', /link-local/],
      ['64:ff9b:1:6464:64:c800::', /cloud's metadata/],
      ['64:ff9b:1::a00:7', /platform's address/],
      ['64:ff9b::a00:7', /platform's address/],
      // 6to4 (RFC 3056): 2002:<IPv4>::/48.
      ['2002:a9fe:a9fe::1', /link-local/],
      ['2002:a83f:8110:1::5', /cloud's metadata/],
      ['2002:a00:7::1', /platform's address/],
      // Teredo (RFC 4380): 2001:0:<server IPv4>:<flags>:<port>:<client IPv4, inverted>.
      ['2001:0:4136:e378:8000:63bf:5601:5601', /link-local/],
      ['2001:0:a9fe:a9fe:8000:63bf:3fff:fffe', /link-local/],
      // IPv4-compatible (::a.b.c.d, RFC 4291) and IPv4-translated (::ffff:0:a.b.c.d, RFC 2765).
      ['::169.254.169.254', /link-local/],
      ['::a9fe:a9fe', /link-local/],
      ['::ffff:0:a9fe:a9fe', /link-local/],
      ['::100.100.100.200', /cloud's metadata/],
      ['::10.0.0.7', /platform's address/],
    ] as const) {
      expect(socketRefusal(hook, address, isPlatform), address).toMatch(refusal)
    }
    // The IPv4 address each carries is named.
    expect(socketRefusal(hook, '2002:a9fe:a9fe::1', isPlatform)).toContain('169.254.169.254')
    // Receivers at addresses that carry none refused.
    for (const address of ['64:ff9b:1::a00:9', '64:ff9b:1:a00:9::', '2002:a00:9::1', '2001:0:4136:e378:8000:63bf:f5ff:fff6', '::10.0.0.9', '2001:db8::a9fe:a9fe', '2a00:1450::a9fe:a9fe', '::', '::1']) {
      expect(socketRefusal(hook, address, isPlatform), address).toBeNull()
    }
  })
})
