import { afterEach, beforeEach, vi } from 'vitest'
import type { Gateway } from '../../src/compose.js'

/**
 * For a file that sends many secrets with one team to see each refused 400: each refusal
 * asked alone, the suspension it brings left out (what the suspension does is
 * test/attacks/secret-suspension.test.ts's).
 */
export function eachSecretAlone(gateway: () => Gateway): void {
  beforeEach(() => {
    vi.spyOn(gateway().suspensions, 'suspend').mockImplementation(() => undefined)
  })
  afterEach(() => {
    vi.restoreAllMocks()
  })
}
