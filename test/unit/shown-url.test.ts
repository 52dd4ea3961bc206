import { describe, expect, it } from 'vitest'
import { shownUrl } from '../../src/config/mask-url.js'

// GET /admin/config shows URL settings to a viewer's token: never a userinfo, query or fragment.
describe('shownUrl', () => {
  it.each([
    ['https://user:pw@auth.example:8443/oauth/token?secret=s#f', 'https://***@auth.example:8443/oauth/token?***#***'],
    ['redis://:pw@10.0.0.1:6379/2', 'redis://***@10.0.0.1:6379/2'],
    ['/oauth/token?client_secret=s', '/oauth/token?***'],
    ['https://auth.example/oauth/token?', 'https://auth.example/oauth/token?***'],
    // An @ the URL parser reads as part of the path, not a userinfo's, is masked as one.
    ['https://user/secret@auth.example/token', 'https://***@auth.example/token'],
    // No URL parser reads it: the scheme alone.
    ['https://user:p?w@auth.example/token', 'https://***'],
  ])('%s is shown as %s', (value, shown) => {
    expect(shownUrl(value)).toBe(shown)
  })

  it.each([['https://auth.example'], ['http://127.0.0.1:8080'], ['/oauth/token'], ['redis://10.0.0.1:6379'], ['plain text'], [null], [3]])('%s, with nothing to hide, is shown as configured', (value) => {
    expect(shownUrl(value)).toBe(value)
  })
})
