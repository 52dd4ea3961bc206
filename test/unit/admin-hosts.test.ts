import { describe, expect, it } from 'vitest'
import { AdminHosts, hostName } from '../../src/access/admin-hosts.js'

describe('the Host the admin listener answers to (AdminHosts)', () => {
  const hosts = new AdminHosts(['Report-Gateway-Admin.reports.svc.', 'gw.internal', '10.0.0.9'])

  it('answers no Host, an IPv4 address, an IPv6 address in brackets and localhost, with a port or none', () => {
    for (const host of [undefined, '', '127.0.0.1', '127.0.0.1:8081', '10.1.2.3', '[::1]', '[::1]:8081', '[fe80::1]', '[::ffff:127.0.0.1]:1', 'localhost', 'localhost:9000']) {
      expect(hosts.refused(host), String(host)).toBeNull()
    }
  })

  it('answers a listed name in any case, with or without the trailing dot, on either side', () => {
    for (const host of ['report-gateway-admin.reports.svc', 'REPORT-GATEWAY-ADMIN.REPORTS.SVC.:8081', 'gw.internal.', 'GW.Internal:80', 'LOCALHOST.', 'Localhost.:8081']) {
      expect(hosts.refused(host), host).toBeNull()
    }
  })

  it('refuses any other name, a part or an extension of an answered one, and a Host of another shape; with the name as sent, without its port', () => {
    expect(hosts.refused('attacker.example:8081')).toBe('attacker.example')
    expect(hosts.refused('Attacker.Example.')).toBe('Attacker.Example.')
    for (const host of ['127.0.0.1.nip.io', 'localhost.attacker.example', 'a.localhost', 'reports.svc', 'gw.internal.evil', 'xgw.internal', '::1', '[::1', '[::1]x', '[127.0.0.1]', '[::1]:80:80', 'localhost:', 'localhost:port', 'localhost:123456', ':8081', '2130706433', '0x7f000001']) {
      expect(hosts.refused(host), host).not.toBeNull()
    }
  })

  it('repeats no more of a refused name than a DNS name holds', () => {
    expect(hosts.refused(`${'a'.repeat(400)}.example`)).toHaveLength(253)
  })

  it('compares names in lower case without the root\'s dot', () => {
    expect(hostName('Admin.Example.')).toBe('admin.example')
    expect(hostName('admin')).toBe('admin')
  })
})
