import { describe, expect, it } from 'vitest'
import { reportBodyKind } from '../../src/reports/report-body.js'

describe('reportBodyKind', () => {
  it.each([
    ['application/json', '{"data":[]}', 'json'],
    ['application/json; charset=utf-8', ' [1,2]\n', 'json'],
    ['application/vnd.api+json', '{"data":[]}', 'json'],
    ['text/html; charset=UTF-8', '<!DOCTYPE html><html></html>', 'html'],
    ['application/json', '\n  <html><body>Be right back.</body></html>', 'html'],
    ['application/json', '{"data":[{"a":1', 'truncated-json'],
    ['application/json', '[1,2', 'truncated-json'],
    ['application/json', '', 'empty'],
    ['application/json', ' \r\n', 'empty'],
    ['text/plain', '{"data":[]}', 'mislabelled-json'],
    [undefined, '{"data":[]}', 'mislabelled-json'],
    ['application/jsonp', '{"data":[]}', 'mislabelled-json'],
    ['application/json', 'Service Unavailable', 'other'],
  ] as const)('%s %j is %s', (type, body, kind) => {
    expect(reportBodyKind(type, Buffer.from(body), [])).toBe(kind)
  })

  // JSON that holds no report: Laravel's error body answered with a 200 (a middleware, or an
  // exception handler, that set no status), nothing, or a bare value.
  it.each([
    ['{}'],
    ['{"message":"Server Error"}'],
    ['{"message":"Unauthenticated."}'],
    ['{"message":"Server Error","exception":"ErrorException","file":"/app/x.php","line":3,"trace":[]}'],
    ['{"message":"The given data was invalid.","errors":{"dateFrom":["required"]}}'],
    ['null'],
    ['"Server Error"'],
    ['0'],
    ['true'],
  ])('%s is no report by default', (body) => {
    expect(reportBodyKind('application/json', Buffer.from(body), [])).toBe('no-report')
  })

  // A problem document (RFC 9457) says by its content type that it is an error, whatever its
  // status and fields: by default its fields (type, title, status, detail) are no Laravel's.
  it.each([
    ['application/problem+json', '{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"maintenance"}', []],
    ['application/problem+json; charset=utf-8', '{"title":"Internal Server Error","data":null}', ['data']],
  ])('%s %s is no report with cache.reportFields %j', (type, body, fields) => {
    expect(reportBodyKind(type, Buffer.from(body), fields)).toBe('no-report')
    expect(reportBodyKind(type, Buffer.from(body), ['*'])).toBe('json')
  })

  it.each([['{"data":[]}'], ['[]'], ['{"message":"ok","data":[]}'], ['{"rows":[]}']])('%s is a report by default', (body) => {
    expect(reportBodyKind('application/json', Buffer.from(body), [])).toBe('json')
  })

  // Bytes that are no UTF-8 (a body cut inside a character, corrupted on the way: PHP's
  // json_encode never writes them) parsed once replaced by U+FFFD, so the corrupt body was
  // stored and served 200 as a HIT for its freshness; a strict JSON reader fails on it.
  it('JSON in UTF-8 (no charset, or utf-8) holding bytes that are no UTF-8 is no report', () => {
    const corrupt = Buffer.concat([Buffer.from('{"data":"'), Buffer.from([0xff, 0xfe, 0xc0]), Buffer.from('"}')])
    expect(reportBodyKind('application/json', corrupt, [])).toBe('other')
    expect(reportBodyKind('application/json; charset=utf-8', corrupt, [])).toBe('other')
    expect(reportBodyKind('application/json; charset=UTF-8', Buffer.from('{"data":"é"}'), [])).toBe('json')
    expect(reportBodyKind('application/json; charset=iso-8859-1', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]), [])).toBe('json')
  })

  it('with cache.reportFields, a report is an object holding one of them; with *, any JSON is one', () => {
    const kind = (body: string, fields: string[]) => reportBodyKind('application/json', Buffer.from(body), fields)
    expect(kind('{"data":[]}', ['data'])).toBe('json')
    expect(kind('{"rows":[],"meta":{}}', ['data', 'rows'])).toBe('json')
    expect(kind('{"rows":[]}', ['data'])).toBe('no-report')
    expect(kind('[]', ['data'])).toBe('no-report')
    expect(kind('{"message":"Server Error"}', ['data'])).toBe('no-report')
    expect(kind('{}', ['*'])).toBe('json')
    expect(kind('{"message":"Server Error"}', ['*'])).toBe('json')
    expect(kind('null', ['*'])).toBe('json')
  })
})
