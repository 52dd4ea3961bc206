import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { digestFingerprint, fingerprint } from '../../src/observe/fingerprint.js'
import { hashApiKey, newApiKey, presentedKeys } from '../../src/access/api-keys.js'
import { KEY_PREFIX } from '../../src/observe/key-shape.js'

// Contract, "Teams": keys are made by the key command, stored only as sha256:<hex>,
// and presented as `x-api-key` or `authorization: Bearer`.

describe('newApiKey', () => {
  it('is the rgw_ prefix (for secret scanners) and 32 random bytes in base64url', () => {
    const key = newApiKey()
    expect(KEY_PREFIX).toBe('rgw_')
    expect(key).toMatch(/^rgw_[A-Za-z0-9_-]{43}$/)
    expect(Buffer.from(key.slice(KEY_PREFIX.length), 'base64url')).toHaveLength(32)
  })

  it('never repeats and uses the whole alphabet (256 bits of entropy, not a counter)', () => {
    const keys = Array.from({ length: 2000 }, () => newApiKey())
    expect(new Set(keys).size).toBe(keys.length)
    const chars = new Set(keys.flatMap((k) => [...k.slice(KEY_PREFIX.length)]))
    expect(chars.size).toBe(64)
    // No shared 8-character prefix after rgw_: the body is not derived from time or a seed.
    expect(new Set(keys.map((k) => k.slice(0, 12))).size).toBe(keys.length)
  })
})

describe('hashApiKey', () => {
  it('is sha256:<64 lower-case hex> of the UTF-8 key', () => {
    expect(hashApiKey('rgw_example')).toBe(`sha256:${createHash('sha256').update('rgw_example').digest('hex')}`)
    expect(hashApiKey('abc')).toBe('sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    expect(hashApiKey(newApiKey())).toMatch(/^sha256:[0-9a-f]{64}$/)
  })

  it('differs for keys that differ in one character', () => {
    expect(hashApiKey('rgw_a')).not.toBe(hashApiKey('rgw_b'))
  })

  it('fingerprint is 12 hex digits keyed by GATEWAY_SECRET (else by the process), not the plain sha256 prefix, and computable from the sha256 alone', () => {
    const secret = 'gateway-secret-for-fingerprints-0001'
    expect(fingerprint('abc', secret)).toMatch(/^[0-9a-f]{12}$/)
    expect(fingerprint('abc', secret)).not.toBe('ba7816bf8f01')
    expect(fingerprint('abc', null)).not.toBe('ba7816bf8f01')
    expect(fingerprint('abc', secret)).toBe(fingerprint('abc', secret))
    expect(fingerprint('abc', secret)).not.toBe(fingerprint('abc', `${secret}x`))
    expect(fingerprint('abc', secret)).not.toBe(fingerprint('abc', null))
    expect(digestFingerprint('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', secret)).toBe(fingerprint('abc', secret))
  })
})

describe('presentedKeys', () => {
  const cases: [string, Record<string, string | string[] | undefined>, string | null, string | null][] = [
    ['x-api-key', { 'x-api-key': 'rgw_k1' }, 'rgw_k1', null],
    ['x-api-key with spaces around it', { 'x-api-key': '  rgw_k1 ' }, 'rgw_k1', null],
    ['authorization: Bearer', { authorization: 'Bearer rgw_k2' }, null, 'rgw_k2'],
    ['bearer in lower case', { authorization: 'bearer rgw_k2' }, null, 'rgw_k2'],
    ['Bearer with extra spaces', { authorization: 'Bearer   rgw_k2  ' }, null, 'rgw_k2'],
    ['both (authenticate reads x-api-key, and refuses another team key beside it)', { 'x-api-key': 'rgw_k1', authorization: 'Bearer rgw_k2' }, 'rgw_k1', 'rgw_k2'],
    ['an empty x-api-key is none beside a Bearer', { 'x-api-key': '', authorization: 'Bearer rgw_k2' }, null, 'rgw_k2'],
    ['a blank x-api-key is none beside a Bearer', { 'x-api-key': '   ', authorization: 'Bearer rgw_k2' }, null, 'rgw_k2'],
    ['a blank x-api-key alone is no key', { 'x-api-key': '   ' }, null, null],
    ['no headers', {}, null, null],
    ['Basic authorization', { authorization: 'Basic cmd3X2sxOg==' }, null, null],
    ['Bearer without a key', { authorization: 'Bearer ' }, null, null],
    ['Bearer with two words', { authorization: 'Bearer rgw_a rgw_b' }, null, null],
    ['a bare key in authorization', { authorization: 'rgw_k2' }, null, null],
    ['a repeated x-api-key header', { 'x-api-key': ['rgw_a', 'rgw_b'] }, null, null],
  ]
  it.each(cases)('%s', (_name, headers, apiKey, bearer) => {
    expect(presentedKeys(headers)).toEqual({ apiKey, bearer })
  })
})
