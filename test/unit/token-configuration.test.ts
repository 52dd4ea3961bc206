import { describe, expect, it } from 'vitest'
import { sameConfiguration } from '../../src/platform/tokens/token-provider.js'

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
