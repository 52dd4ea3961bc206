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

  it.each([['{"data":[]}'], ['[]'], ['{"message":"ok","data":[]}'], ['{"rows":[]}']])('%s is a report by default', (body) => {
    expect(reportBodyKind('application/json', Buffer.from(body), [])).toBe('json')
  })

  // RFC 9457's problem details (`application/problem+json`) say by their type that the body
  // reports a problem, whatever its members and their `status`: no report, by default and
  // by a list of fields (a problem may carry extension members, `data` too); `[*]` takes any JSON.
  it('a 200 of application/problem+json is no report, whatever its members, but with [*]', () => {
    const problem = '{"type":"https://example.com/probs/maintenance","title":"Service Unavailable","status":503,"detail":"Reports are being rebuilt."}'
    for (const type of ['application/problem+json', 'application/problem+json; charset=utf-8', 'Application/Problem+JSON']) {
      expect(reportBodyKind(type, Buffer.from(problem), [])).toBe('no-report')
      expect(reportBodyKind(type, Buffer.from('{"title":"Not ready","data":[]}'), ['data'])).toBe('no-report')
      expect(reportBodyKind(type, Buffer.from(problem), ['*'])).toBe('json')
    }
    // The same members under application/json are an object with fields other than Laravel's error's: a report by default.
    expect(reportBodyKind('application/json', Buffer.from(problem), [])).toBe('json')
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
