import { describe, expect, it } from 'vitest'
import { assertHopSafe, connectionOptions } from '../../src/access/connection-options.js'

// RFC 9110, 7.6.1: the header names a request's Connection lists, and the refusal of one the gateway reads.

describe('connectionOptions', () => {
  it.each([
    [undefined, []],
    ['close', []],
    ['Keep-Alive', []],
    ['keep-alive, X-Foo', ['x-foo']],
    ['close,Accept-Language ,  user-agent,', ['accept-language', 'user-agent']],
    ['Upgrade, HTTP2-Settings', ['upgrade', 'http2-settings']],
  ])('%s lists %j', (connection, names) => {
    expect(connectionOptions(connection === undefined ? {} : { connection })).toEqual(names)
  })
})

describe('assertHopSafe', () => {
  it('refuses a Connection naming a header the gateway reads, in any case, naming it in lower case', () => {
    expect(() => assertHopSafe({ connection: 'close, X-API-Key' })).toThrow(expect.objectContaining({ code: 'GW_BAD_REQUEST', statusCode: 400, message: expect.stringMatching(/^connection: names x-api-key, /) }))
    for (const name of ['authorization', 'content-type', 'content-length', 'transfer-encoding', 'host', 'pragma', 'if-none-match', 'prefer']) {
      expect(() => assertHopSafe({ connection: `keep-alive, ${name}` }), name).toThrow(/^connection: names /)
    }
  })

  it('takes a Connection naming only headers the gateway does not read', () => {
    for (const connection of ['close', 'keep-alive, te', 'Upgrade, HTTP2-Settings', 'x-foo, accept-language']) expect(() => assertHopSafe({ connection })).not.toThrow()
  })
})
