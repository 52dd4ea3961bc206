import { describe, expect, it } from 'vitest'
import { connectionBound, openFileLimit, reservedFiles } from '../../src/http/connection-bound.js'

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max processes             63432                63432                processes
Max open files            20000                20000                files
Max locked memory         8388608              8388608              bytes
`

describe('a listener\'s connection bound', () => {
  it('reads the soft open-file limit of /proc/self/limits; none when unlimited or not stated', () => {
    expect(openFileLimit(LIMITS)).toBe(20000)
    expect(openFileLimit(LIMITS.replace('Max open files            20000', 'Max open files            unlimited'))).toBeNull()
    expect(openFileLimit('')).toBeNull()
  })

  it('keeps a quarter of the limit, at most 512, for the gateway\'s own files and connections', () => {
    expect(reservedFiles(20000)).toBe(512)
    expect(reservedFiles(256)).toBe(64)
  })

  it('is the setting when set, else half of what the limit leaves past its reserve; no bound without a limit', () => {
    expect(connectionBound(50, 20000)).toBe(50)
    expect(connectionBound(null, 20000)).toBe(9744)
    expect(connectionBound(null, 256)).toBe(96)
    expect(connectionBound(null, 1)).toBe(1)
    expect(connectionBound(null, null)).toBeNull()
  })
})
