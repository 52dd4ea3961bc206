import { describe, expect, it } from 'vitest'
import { configProblems as problems, loadConfigYaml as load } from '../helpers/load-config.js'

// limits.secretSuspension (docs/decisions/secret-guesses.md): how long a team whose request
// held a secret of the gateway's is refused. Shorter than an hour, a bisection of the batch
// that hit ends within a day; longer than a year, it is a ban, not a period.

describe('limits.secretSuspension', () => {
  it('is 7 days unless set', () => {
    expect(load('').limits.secretSuspensionMs).toBe(7 * 86_400_000)
  })

  it('takes 1h to 365d', () => {
    expect(load('limits: { secretSuspension: 1h }').limits.secretSuspensionMs).toBe(3_600_000)
    expect(load('limits: { secretSuspension: 365d }').limits.secretSuspensionMs).toBe(365 * 86_400_000)
  })

  it('refuses less than 1h and more than 365d', () => {
    expect(problems('limits: { secretSuspension: 59m }')).toEqual(['limits.secretSuspension: must be from 1h to 365d (got 59m)'])
    expect(problems('limits: { secretSuspension: 0 }')).toEqual(['limits.secretSuspension: must be from 1h to 365d (got 0)'])
    expect(problems('limits: { secretSuspension: 366d }')).toEqual(['limits.secretSuspension: must be from 1h to 365d (got 366d)'])
  })
})
