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

/** A text of the same length as `secret` that is none of the gateway's secrets (its `n`th decoy): `secret` with one character changed. */
export function decoyOf(secret: string, n: number): string {
  const at = n % secret.length
  const alphabet = 'qwertyuiopzxcvbnm'
  const c = alphabet[(Math.floor(n / secret.length) + 1) % alphabet.length] as string
  const swapped = secret[at] === c ? (alphabet[(alphabet.indexOf(c) + 1) % alphabet.length] as string) : c
  return secret.slice(0, at) + swapped + secret.slice(at + 1)
}
