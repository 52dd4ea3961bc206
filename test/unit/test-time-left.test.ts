import { setTimeout as sleep } from 'node:timers/promises'
import { beforeEach, describe, expect, it } from 'vitest'
import { waitFor } from '../helpers/wait.js'

// A test's timeout counts from its body (its beforeEach hooks have hookTimeout of their
// own), so a wait in the body has the whole of it, less waitFor's naming margin (1 s).
const TIMEOUT_MS = 2500
const CONDITION_AFTER_MS = 500
// Counted from the hook's start instead, the wait would have nothing left (2500 − 1000 − 1500).
const HOOK_MS = 1500

describe('waitFor in a test whose beforeEach took most of its timeout', () => {
  beforeEach(() => sleep(HOOK_MS))

  it('waits for a condition within the rest of the test\'s own timeout', { timeout: TIMEOUT_MS }, async () => {
    let held = false
    setTimeout(() => { held = true }, CONDITION_AFTER_MS).unref()
    await waitFor('the condition set half a second into the test', () => held)
  })
})

describe('waitFor in a test with a timeout of its own', () => {
  // The wait has 200 ms (1200 − the 1 s margin); the default bound outside a test's body
  // (15 s) would run into the test's timeout instead.
  it('fails naming what it waited for before the test\'s own timeout ends it', { timeout: 1200 }, async () => {
    await expect(waitFor('what never comes', () => false)).rejects.toThrow('timed out waiting for what never comes')
  })
})
