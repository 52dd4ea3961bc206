import { describe, expect, it } from 'vitest'
import { sameConfiguration, takesStoredAtStart } from '../../src/platform/tokens/token-provider.js'

// Which configurations a stored platform token's record names as one: the token given,
// whatever it is read from; a login by its own base.

describe('sameConfiguration', () => {
  it('takes a static token and a token file holding it as one configuration', () => {
    expect(sameConfiguration('static:0123456789ab', 'file:0123456789ab')).toBe(true)
    expect(sameConfiguration('file:0123456789ab', 'static:0123456789ab')).toBe(true)
    expect(sameConfiguration('static:0123456789ab', 'static:0123456789ab')).toBe(true)
  })

  it('tells other tokens, an unread file and logins apart', () => {
    expect(sameConfiguration('static:0123456789ab', 'file:ba9876543210')).toBe(false)
    expect(sameConfiguration('file:unread', 'static:0123456789ab')).toBe(false)
    expect(sameConfiguration('login:0123456789ab', 'static:0123456789ab')).toBe(false)
    expect(sameConfiguration('login:0123456789ab', 'login:0123456789ab')).toBe(true)
  })
})

describe('takesStoredAtStart', () => {
  const stored = { base: 'static:aaaaaaaaaaaa', replaced: ['file:bbbbbbbbbbbb'] }

  it('takes the stored token on its own configuration, or on one a change leading to it replaced, wherever the token is read from', () => {
    expect(takesStoredAtStart('static:aaaaaaaaaaaa', stored)).toBe(true)
    expect(takesStoredAtStart('file:aaaaaaaaaaaa', stored)).toBe(true)
    expect(takesStoredAtStart('static:bbbbbbbbbbbb', stored)).toBe(true)
  })

  it('keeps a configuration no stored change replaced: a rollout', () => {
    expect(takesStoredAtStart('static:cccccccccccc', stored)).toBe(false)
    expect(takesStoredAtStart('file:unread', stored)).toBe(false)
  })

  it('takes a token made on the same login only (or a record from before logins had their own base), never a static or file one', () => {
    expect(takesStoredAtStart('login:dddddddddddd', { base: 'login:dddddddddddd', replaced: [] })).toBe(true)
    expect(takesStoredAtStart('login:dddddddddddd', { base: 'login', replaced: [] })).toBe(true)
    expect(takesStoredAtStart('login:dddddddddddd', { base: 'login:eeeeeeeeeeee', replaced: ['login:dddddddddddd'] })).toBe(false)
    expect(takesStoredAtStart('login:dddddddddddd', stored)).toBe(false)
  })
})
