import { describe, expect, it } from 'vitest'
import { originForm, targetHost } from '../../src/http/request-target.js'

describe('originForm', () => {
  it.each([
    ['/api/v1/report/x?y=1', '/api/v1/report/x?y=1'],
    ['*', '*'],
    ['127.0.0.1:8080', '127.0.0.1:8080'],
    ['http://h/api/v1/x?y=1', '/api/v1/x?y=1'],
    ['HTTPS://u:p@h:8443/a', '/a'],
    ['http://h', '/'],
    ['http://h?q=1', '/?q=1'],
    ['http://[::1]:3000/api/v1/x?y=1', '/api/v1/x?y=1'],
    ['http://[2001:db8::1]', '/'],
    ['http://h/api/v1/../admin', '/api/v1/../admin'],
    ['ftp://h/a', 'ftp://h/a'],
  ])('%s → %s', (target, expected) => {
    expect(originForm(target)).toBe(expected)
  })
})

describe('targetHost', () => {
  it.each([
    ['/api/v1/report/x?y=1', null],
    ['*', null],
    ['127.0.0.1:8080', null],
    ['ftp://h/a', null],
    ['http://h/api/v1/x?y=1', 'h'],
    ['HTTPS://u:p@h:8443/a', 'h:8443'],
    ['http://a@b@evil.example/a', 'evil.example'],
    ['http://h', 'h'],
    ['http://h?q=1', 'h'],
    ['http://h#f', 'h'],
    ['http://[::1]:3000/api/v1/x', '[::1]:3000'],
    ['http:///metrics', ''],
  ])('%s → %s', (target, expected) => {
    expect(targetHost(target)).toBe(expected)
  })
})
