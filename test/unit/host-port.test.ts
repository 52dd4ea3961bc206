import { describe, expect, it } from 'vitest'
import { hostPort } from '../../src/host-port.js'

describe('hostPort', () => {
  it.each([
    ['127.0.0.1', 8080, '127.0.0.1:8080'],
    ['0.0.0.0', 8081, '0.0.0.0:8081'],
    ['gateway.local', 80, 'gateway.local:80'],
    ['localhost', 0, 'localhost:0'],
    ['::1', 8080, '[::1]:8080'],
    ['::', 8081, '[::]:8081'],
    ['2001:db8::7', 6379, '[2001:db8::7]:6379'],
    ['::ffff:127.0.0.1', 26379, '[::ffff:127.0.0.1]:26379'],
  ])('writes %s and port %s as a URL\'s authority: %s', (host, port, written) => {
    expect(hostPort(host, port)).toBe(written)
    expect(new URL(`http://${written}`).port).toBe(port === 80 ? '' : String(port))
  })
})
