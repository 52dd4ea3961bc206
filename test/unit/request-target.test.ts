import { describe, expect, it } from 'vitest'
import { checkTarget, encodeParams } from '../../src/access/request-target.js'

// One checked request target; what the rules see is what the platform gets.

describe('checkTarget', () => {
  const refused: [string, string][] = [
    ['a fragment', '/api/v1/campaign/banner/create#/get'],
    ['a fragment before the query', '/api/v1/report/campaigns/get#?advertiserId=102'],
    ['a raw control character', '/api/v1/report/x\u0001'],
    ['a non-ASCII byte', '/api/v1/report/caf\u00e9'],
    ['an encoded NUL in a name', '/api/v1/report/campaigns/get?advertiserId%00=102'],
    ['an encoded NUL in a value', '/api/v1/report/campaigns/get?advertiserId=102%00'],
    ['an encoded newline in a value', '/api/v1/campaign/get?x=a%0Ab'],
    ['a name with a leading space', '/api/v1/campaign/get?%20userId=102'],
    ['a name with a plus (space)', '/api/v1/campaign/get?+userId=102'],
    ['an empty name', '/api/v1/campaign/get?=102'],
    ['a name with a quote', "/api/v1/campaign/get?user'Id=1"],
    ['_method in the query', '/api/v1/campaign/get?_method=DELETE'],
    ['.method, which PHP reads as _method', '/api/v1/report/campaigns/get?.method=GET'],
    ['_method as an array', '/api/v1/report/campaigns/get?.method[x]=GET'],
    ['a percent-encoding left in the path', '/api/v1/campaign/banner/delete/1%20'],
  ]
  it.each(refused)('refuses %s with 400 GW_BAD_REQUEST', (_name, url) => {
    expect(() => checkTarget(url, 256)).toThrow(expect.objectContaining({ code: 'GW_BAD_REQUEST', statusCode: 400 }))
  })

  it.each([
    ['outside /api/v1/', '/admin/token'],
    ['a dot segment', '/api/v1/../oauth/token'],
    ['an encoded slash', '/api/v1/report%2f..%2foauth'],
  ])('answers 404 for a path %s', (_name, url) => {
    expect(() => checkTarget(url, 256)).toThrow(expect.objectContaining({ code: 'GW_NOT_FOUND', statusCode: 404 }))
  })

  it('refuses more parameters than the limit', () => {
    const url = `/api/v1/campaign/get?${Array.from({ length: 257 }, (_, i) => `p${i}=1`).join('&')}`
    expect(() => checkTarget(url, 256)).toThrow(expect.objectContaining({ code: 'GW_BAD_REQUEST' }))
    expect(checkTarget(url.replace('&p256=1', ''), 256).params).toHaveLength(256)
  })

  it('decodes unreserved escapes of the path and re-encodes the query from its parse', () => {
    const target = checkTarget('/api/v1/report/campaigns/%67et?b=%7e2&a=x+y&ids[]=1&ids%5B%5D=2&e=%zz', 256)
    expect(target.path).toBe('/api/v1/report/campaigns/get')
    expect(target.params).toEqual([['b', '~2'], ['a', 'x y'], ['ids[]', '1'], ['ids[]', '2'], ['e', '%zz']])
    expect(target.search).toBe('b=~2&a=x%20y&ids[]=1&ids[]=2&e=%25zz')
  })

  it('keeps a plain target as it is', () => {
    expect(checkTarget('/api/v1/campaign/get?per_page=200&page=1', 256)).toEqual({
      path: '/api/v1/campaign/get',
      params: [['per_page', '200'], ['page', '1']],
      search: 'per_page=200&page=1',
    })
    expect(checkTarget('/api/v1/campaign/get', 256).search).toBe('')
  })
})

describe('encodeParams', () => {
  it('percent-encodes names and values, brackets of array names readable', () => {
    expect(encodeParams([['a b', 'c&d=e'], ['x[y]', 'é']])).toBe('a%20b=c%26d%3De&x[y]=%C3%A9')
  })
})
