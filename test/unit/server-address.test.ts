import { describe, expect, it } from 'vitest'
import { hostName } from '../../src/observe/otel-tracing.js'

describe("a SERVER span's server.address, from the Host header", () => {
  it('is the host without its port', () => {
    expect(hostName('gateway.internal:8080')).toBe('gateway.internal')
    expect(hostName('127.0.0.1:3000')).toBe('127.0.0.1')
    expect(hostName('gateway.internal')).toBe('gateway.internal')
  })

  it('is an IPv6 address without its brackets or port', () => {
    expect(hostName('[::1]:8080')).toBe('::1')
    expect(hostName('[2001:db8::1]')).toBe('2001:db8::1')
  })

  it('is none for a missing or empty header', () => {
    expect(hostName(undefined)).toBeNull()
    expect(hostName('')).toBeNull()
    expect(hostName(':8080')).toBeNull()
    expect(hostName('[]')).toBeNull()
  })
})
