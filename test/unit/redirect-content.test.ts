import { describe, expect, it } from 'vitest'
import { isRedirect, withoutContent } from '../../src/platform/client/redirect-content.js'

describe('a platform redirect\'s content', () => {
  it('is a 3xx\'s other than 304', () => {
    expect([300, 301, 302, 303, 307, 308].every(isRedirect)).toBe(true)
    expect([200, 204, 304, 400, 404].some(isRedirect)).toBe(false)
  })

  it('goes with the headers that describe it; location, caching and the rest stay', () => {
    const headers = {
      location: '/api/v1/campaign/get?page=2', 'content-location': '/api/v1/x', 'cache-control': 'private', 'retry-after': '5', link: '</x>; rel=next',
      'content-type': 'text/html; charset=utf-8', 'content-encoding': 'gzip', 'content-language': 'en', 'content-disposition': 'inline', 'content-digest': 'sha-256=:x:', etag: '"page"',
      'last-modified': 'Wed, 21 Oct 2015 07:28:00 GMT',
    }
    expect(withoutContent(headers)).toEqual({ location: '/api/v1/campaign/get?page=2', 'content-location': '/api/v1/x', 'cache-control': 'private', 'retry-after': '5', link: '</x>; rel=next' })
    expect(headers['content-type']).toBe('text/html; charset=utf-8')
  })
})
