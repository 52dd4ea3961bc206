import { setTimeout as sleep } from 'node:timers/promises'
import { beforeEach, describe, expect, it } from 'vitest'
import { waitFor } from '../helpers/wait.js'

// A test's timeout counts from its body (its beforeEach hooks have hookTimeout of their
// own), so a wait in the body has the whole of it, less waitFor's naming margin (1 s).
const TIMEOUT_MS = 2500
const CONDITION_AFTER_MS = 500

describe('waitFor in a test whose beforeEach took most of its timeout', () => {
  beforeEach(() => sleep(TIMEOUT_MS - CONDITION_AFTER_MS))

  it('waits for a condition within the rest of the test\'s own timeout', { timeout: TIMEOUT_MS }, async () => {
    let held = false
    setTimeout(() => { held = true }, CONDITION_AFTER_MS).unref()
    await waitFor('the condition set half a second into the test', () => held)
  })

  it('fails naming what it waited for before the test\'s own timeout ends it', { timeout: TIMEOUT_MS }, async () => {
    await expect(waitFor('what never comes', () => false)).rejects.toThrow('timed out waiting for what never comes')
  })
})
