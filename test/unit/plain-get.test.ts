import { describe, expect, it } from 'vitest'
import { KEPT_HEAD_MAX, PLAIN_HEAD_MAX, PlainGets, readPlainGet } from '../../src/http/plain-get.js'

// Which heads are read here, and which are left to Node's parser. That a head read here
// is read the same by Node: test/property/plain-heads.test.ts.

const read = (text: string) => readPlainGet(Buffer.from(text, 'latin1'), 0)
const get = (lines: string[]) => `GET /api/v1/report/x?a=1 HTTP/1.1\r\n${lines.map((l) => `${l}\r\n`).join('')}\r\n`

describe('a plain GET read on the connection', () => {
  it('is read whole: its target, its headers by lower-cased name, where it ends', () => {
    const text = get(['Host: gw.local', 'X-Api-Key: team-a-key', 'connection: Keep-Alive', 'x-empty:', 'X-Tab:a\tb'])
    expect(read(text)).toEqual({ url: '/api/v1/report/x?a=1', headers: { host: 'gw.local', 'x-api-key': 'team-a-key', connection: 'Keep-Alive', 'x-empty': '', 'x-tab': 'a\tb' }, length: text.length })
  })

  it('ends a head at its empty line: what follows is the next request', () => {
    const first = get(['Host: h'])
    const both = Buffer.from(`${first}GET /api/v1/report/y HTTP/1.1\r\nHost: h\r\n\r\n`, 'latin1')
    const one = readPlainGet(both, 0)
    expect(one?.length).toBe(first.length)
    expect(readPlainGet(both, one?.length ?? 0)?.url).toBe('/api/v1/report/y')
  })

  it('knows a head again by its bytes on one connection, and reads any other anew', () => {
    const heads = new PlainGets()
    const asked = get(['Host: h', 'X-Api-Key: k'])
    const twice = Buffer.from(`${asked}${asked}`, 'latin1')
    const first = heads.read(twice, 0)
    // The same bytes, after the first: the same head, its headers frozen (one head serves both).
    expect(heads.read(twice, asked.length)).toBe(first)
    expect(Object.isFrozen(first?.headers)).toBe(true)
    // One byte changed: read anew, and kept in its place.
    const other = Buffer.from(asked.replace('X-Api-Key: k', 'X-Api-Key: j'), 'latin1')
    expect(heads.read(other, 0)).toMatchObject({ headers: { 'x-api-key': 'j' } })
    expect(heads.read(Buffer.from(asked, 'latin1'), 0)).not.toBe(first)
    // A head the reader would not take (too long for the limit asked) is not taken for being known.
    expect(heads.read(Buffer.from(asked, 'latin1'), 0, 10)).toBeNull()
    // A head past KEPT_HEAD_MAX is read, not kept.
    const long = Buffer.from(get(['Host: h', `X-Pad: ${'a'.repeat(KEPT_HEAD_MAX)}`]), 'latin1')
    const once = heads.read(long, 0)
    expect(once).not.toBeNull()
    expect(heads.read(long, 0)).not.toBe(once)
  })

  // Each of these is read by Node's parser, which frames, folds, refuses or reads it in its own way: never here.
  const left = {
    'a head not whole yet': 'GET /api/v1/report/x HTTP/1.1\r\nHost: h\r\n',
    'another method': 'POST /api/v1/report/x HTTP/1.1\r\nHost: h\r\n\r\n',
    HEAD: 'HEAD /api/v1/report/x HTTP/1.1\r\nHost: h\r\n\r\n',
    'a method in lower case': 'get /api/v1/report/x HTTP/1.1\r\nHost: h\r\n\r\n',
    'HTTP/1.0': 'GET /api/v1/report/x HTTP/1.0\r\nHost: h\r\n\r\n',
    'two spaces in the request line': 'GET  /api/v1/report/x HTTP/1.1\r\nHost: h\r\n\r\n',
    'an absolute target': 'GET http://h/api/v1/report/x HTTP/1.1\r\nHost: h\r\n\r\n',
    'a target with a fragment': 'GET /api/v1/report/x#f HTTP/1.1\r\nHost: h\r\n\r\n',
    'a target with a quote': 'GET /api/v1/report/x"y HTTP/1.1\r\nHost: h\r\n\r\n',
    'a target past ASCII': 'GET /api/v1/report/\xe9 HTTP/1.1\r\nHost: h\r\n\r\n',
    'content-length: 0': get(['Host: h', 'Content-Length: 0']),
    'content-length with a body': `${get(['Host: h', 'Content-Length: 44'])}GET /api/v1/report/smuggled HTTP/1.1\r\n\r\n`,
    'transfer-encoding': get(['Host: h', 'Transfer-Encoding: chunked']),
    'transfer-encoding with a space before its colon': get(['Host: h', 'Transfer-Encoding : chunked']),
    'an obsolete line fold': get(['Host: h', 'X-Api-Key: a', ' b']),
    'a header line ending in a bare LF': 'GET /api/v1/report/x HTTP/1.1\r\nHost: h\nTransfer-Encoding: chunked\r\n\r\n',
    'a bare CR in a value': get(['Host: h', 'X-Api-Key: a\rb']),
    'a NUL in a value': get(['Host: h', 'X-Api-Key: a\x00b']),
    'a value past ASCII': get(['Host: h', 'X-Api-Key: \xe9']),
    'two Hosts': get(['Host: a', 'Host: b']),
    'two Authorizations': get(['Host: h', 'Authorization: Bearer a', 'authorization: Bearer b']),
    'two keys': get(['Host: h', 'X-Api-Key: a', 'x-api-key: b']),
    'two spaces before a value': get(['Host: h', 'X-Api-Key:  a']),
    'a tab before a value': get(['Host: h', 'X-Api-Key:\ta']),
    'a space after a value': get(['Host: h', 'X-Api-Key: a ']),
    'a line without a colon': get(['Host: h', 'X-Api-Key a']),
    'an empty name': get(['Host: h', ': a']),
    'connection: close': get(['Host: h', 'Connection: close']),
    'connection: upgrade': get(['Host: h', 'Connection: Upgrade', 'Upgrade: h2c']),
    'expect: 100-continue': get(['Host: h', 'Expect: 100-continue']),
    te: get(['Host: h', 'TE: trailers']),
    'a header named __proto__': get(['Host: h', '__proto__: a']),
    'a head past the limit': get(['Host: h', `X-Pad: ${'a'.repeat(PLAIN_HEAD_MAX)}`]),
  }
  it.each(Object.entries(left))('leaves %s to Node', (_, text) => {
    expect(read(text)).toBeNull()
  })

  it('takes no head longer than it is told', () => {
    const text = get(['Host: h', `X-Pad: ${'a'.repeat(100)}`])
    expect(readPlainGet(Buffer.from(text), 0, 100)).toBeNull()
    expect(readPlainGet(Buffer.from(text), 0, 200)).not.toBeNull()
  })
})
