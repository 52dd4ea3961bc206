import { describe, expect, it } from 'vitest'
import { acceptsGzip } from '../../src/http/reads/report-reply.js'
import { acceptsCoding } from '../../src/http/caller-coding.js'

// RFC 9110, 12.5.3: `*` stands for the codings the field does not name, a coding's own
// weight overrides it wherever it stands, and a weight of 0 means "not acceptable";
// the parameter name `q` is case-insensitive (12.4.2).
describe('acceptsGzip', () => {
  it.each([
    [undefined, false],
    ['', false],
    ['identity', false],
    ['gzip', true],
    ['GZIP', true],
    ['gzip, deflate, br', true],
    ['deflate, gzip;q=0.001', true],
    ['*', true],
    ['*;q=0.5', true],
    ['*;q=0, gzip', true],
    ['gzip;q=0', false],
    ['gzip;q=0, identity', false],
    ['gzip ;q=0', false],
    ['gzip;Q=0', false],
    ['gzip; Q=0.000', false],
    ['*;q=0', false],
    ['*, gzip;q=0', false],
    ['identity, *;q=0.5, gzip;q=0', false],
    ['br, *;q=0.1, gzip;q=0', false],
  ])('%j: %s', (header, gzip) => {
    expect(acceptsGzip(header)).toBe(gzip)
  })
})

describe('acceptsCoding', () => {
  it.each([
    [undefined, 'br', false],
    ['gzip', 'br', false],
    ['gzip, br', 'br', true],
    ['br;q=0, *', 'br', false],
    ['*;q=0, br;q=0.1', 'br', true],
    ['x-gzip', 'gzip', true],
    ['x-gzip;q=0, *', 'gzip', false],
    ['deflate', 'deflate', true],
    [['identity', 'deflate'], 'deflate', true],
  ])('%j accepts %s: %s', (header, coding, accepted) => {
    expect(acceptsCoding(header, coding)).toBe(accepted)
  })
})
