import { describe, expect, it } from 'vitest'
import { reportBodyKind } from '../../src/reports/report-body.js'

describe('reportBodyKind', () => {
  it.each([
    ['application/json', '{"data":[]}', 'json'],
    ['application/json; charset=utf-8', ' [1,2]\n', 'json'],
    ['application/vnd.api+json', '{}', 'json'],
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
    expect(reportBodyKind(type, Buffer.from(body))).toBe(kind)
  })
})
