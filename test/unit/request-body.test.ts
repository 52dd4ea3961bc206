import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { assertPlainBodyType, jsonRefusal, multipartNames, parseFormBody, parseJsonBody, parsingJsonBody, scanJson, SOURCE_VALUES } from '../../src/access/request-body.js'
import { phpLineBytes } from '../../src/php/mime.js'

// Bodies are parsed, bounded and re-serialized by the gateway.

const LIMITS = { jsonDepth: 32, params: 256 }
const bad = expect.objectContaining({ code: 'GW_BAD_REQUEST', statusCode: 400 })

describe('parseJsonBody', () => {
  it('re-serializes what it parsed: whitespace, escapes and duplicate keys as the parse has them', () => {
    const body = parseJsonBody(Buffer.from('{ "userId" :  101 , "name":"k\\u00e9y", "userId": 102 }'), LIMITS)
    expect(body).toEqual({ kind: 'json', value: { userId: 102, name: 'kéy' }, text: '{"userId":102,"name":"kéy"}', contentType: 'application/json', values: 7, containers: 1 })
  })

  it.each([
    ['nesting past the limit', '['.repeat(33) + ']'.repeat(33)],
    ['a 200k-deep array', '['.repeat(200_000) + ']'.repeat(200_000)],
    ['invalid JSON', '{"userId":101'],
    ['_method at the top', '{"_method":"DELETE","userId":101}'],
    ['an unpaired surrogate escape in a value (PHP reads no body then)', '{"userId":101,"x":["\\ud800"]}'],
    ['an unpaired low surrogate escape', '{"userId":101,"x":"\\udc00\\ud800"}'],
    ['an unpaired surrogate escape in a key', '{"userId":101,"\\udfff":1}'],
    ['an unpaired surrogate escaped in upper-case hex', '{"userId":101,"x":"\\uDBFF"}'],
    ['an unpaired surrogate escape at the end of a long list of strings', `{"userId":101,"x":[${'"ab",'.repeat(100_000)}"\\uD800"]}`],
  ])('refuses %s', (_name, text) => {
    expect(() => parseJsonBody(Buffer.from(text), LIMITS)).toThrow(bad)
  })

  // PHP reads `1.0` as a float and `1` as an int, a 20-digit integer as a float, `1e400` as
  // INF: a number written again from a double would say something else to the platform.
  it('passes every number on as the caller wrote it', () => {
    const text = '{"userId":101,"ref":12345678901234567890,"bid":1e400,"price":0.30000000000000004441,"n":-0,"f":1.0,"e":1.02E5,"a":[2.50,-3]}'
    const body = parseJsonBody(Buffer.from(text), LIMITS)
    expect(body.text).toBe(text)
    expect(body.kind === 'json' && body.value).toEqual({ userId: 101, ref: Number('12345678901234567890'), bid: Infinity, price: 0.30000000000000004, n: -0, f: 1, e: 102000, a: [2.5, -3] })
  })

  // Between ±2^53 and a 64-bit int, PHP holds the integer exactly and JavaScript the double
  // nearest it: the platform would read another number than the one the checks read.
  it.each(['9007199254740992', '-9007199254740993', '9223372036854775807', '-9223372036854775808'])('refuses the integer %s, which PHP holds exactly and a double does not', (n) => {
    expect(() => parseJsonBody(Buffer.from(`{"userId":101,"ref":${n}}`), LIMITS)).toThrow(expect.objectContaining({ code: 'GW_BAD_REQUEST', message: expect.stringContaining(`the integer ${n} is past ±2^53`) }))
  })

  it('takes the integers either side of that range as they are', () => {
    for (const n of ['9007199254740991', '-9007199254740991', '9223372036854775808', '-9223372036854775809']) {
      expect(parseJsonBody(Buffer.from(`{"ref":${n}}`), LIMITS).text, n).toBe(`{"ref":${n}}`)
    }
  })

  it('accepts nesting up to the limit, brackets inside strings not counted', () => {
    expect(() => parseJsonBody(Buffer.from('['.repeat(32) + ']'.repeat(32)), LIMITS)).not.toThrow()
    expect(() => parseJsonBody(Buffer.from(`{"s":"${'['.repeat(100)}\\"["}`), LIMITS)).not.toThrow()
  })

  it('accepts a backslash before u and a surrogate\'s hex, which escapes no surrogate', () => {
    expect(parseJsonBody(Buffer.from('{"userId":101,"x":"\\\\ud800"}'), LIMITS).text).toBe('{"userId":101,"x":"\\\\ud800"}')
  })

  it('accepts a surrogate pair escaped, as PHP reads it too', () => {
    expect(parseJsonBody(Buffer.from('{"userId":101,"x":"\\ud83d\\ude00"}'), LIMITS).text).toBe('{"userId":101,"x":"\u{1F600}"}')
  })

  it('refuses invalid UTF-8', () => {
    expect(() => parseJsonBody(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), LIMITS)).toThrow(bad)
  })

  it('counts object keys over the whole document, not array items', () => {
    const many = JSON.stringify({ a: Array.from({ length: 200 }, (_, i) => ({ [`k${i}`]: i })) })
    expect(() => parseJsonBody(Buffer.from(many), LIMITS)).not.toThrow()
    const tooMany = JSON.stringify({ a: Array.from({ length: 256 }, (_, i) => ({ [`k${i}`]: i })) })
    expect(() => parseJsonBody(Buffer.from(tooMany), LIMITS)).toThrow(bad)
    expect(() => parseJsonBody(Buffer.from(JSON.stringify({ ids: Array.from({ length: 5000 }, (_, i) => i) })), LIMITS)).not.toThrow()
  })
})

describe('parsingJsonBody: the parse in pieces, between which the event loop is free', () => {
  /** The pieces' yields, and what the parse returned. */
  const drained = <T,>(work: Generator<void, T>): [yields: number, found: T] => {
    let yields = 0
    for (let step = work.next(); ; step = work.next(), yields++) if (step.done === true) return [yields, step.value]
  }

  it('yields after its scan, after JSON.parse and after the walk of what it parsed, and returns what parseJsonBody returns', () => {
    const text = `{"userId":101,"x":[${'1,"ab",'.repeat(1000)}2.50]}`
    expect(drained(parsingJsonBody(Buffer.from(text), { ...LIMITS, params: 100_000 }))).toEqual([3, parseJsonBody(Buffer.from(text), { ...LIMITS, params: 100_000 })])
  })

  it('refuses in the piece that finds it: nesting in its first', () => {
    const deep = parsingJsonBody(Buffer.from('['.repeat(33) + ']'.repeat(33)), LIMITS)
    expect(() => deep.next()).toThrow(bad)
  })
})

describe('jsonRefusal', () => {
  // The admin listener's JSON parser (secure-json-parse) refuses a body holding a
  // prototype's key; such a body is valid JSON, and the refusal names the key.
  it.each([
    ['{"level":"info","__proto__":{"x":1}}', '__proto__'],
    ['{"token":"t","constructor":{"prototype":{"x":1}}}', 'constructor'],
    ['{"a":{"b":[{"__proto__":null}]}}', '__proto__'],
  ])('names the key of %s', (text, key) => {
    expect(jsonRefusal(text)).toBe(`body: ${key}: a key of a JavaScript object's prototype, which no call takes; nothing was changed`)
  })

  it.each([[''], ['{"level":'], ['{"level":"info"} x']])('says %j is not valid JSON', (text) => {
    expect(jsonRefusal(text)).toBe('body: not valid JSON')
  })
})

describe('parseFormBody', () => {
  it('re-encodes the parameters it checked', () => {
    expect(parseFormBody(Buffer.from('userId=101&name=a+b&x%5B%5D=1'), LIMITS)).toEqual({
      kind: 'form',
      params: [['userId', '101'], ['name', 'a b'], ['x[]', '1']],
      text: 'userId=101&name=a%20b&x[]=1',
      contentType: 'application/x-www-form-urlencoded',
    })
  })

  it('reads as URLSearchParams does where the escapes are UTF-8: `+`, %2B, a stray %, empty pairs, a name alone, a leading U+FEFF', () => {
    const text = 'a=x+%2B%2x&&b&c=%EF%BB%BF%C3%A9=%E2%82%AC'
    expect(parseFormBody(Buffer.from(text), LIMITS)).toMatchObject({ kind: 'form', params: [...new URLSearchParams(text)] })
  })

  it('reads the pairs of any mix of `&`, `=` and plain characters as URLSearchParams does, a MiB of `&` around them too', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('&', '=', 'a', 'b', '1'), maxLength: 40 }), (text) => {
        const pairs = [...new URLSearchParams(text)]
        // A pair of no name is refused (its name is not plain).
        if (pairs.some(([name]) => name === '')) expect(() => parseFormBody(Buffer.from(text), LIMITS)).toThrow(bad)
        else expect(parseFormBody(Buffer.from(text), LIMITS)).toMatchObject({ params: pairs })
      }),
      { numRuns: 500, seed: 142 },
    )
    const amps = '&'.repeat(1 << 19)
    expect(parseFormBody(Buffer.from(`${amps}userId=101${amps}x${amps}`), LIMITS)).toMatchObject({ params: [['userId', '101'], ['x', '']] })
  })

  it.each([
    ['a lone continuation byte in a value', 'userId=101&x=%80', 'body: the value of parameter 2 is not UTF-8'],
    ['a truncated sequence in a name', 'userId=101&%E2%82=1', 'body: the name of parameter 2 is not UTF-8'],
    ['an overlong slash', 'x=%C0%AF', 'body: the value of parameter 1 is not UTF-8'],
    ['an encoded surrogate', 'x=%ED%A0%80', 'body: the value of parameter 1 is not UTF-8'],
    ['a sequence broken by a plain character', 'x=%C3a%A9', 'body: the value of parameter 1 is not UTF-8'],
  ])('refuses escapes that are no UTF-8 (URLSearchParams would read U+FFFD): %s', (_name, text, message) => {
    expect(() => parseFormBody(Buffer.from(text), LIMITS)).toThrow(expect.objectContaining({ statusCode: 400, message: expect.stringContaining(message) as unknown }))
  })

  it.each([
    ['a leading space in a name', '%20userId=102'],
    ['a NUL in a name', 'userId%00=102'],
    ['_method', '_method=DELETE&userId=101'],
    ['more than the parameter limit', Array.from({ length: 1001 }, (_, i) => `p${i}=1`).join('&') + '&userId=101'],
  ])('refuses %s', (_name, text) => {
    expect(() => parseFormBody(Buffer.from(text), LIMITS)).toThrow(bad)
  })
})

describe('assertPlainBodyType', () => {
  it.each(['application/json', 'application/x-www-form-urlencoded', 'application/json; charset=utf-8', 'Application/JSON;charset="UTF-8"'])('accepts %s', (type) => {
    expect(() => assertPlainBodyType({ 'content-type': type })).not.toThrow()
  })

  it.each([
    'application/x-www-form-urlencoded; x=/json',
    'application/json; charset=latin1',
    'application/vnd.api+json',
    'text/plain',
    'multipart/form-data; boundary=x',
  ])('refuses %s', (type) => {
    expect(() => assertPlainBodyType({ 'content-type': type })).toThrow(bad)
  })

  it('refuses a missing type and a content-encoding', () => {
    expect(() => assertPlainBodyType({})).toThrow(bad)
    expect(() => assertPlainBodyType({ 'content-type': 'application/json', 'content-encoding': 'gzip' })).toThrow(bad)
  })

  it('for a call that reads JSON only, takes JSON alone and names only it', () => {
    expect(() => assertPlainBodyType({ 'content-type': 'application/json; charset=utf-8' }, true)).not.toThrow()
    expect(() => assertPlainBodyType({ 'content-type': 'application/x-www-form-urlencoded' }, true)).toThrow('body: must be application/json (with at most charset=utf-8)')
    expect(() => assertPlainBodyType({ 'content-type': 'application/vnd.api+json' }, true)).toThrow('body: must be application/json (with at most charset=utf-8)')
  })
})

describe('scanJson', () => {
  it('skips brackets in strings, escaped quotes included', () => {
    expect(scanJson(Buffer.from('{"a":[1,{"b":"]]]\\"[[["}]}')).depth).toBe(3)
  })

  it('counts values, keys included, and none in strings, and the objects and arrays among them', () => {
    expect(scanJson(Buffer.from('{"a":[1,-2.5,true,null,"x,1"],"b":{}}'))).toMatchObject({ values: 10, containers: 3 })
  })

  it('tells a number written otherwise than JSON.stringify writes it', () => {
    // 0.1 + 0.2 and Math.random()'s are written past 15 characters by JSON.stringify itself (found by a black-box pass, session 133).
    for (const n of ['1', '-7', '0.5', '123456789012345', '1e+21', '-0.001', String(0.1 + 0.2), '0.1234567890123456', String(-Math.PI / 1e7)]) expect(scanJson(Buffer.from(`[${n}]`)).numbersAsWritten, n).toBe(true)
    for (const n of ['1.0', '1e2', '0.50', '-0', '1E+21', '12345678901234567890', '9007199254740993', '1e400']) expect(scanJson(Buffer.from(`{"a":"1.0","b":${n}}`)).numbersAsWritten, n).toBe(false)
  })
})

describe('parseJsonBody: numbers as written, at a bounded price', () => {
  const limits = { jsonDepth: 32, params: 256 }
  // Its price: bench/body-parse-price.mjs.
  it('passes on a large body of numbers written as JSON writes them', () => {
    const body = Buffer.from(`{"userId":101,"x":[${Array(200_000).fill('0').join(',')}]}`)
    expect(parseJsonBody(body, limits).text).toBe(body.toString())
  })

  // Its price (no BigInt of a million digits): bench/body-parse-price.mjs.
  it('passes an integer longer than a 64-bit one on as written, and refuses one a 64-bit int holds past ±2^53', () => {
    const body = Buffer.from(`{"userId":101,"n":${'9'.repeat(1_000_000)}}`)
    expect(parseJsonBody(body, limits).text).toBe(body.toString())
    expect(parseJsonBody(Buffer.from('{"n":99999999999999999999}'), limits).text).toBe('{"n":99999999999999999999}')
    expect(() => parseJsonBody(Buffer.from('{"n":9223372036854775807}'), limits)).toThrow('the integer 9223372036854775807 is past ±2^53')
  })

  it('refuses a body of more than SOURCE_VALUES values with a number written otherwise, naming how to send it', () => {
    const body = Buffer.from(`{"userId":101,"x":[1.0,${Array(SOURCE_VALUES).fill('0').join(',')}]}`)
    expect(() => parseJsonBody(body, limits)).toThrow(`is passed on as written only in a body of at most ${SOURCE_VALUES} values, and this one has ${SOURCE_VALUES + 6}`)
    const small = Buffer.from(`{"userId":101,"x":[1.0,${Array(100).fill('0').join(',')}]}`)
    expect(parseJsonBody(small, limits).text).toBe(small.toString())
  })
})

describe('multipartNames', () => {
  const part = (disposition: string) => `--b\r\ncontent-disposition: ${disposition}\r\n\r\nx\r\n--b--\r\n`

  it('reads a name quoted either way, bare, or unclosed, as PHP does', () => {
    expect(multipartNames(part('form-data; name="a"'))).toEqual(['a'])
    expect(multipartNames(part("form-data; name='a b'"))).toEqual(['a b'])
    expect(multipartNames(part('form-data; name=a b'))).toEqual(['a'])
    expect(multipartNames(part('form-data; name="a'))).toEqual(['a'])
    expect(multipartNames(part('form-data; name="a\\"b"'))).toEqual(['a"b'])
    expect(multipartNames(part('form-data; NAME=a; Name=b'))).toEqual(['a', 'b'])
  })

  it('splits at a `;` outside quotes only', () => {
    expect(multipartNames(part('form-data; x="; name=y"; name="z"'))).toEqual(['z'])
    expect(multipartNames(part("form-data;; x='a;b' ;name=z"))).toEqual(['z'])
  })

  it('continues a header on a line that starts with white space or holds no colon, and ends it at an empty line', () => {
    expect(multipartNames('--b\r\nContent-Disposition: form-data\r\n; name="a\r\n\tb"\r\n\r\n; name=c\r\n')).toEqual(['a\tb'])
    expect(multipartNames('--b\ncontent-disposition: form-data;\n name=a\n\n')).toEqual(['a'])
  })

  it('reads a line in pieces of PHP\'s buffer: a piece after the cut is a line of its own', () => {
    const pad = (before: string, after = '') => `${before}${'a'.repeat(5120 - before.length - after.length)}${after}`
    expect(multipartNames(`--b\r\n${pad('x-pad: ')}content-disposition: form-data; name=a\r\n\r\n`)).toEqual(['a'])
    expect(multipartNames(`--b\r\n${pad('content-disposition: form-data; x=', '; name="ab')}c:d"\r\n\r\n`)).toEqual(['ab'])
    // Its first 5120 bytes hold no colon: it continues the header.
    expect(multipartNames(`--b\r\ncontent-disposition: form-data\r\n; name=a ${'b'.repeat(5200)}:c\r\n\r\n`)).toEqual(['a'])
    // A longer boundary makes a longer buffer: the same line is read whole.
    expect(multipartNames(`--b\r\n${pad('x-pad: ')}content-disposition: form-data; name=a\r\n\r\n`, 6000)).toEqual([])
  })

  it('takes the buffer PHP takes for a boundary: 5120 bytes, or its length and 6', () => {
    expect(phpLineBytes('multipart/form-data; boundary=b')).toBe(5120)
    expect(phpLineBytes('')).toBe(5120)
    expect(phpLineBytes(`multipart/form-data; BOUNDARY="${'x'.repeat(6000)}"; charset=utf-8`)).toBe(6006)
    expect(phpLineBytes(`multipart/form-data; boundary=${'x'.repeat(6000)};x=1`)).toBe(6006)
    // `boundary` as spelt first, another case only without it.
    expect(phpLineBytes(`multipart/form-data; XBOUNDARY=${'x'.repeat(6000)}; boundary=b`)).toBe(5120)
  })

  it('reads a header name whole and a line to its first NUL, as C reads them', () => {
    expect(multipartNames('--b\r\ncontent-disposition : form-data; name=a\r\n\r\n')).toEqual([])
    expect(multipartNames('--b\r\ncontent-disposition: form-data\r\n; name=a\u0000; name=b\r\n\r\n')).toEqual(['a'])
  })
})
