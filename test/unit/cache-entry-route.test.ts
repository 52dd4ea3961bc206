import { describe, expect, it } from 'vitest'
import { withoutShownValue } from '../../src/http/admin/cache-entry-route.js'

describe('withoutShownValue: a report read\'s refusal as the cache entry look-up repeats it', () => {
  it.each([
    ['advertiserId: must be a positive integer (sandbox-demo-password)', 'advertiserId: must be a positive integer'],
    ['dateFrom: not a calendar date (2026-02-30)', 'dateFrom: not a calendar date'],
    ['advertiserId: must be a positive integer (xxxx… (+9936 characters))', 'advertiserId: must be a positive integer'],
    ['byDate: must be 1, true, 0 or false ([REDACTED])', 'byDate: must be 1, true, 0 or false'],
    ['advertiserId: required', 'advertiserId: required'],
    ['advertiserId: given more than once', 'advertiserId: given more than once'],
  ])('%s -> %s', (message, repeated) => {
    expect(withoutShownValue(message)).toBe(repeated)
  })
})
