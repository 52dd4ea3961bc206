import { describe, expect, it } from 'vitest'
import { FAILED_IN_A_ROW, FAILED_WITHIN_MS, PlatformFailing } from '../../src/platform/client/platform-failing.js'

describe('PlatformFailing', () => {
  it('names a credential once its latest tries failed in a row, until one is answered', () => {
    const f = new PlatformFailing()
    for (let i = 1; i < FAILED_IN_A_ROW; i++) f.failed('default', 1000)
    expect(f.failing(1000)).toEqual([])
    f.failed('default', 1000)
    f.failed('agency', 1000)
    expect(f.failing(1000)).toEqual(['default'])
    f.answered('default')
    expect(f.failing(1000)).toEqual([])
  })

  it('names it no longer once its latest failure is older than FAILED_WITHIN_MS: a replica that made no call since says nothing of now', () => {
    const f = new PlatformFailing()
    for (let i = 0; i < FAILED_IN_A_ROW; i++) f.failed('default', 0)
    expect(f.failing(FAILED_WITHIN_MS)).toEqual(['default'])
    expect(f.failing(FAILED_WITHIN_MS + 1)).toEqual([])
  })
})
