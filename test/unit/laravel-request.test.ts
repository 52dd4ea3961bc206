import { describe, expect, it } from 'vitest'
import { laravelRequest, type RawRequest } from '../../src/sandbox/laravel-request.js'

function read(method: string, url: string, headers: RawRequest['headers'] = {}, body?: string | Buffer) {
  return laravelRequest({ method, url, headers, body: body === undefined ? null : Buffer.from(body) })
}

const JSON_TYPE = { 'content-type': 'application/json' }
const FORM_TYPE = { 'content-type': 'application/x-www-form-urlencoded' }

describe('the method Laravel routes by', () => {
  it('honours X-HTTP-Method-Override on POST only', () => {
    expect(read('POST', '/x', { 'x-http-method-override': 'delete' }).method).toBe('DELETE')
    expect(read('GET', '/x', { 'x-http-method-override': 'DELETE' }).method).toBe('GET')
  })

  it('honours _method in the query, a form body and a JSON body on POST', () => {
    expect(read('POST', '/x?_method=DELETE').method).toBe('DELETE')
    expect(read('POST', '/x', FORM_TYPE, '_method=put').method).toBe('PUT')
    expect(read('POST', '/x', JSON_TYPE, '{"_method":"GET"}').method).toBe('GET')
    expect(read('DELETE', '/x?_method=POST').method).toBe('DELETE')
  })

  it('honours _method in a multipart form on POST, its name read as PHP reads it (leading spaces dropped, dots as _)', () => {
    const part = (disposition: string, value: string) => `--b\r\ncontent-disposition: ${disposition}\r\n\r\n${value}\r\n`
    const form = (...parts: string[]) => `${parts.join('')}--b--\r\n`
    const multipart = (boundary = 'b') => ({ 'content-type': `multipart/form-data; boundary=${boundary}` })
    for (const name of ['"_method"', '" _method"', '"   _method"', "' .method'", ' " _method"', '_method']) {
      expect(read('POST', '/x', multipart(), form(part(`form-data; name=${name}`, 'DELETE'))).method, name).toBe('DELETE')
    }
    expect(read('POST', '/x', { 'content-type': 'Multipart/Form-Data; boundary="b"' }, form(part('form-data; NAME="_method"', 'put'))).method).toBe('PUT')
    // A file's part is no field; nor is a part with no name.
    expect(read('POST', '/x', multipart(), form(part('form-data; name="_method"; filename="a.txt"', 'DELETE'))).method).toBe('POST')
    expect(read('POST', '/x', multipart(), form(part('form-data', 'DELETE'))).method).toBe('POST')
    const fields = read('POST', '/x', multipart('XX'), '--XX\r\nContent-Disposition: form-data; name="userId"\r\n\r\n101\r\n--XX\r\nContent-Disposition: form-data; name="a[]"\r\n\r\nline 1\r\nline 2\r\n--XX--\r\n')
    expect(fields.body).toEqual({ userId: '101', a: ['line 1\r\nline 2'] })
  })

  it('prefers the header, then the body, then the query; ignores a value that is no method', () => {
    expect(read('POST', '/x?_method=PUT', { ...FORM_TYPE, 'x-http-method-override': 'PATCH' }, '_method=DELETE').method).toBe('PATCH')
    expect(read('POST', '/x?_method=PUT', FORM_TYPE, '_method=DELETE').method).toBe('DELETE')
    expect(read('POST', '/x?_method=GE%20T').method).toBe('POST')
  })
})

describe('where the input is read from', () => {
  it('reads a body as JSON when the type holds /json or +json anywhere, parameters included', () => {
    const json = '{"userId":102}'
    expect(read('POST', '/x', { 'content-type': 'application/x-www-form-urlencoded; x=/json' }, json).body).toEqual({ userId: 102 })
    expect(read('POST', '/x', { 'content-type': 'application/vnd.api+json' }, json).body).toEqual({ userId: 102 })
    expect(read('POST', '/x', { 'content-type': 'text/plain' }, json).body).toEqual({})
  })

  it('reads nothing from JSON PHP cannot decode (too deep, invalid UTF-8): the call names nothing', () => {
    expect(read('POST', '/x', JSON_TYPE, `{"userId":102,"x":${'['.repeat(513)}${']'.repeat(513)}}`).body).toEqual({})
    expect(read('POST', '/x', JSON_TYPE, Buffer.concat([Buffer.from('{"userId":102,"x":"'), Buffer.from([0xc3]), Buffer.from('"}')])).body).toEqual({})
    expect(read('POST', '/x', JSON_TYPE, 'null').body).toEqual({})
  })

  it('parses a form as PHP does on POST, and as Symfony does on PUT, PATCH and DELETE', () => {
    expect(read('POST', '/x', { 'content-type': 'Application/X-WWW-Form-Urlencoded; charset=utf-8' }, 'userId%00=102').body).toEqual({ userId: '102' })
    expect(read('DELETE', '/x', FORM_TYPE, 'userId=102').body).toEqual({ userId: '102' })
    expect(read('POST', '/x', {}, 'userId=102').body).toEqual({})
  })

  it('merges the input source over the query; a GET reads its query, or its JSON body', () => {
    expect(read('POST', '/x?userId=101&page=2', JSON_TYPE, '{"userId":102}').input).toEqual({ userId: 102, page: '2' })
    expect(read('GET', '/x?%20advertiserId=102').input).toEqual({ advertiserId: '102' })
    expect(read('GET', '/x?advertiserId=101', JSON_TYPE, '{"advertiserId":102}').input).toEqual({ advertiserId: 102 })
  })
})

describe('a multipart form read as PHP fills $_POST (main/rfc1867.c)', () => {
  const type = (boundary = 'b') => ({ 'content-type': `multipart/form-data; boundary=${boundary}` })
  const post = (body: string, headers = type()) => read('POST', '/x', headers, body)

  it('reads `name==x` as the name x: php_ap_getword skips the run of `=` after the key', () => {
    expect(post('--b\r\ncontent-disposition: form-data; name==_method\r\n\r\nDELETE\r\n--b--\r\n').method).toBe('DELETE')
  })

  it('reads the first content-disposition of a part (php_mime_get_hdr_value), a continued one included', () => {
    const head = (first: string, second: string) => `--b\r\nContent-Disposition: form-data; name=${first}\r\ncontent-disposition: form-data; name=${second}\r\n\r\nDELETE\r\n--b--\r\n`
    expect(post(head('_method', 'note')).method).toBe('DELETE')
    expect(post(head('note', '_method')).method).toBe('POST')
    expect(post('--b\r\ncontent-disposition: form-data;\r\n name=_method\r\ncontent-disposition: form-data; name=note\r\n\r\nDELETE\r\n--b--\r\n').method).toBe('DELETE')
  })

  it('reads lines ended by LF alone (next_line), and a boundary only as a whole line (find_boundary)', () => {
    expect(post('--b\ncontent-disposition: form-data; name="_method"\n\nDELETE\n--b--\n').body).toEqual({ _method: 'DELETE' })
    expect(post('preamble\r\n--b\r\ncontent-disposition: form-data; name=a\r\n\r\n1\r\n--b--\r\n').body).toEqual({ a: '1' })
    expect(post('--bb\r\ncontent-disposition: form-data; name=_method\r\n\r\nDELETE\r\n--bb--\r\n').method).toBe('POST')
    expect(post('--b \r\ncontent-disposition: form-data; name=_method\r\n\r\nDELETE\r\n--b--\r\n').method).toBe('POST')
  })

  it('ends a value at the first LF and `--boundary` (multipart_buffer_read), a CR before it dropped; the next part starts at the next boundary line', () => {
    const body = '--b\r\ncontent-disposition: form-data; name=a\r\n\r\none\n--bc\r\n--b\r\ncontent-disposition: form-data; name=_method\r\n\r\nDELETE\r\n--b--\r\n'
    expect(post(body).body).toEqual({ a: 'one', _method: 'DELETE' })
    expect(post('--b\r\ncontent-disposition: form-data; name=a\r\n\r\nline 1\r\nline 2\r\n--b\ncontent-disposition: form-data; name=c\n\n3\n--b--').body).toEqual({ a: 'line 1\r\nline 2', c: '3' })
    // A body cut within its last boundary ends the value there too (a start of `\n--b` at the end).
    expect(post('--b\r\ncontent-disposition: form-data; name=_method\r\n\r\nDELETE\r\n--').body).toEqual({ _method: 'DELETE' })
    // A file's content is read to the boundary as a value is; a part naming an empty file is not read, and its first line may be the boundary.
    const file = (name: string) => `--b\r\ncontent-disposition: form-data; name=f; filename=${name}\r\n\r\n--b\r\ncontent-disposition: form-data; name=_method\r\n\r\nDELETE\r\n--b--\r\n`
    expect(post(file('a.txt')).method).toBe('POST')
    expect(post(file('""')).method).toBe('DELETE')
  })

  it('stops at a part whose disposition names neither a field nor a file (File Upload Mime headers garbled)', () => {
    expect(post('--b\r\ncontent-disposition: form-data\r\n\r\nx\r\n--b\r\ncontent-disposition: form-data; name=_method\r\n\r\nDELETE\r\n--b--\r\n').method).toBe('POST')
    // A part with no content-disposition is passed over.
    expect(post('--b\r\ncontent-type: text/plain\r\n\r\nx\r\n--b\r\ncontent-disposition: form-data; name=_method\r\n\r\nDELETE\r\n--b--\r\n').method).toBe('DELETE')
  })

  it('reads a head in lines of its buffer (5120 bytes, next_line), each to its first NUL', () => {
    const pad = 'x-pad: '.padEnd(5120, 'a')
    expect(post(`--b\r\n${pad}content-disposition: form-data; name=_method\r\n\r\nDELETE\r\n--b--\r\n`).method).toBe('DELETE')
    expect(post('--b\r\ncontent-disposition: form-data; name=_method\u0000x\r\n\r\nDELETE\r\n--b--\r\n').method).toBe('DELETE')
  })

  it('finds the boundary as rfc1867_post_handler does: `boundary` before another case, quoted to its quote, possibly empty', () => {
    const body = (boundary: string) => `--${boundary}\r\ncontent-disposition: form-data; name=_method\r\n\r\nDELETE\r\n--${boundary}--\r\n`
    expect(post(body('b'), { 'content-type': 'multipart/form-data; BOUNDARY=a; boundary=b' }).method).toBe('DELETE')
    expect(post(body('b;c'), { 'content-type': 'multipart/form-data; boundary="b;c"; x=1' }).method).toBe('DELETE')
    expect(post(body('b'), { 'content-type': 'multipart/form-data; boundary="b' }).method).toBe('POST')
    expect(post(body(''), { 'content-type': 'multipart/form-data; boundary=' }).method).toBe('DELETE')
  })
})
