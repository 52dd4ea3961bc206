import { describe, expect, it } from 'vitest'
import { RedisSeal } from '../../src/redis/seal.js'

// What replicas write to Redis carries a seal of GATEWAY_SECRET, bound to where it lives.
// Through a change of GATEWAY_SECRET, GATEWAY_SECRET_FALLBACK names the other secret:
// values sealed with it are read, and nothing is sealed with it.

const OLD = 'seal-test-old-secret-0123456789'
const NEW = 'seal-test-new-secret-0123456789'
const DATA = Buffer.from('{"report":1}')

describe('RedisSeal', () => {
  it('opens what it sealed, for its binding only', () => {
    const seal = new RedisSeal(OLD)
    expect(seal.open('rgw:report:a', seal.seal('rgw:report:a', DATA))).toEqual(DATA)
    expect(seal.open('rgw:report:b', seal.seal('rgw:report:a', DATA))).toBeNull()
    expect(seal.openText('chan', seal.sealText('chan', 'hello'))).toBe('hello')
    expect(seal.openText('other', seal.sealText('chan', 'hello'))).toBeNull()
  })

  it('refuses what another secret sealed', () => {
    expect(new RedisSeal(NEW).open('k', new RedisSeal(OLD).seal('k', DATA))).toBeNull()
    expect(new RedisSeal(NEW).openText('k', new RedisSeal(OLD).sealText('k', 'x'))).toBeNull()
  })

  it('with a fallback: opens what either secret sealed, and seals with its own only', () => {
    const old = new RedisSeal(OLD)
    const rotating = new RedisSeal(NEW, OLD)
    expect(rotating.open('k', old.seal('k', DATA))).toEqual(DATA)
    expect(rotating.openText('k', old.sealText('k', 'x'))).toBe('x')
    // What it writes is the new secret's: a replica on the new one alone reads it, one on the old alone does not.
    expect(new RedisSeal(NEW).open('k', rotating.seal('k', DATA))).toEqual(DATA)
    expect(old.open('k', rotating.seal('k', DATA))).toBeNull()
    expect(old.openText('k', rotating.sealText('k', 'x'))).toBeNull()
    // The fallback binds as the secret does, and a third secret is refused.
    expect(rotating.open('j', old.seal('k', DATA))).toBeNull()
    expect(rotating.open('k', new RedisSeal('seal-test-third-secret-012345').seal('k', DATA))).toBeNull()
  })
})
