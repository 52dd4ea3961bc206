import { describe, expect, it } from 'vitest'
import { RefusalNotice, WARN_EVERY_MS } from '../../src/http/connection-bound.js'

// A listener's refused connections are said in one warn line a minute at most: the first
// at once, then the count since the last line.

describe('RefusalNotice', () => {
  it('says the first refusal at once, then nothing within a minute, then every one since the last line', () => {
    const notice = new RefusalNotice()
    expect(notice.note(1000)).toBe(1)
    expect(notice.note(1001)).toBeNull()
    expect(notice.note(1000 + WARN_EVERY_MS - 1)).toBeNull()
    expect(notice.note(1000 + WARN_EVERY_MS)).toBe(3)
    expect(notice.note(1000 + 3 * WARN_EVERY_MS)).toBe(1)
  })
})
