import { describe, expect, it } from 'vitest'
import { holdsKey, keyCandidates, withoutKeys } from '../../src/observe/key-shape.js'

describe('a team key inside other text', () => {
  const key = 'rgw_Ab-9_xYz012345678901234567890123456789ab'
  const percent = key.replace(/_/g, '%5F').replace(/-/g, '%2d').replace(/^r/, '%72')

  it('is found and redacted as itself or percent-encoded, and decoded as the platform reads it', () => {
    for (const spelled of [key, percent, key.replace('_', '%5f')]) {
      expect(holdsKey(`ua/${spelled} x`), spelled).toBe(true)
      expect(withoutKeys(`ua/${spelled} x`), spelled).toBe('ua/[REDACTED] x')
      expect([...keyCandidates(`q=${spelled}&x=1`)], spelled).toEqual([key])
    }
  })

  it('is not what only starts like one, nor a percent-escape of another character', () => {
    for (const text of ['rgw_short', 'rgw%5Fshort', 'rgw%2Fabcdefghijklmnopqrstuvwxyz', 'path%2Fwith%20escapes', 'rgw_%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20%20']) {
      expect(holdsKey(text), text).toBe(false)
      expect(withoutKeys(text), text).toBe(text)
      expect([...keyCandidates(text)], text).toEqual([])
    }
  })
})
