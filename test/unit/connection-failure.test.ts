import { describe, expect, it } from 'vitest'
import { connectionFailure } from '../../src/platform/client/connection-failure.js'

const failure = (code: unknown) => Object.assign(new Error('x'), { code })

describe('connectionFailure', () => {
  it("says a system error's code as it is, the HTTP client's own in words", () => {
    expect(connectionFailure(failure('ECONNREFUSED'))).toBe('ECONNREFUSED')
    expect(connectionFailure(failure('UND_ERR_SOCKET'))).toBe('connection reset')
    expect(connectionFailure(failure('UND_ERR_SOMETHING_NEW'))).toBe('connection error')
    expect(connectionFailure(failure(undefined))).toBe('connection error')
    expect(connectionFailure(null)).toBe('connection error')
  })

  it('says a TLS handshake answered in plain HTTP is that, beside its code', () => {
    for (const code of ['ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_PACKET_LENGTH_TOO_LONG', 'ERR_SSL_HTTP_REQUEST']) {
      expect(connectionFailure(failure(code))).toBe(`${code} (TLS failed: the platform's address answers in plain HTTP, not TLS)`)
    }
    expect(connectionFailure(failure('ERR_SSL_WRONG_VERSION_NUMBER'), "the receiver's address")).toBe("ERR_SSL_WRONG_VERSION_NUMBER (TLS failed: the receiver's address answers in plain HTTP, not TLS)")
    expect(connectionFailure(failure('ERR_TLS_CERT_ALTNAME_INVALID'))).toBe('ERR_TLS_CERT_ALTNAME_INVALID')
  })
})
