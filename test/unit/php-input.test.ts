import { describe, expect, it } from 'vitest'
import { parsePhpParams, phpJsonDecode, phpName, phpToJs, urldecode } from '../../src/sandbox/php-input.js'

// The sandbox reads queries and forms as PHP does (main/php_variables.c); each case
// is one of PHP's readings that the gateway's own parse does not share.

describe('parsePhpParams', () => {
  it('cuts a name at NUL', () => {
    expect(parsePhpParams('advertiserId%00=102&x=1')).toEqual({ advertiserId: '102', x: '1' })
    expect(parsePhpParams('userId%00junk=102')).toEqual({ userId: '102' })
  })

  it('drops leading spaces of a name, raw or as + or %20', () => {
    expect(parsePhpParams('%20userId=102')).toEqual({ userId: '102' })
    expect(parsePhpParams('++userId=102')).toEqual({ userId: '102' })
  })

  it('turns spaces and dots inside a name into _', () => {
    expect(parsePhpParams('user.Id=1&a+b=2&c%2Ed=3')).toEqual({ user_Id: '1', a_b: '2', c_d: '3' })
  })

  it('turns an unclosed [, and the spaces, dots and [ after it, into _ (PHP 8)', () => {
    expect(parsePhpParams('a[b=1')).toEqual({ a_b: '1' })
    expect(parsePhpParams('a.b[c.d[e=1')).toEqual({ a_b_c_d_e: '1' })
  })

  it('drops a name that starts with [', () => {
    expect(parsePhpParams('[method=GET&x=1')).toEqual({ x: '1' })
  })

  it('reads .method as _method', () => {
    expect(parsePhpParams('.method=GET')).toEqual({ _method: 'GET' })
  })

  it('makes arrays of a[] and a[x], nested, and ignores what follows the last ]', () => {
    expect(parsePhpParams('ids[]=1&ids[]=2')).toEqual({ ids: { 0: '1', 1: '2' } })
    expect(parsePhpParams('a[x][y]=1&a[x][]=2')).toEqual({ a: { x: { y: '1', 0: '2' } } })
    expect(parsePhpParams('a[x]junk=1')).toEqual({ a: { x: '1' } })
  })

  it('deletes the whole variable of a name nested past 64 levels (max_input_nesting_level), earlier values included', () => {
    const deep = (levels: number): string => `userId${'[a]'.repeat(levels)}`
    expect(parsePhpParams(`userId=101&${deep(65)}=101&x=1`)).toEqual({ x: '1' })
    expect(parsePhpParams(`userId[b]=101&${deep(64)}[c=1`)).toEqual({})
    // A later parameter of the name sets it again.
    expect(parsePhpParams(`${deep(65)}=101&userId=102`)).toEqual({ userId: '102' })
    expect(Object.keys(parsePhpParams(`userId=101&${deep(64)}=101`))).toEqual(['userId'])
  })

  it('keeps the last of repeated names', () => {
    expect(parsePhpParams('advertiserId=101&advertiserId=102')).toEqual({ advertiserId: '102' })
  })

  it('reads only the first 1000 parameters (max_input_vars)', () => {
    const text = `${Array.from({ length: 1000 }, (_, i) => `p${i}=1`).join('&')}&advertiserId=102`
    const parsed = parsePhpParams(text)
    expect(Object.keys(parsed)).toHaveLength(1000)
    expect(parsed.advertiserId).toBeUndefined()
    expect(parsePhpParams('a=1&b=2&c=3', 2)).toEqual({ a: '1', b: '2' })
  })

  it('skips empty names and empty pairs, and reads a name without = as empty', () => {
    expect(parsePhpParams('&=1&%00x=2&flag&&')).toEqual({ flag: '' })
  })
})

describe('urldecode and phpName', () => {
  it('decodes + and %XX as UTF-8 bytes, and leaves a malformed escape', () => {
    expect(urldecode('a+b%C3%A9%zz%4')).toBe('a bé%zz%4')
  })

  it('splits the base name from its indexes', () => {
    expect(phpName('a[x][]')).toEqual({ base: 'a', indexes: ['x', ''] })
    expect(phpName('[x]')).toBeNull()
    expect(phpName('   ')).toBeNull()
  })
})

describe('phpToJs', () => {
  it('reads an array keyed 0…n-1 as a list, anything else as an object', () => {
    expect(phpToJs(parsePhpParams('ids[]=1&ids[]=2&m[k]=v'))).toEqual({ ids: ['1', '2'], m: { k: 'v' } })
  })
})

describe('phpJsonDecode', () => {
  it('decodes JSON as JSON.parse does', () => {
    expect(phpJsonDecode(Buffer.from('{"userId":102,"a":[1,{"b":null}]}'))).toEqual({ userId: 102, a: [1, { b: null }] })
  })

  it('fails past 512 levels of nesting, not at 512', () => {
    expect(phpJsonDecode(Buffer.from(`${'['.repeat(512)}${']'.repeat(512)}`))).toBeDefined()
    expect(phpJsonDecode(Buffer.from(`${'['.repeat(513)}${']'.repeat(513)}`))).toBeUndefined()
    expect(phpJsonDecode(Buffer.from(`{"userId":102,"x":${'['.repeat(600)}${']'.repeat(600)}}`))).toBeUndefined()
  })

  it('does not count brackets inside strings', () => {
    expect(phpJsonDecode(Buffer.from(JSON.stringify({ s: '['.repeat(600) })))).toEqual({ s: '['.repeat(600) })
  })

  it('fails on invalid UTF-8 and on syntax errors', () => {
    expect(phpJsonDecode(Buffer.concat([Buffer.from('{"userId":102,"x":"'), Buffer.from([0xff]), Buffer.from('"}')]))).toBeUndefined()
    expect(phpJsonDecode(Buffer.from('{"userId":102,}'))).toBeUndefined()
  })

  it('fails on an unpaired UTF-16 surrogate escape, in a value or a key (JSON_ERROR_UTF16), not on a pair', () => {
    expect(phpJsonDecode(Buffer.from('{"userId":102,"x":"\\ud800"}'))).toBeUndefined()
    expect(phpJsonDecode(Buffer.from('{"userId":102,"x":"a\\udc00b"}'))).toBeUndefined()
    expect(phpJsonDecode(Buffer.from('{"userId":102,"\\udbff":1}'))).toBeUndefined()
    expect(phpJsonDecode(Buffer.from('{"userId":102,"x":["\\ud83d\\ude00"]}'))).toEqual({ userId: 102, x: ['\u{1F600}'] })
  })
})
