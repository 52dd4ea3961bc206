import { describe, expect, it } from 'vitest'
import { headLength } from '../../src/http/head-length.js'
import { REFUSAL_READ_BYTES } from '../../src/platform/client/debug-fields.js'

describe('headLength', () => {
  it.each([
    ['an answer in a coding the caller accepts (or none): the platform\'s', 200, '787', true, '787'],
    ['a 206 so', 206, '10', true, '10'],
    ['an empty one', 200, '0', true, '0'],
    ['the platform\'s written with leading zeros: as a number', 200, '0042', true, '42'],
    ['a coding the caller does not accept (its GET decoded as it streams): none', 200, '62', false, null],
    ['no length from the platform: none', 200, undefined, true, null],
    ['a length that is no number: none', 200, '12, 12', true, null],
    ['a 204: none', 204, '0', true, null],
    ['a 304: none', 304, '787', true, null],
    ['a refusal its GET reads whole (its debug fields dropped): none', 404, '23', true, null],
    ['a refusal past what its GET reads whole: the platform\'s', 422, String(REFUSAL_READ_BYTES + 1), true, String(REFUSAL_READ_BYTES + 1)],
    ['an empty refusal: the platform\'s', 404, '0', true, '0'],
  ] as const)('%s', (_what, status, platform, accepted, length) => {
    expect(headLength(status, platform, accepted)).toBe(length)
  })
})
