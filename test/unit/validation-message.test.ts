import { describe, expect, it } from 'vitest'
import { nearSpelling, notTaken } from '../../src/http/hooks/validation-message.js'

describe('a parameter a call does not take, named in its refusal', () => {
  it('is named as it is, with what the call takes', () => {
    expect(notTaken('advertiserID', ['advertiserId', 'dryRun'])).toBe('advertiserID: not a parameter of this call (it takes advertiserId, dryRun)')
    expect(notTaken('x', [], 'a field of the body')).toBe('x: not a field of the body of this call (it takes none)')
  })

  it('is bounded as every refusal bounds a caller\'s text: its first 64 characters, then how many were left out', () => {
    expect(notTaken('p'.repeat(100), [])).toBe(`${'p'.repeat(64)}… (+36 characters): not a parameter of this call (it takes none)`)
  })

  it('takes a name for a misspelling of one a call takes by its letters and digits alone, never a name that one of them begins', () => {
    for (const name of ['advertiserID', 'advertiser_id', 'advertiser', 'advertizerId', 'Wait', 'wait[]']) expect(nearSpelling(name, name.startsWith('W') || name.startsWith('w') ? 'wait' : 'advertiserId'), name).toBe(true)
    for (const name of ['advertiserId-sandbox-password', 'timeout', 'x', '!!']) expect(nearSpelling(name, name === 'timeout' ? 'wait' : 'advertiserId'), name).toBe(false)
  })
})
