import { describe, expect, it } from 'vitest'
import { ADMIN_GUESS_WINDOW_MS, ADMIN_GUESSES, AdminGuesses, guesser } from '../../src/access/admin-guesses.js'

// How fast one address may guess the admin token (admin-guesses.ts), on a clock the test moves.

function guesses(): { list: AdminGuesses; advance(ms: number): void } {
  let now = 1_000_000
  return { list: new AdminGuesses(() => now), advance: (ms) => (now += ms) }
}

describe('the guesses of an address at the admin token', () => {
  it('lock the address once it sent ADMIN_GUESSES refused tokens, until the window of the first ends', () => {
    const { list, advance } = guesses()
    for (let i = 0; i < ADMIN_GUESSES - 1; i++) list.refused('10.0.0.1')
    expect(list.lockedFor('10.0.0.1')).toBeNull()
    advance(10_000)
    list.refused('10.0.0.1')
    expect(list.lockedFor('10.0.0.1')).toBe((ADMIN_GUESS_WINDOW_MS - 10_000) / 1000)
    // Another address guesses on its own.
    expect(list.lockedFor('10.0.0.2')).toBeNull()
    advance(ADMIN_GUESS_WINDOW_MS - 10_000 - 1)
    expect(list.lockedFor('10.0.0.1')).toBe(1)
    advance(1)
    expect(list.lockedFor('10.0.0.1')).toBeNull()
    // A new window begins with the next refusal.
    list.refused('10.0.0.1')
    expect(list.lockedFor('10.0.0.1')).toBeNull()
  })

  it('take an IPv4-mapped address as its IPv4 address, and every address of an IPv6 /64 as one guesser', () => {
    expect(guesser('::ffff:10.0.0.1')).toBe('10.0.0.1')
    expect(guesser('10.0.0.1')).toBe('10.0.0.1')
    expect(guesser('2001:db8:0:1::1')).toBe(guesser('2001:0db8:0000:0001:ffff:ffff:ffff:ffff'))
    expect(guesser('2001:db8:0:1::1')).not.toBe(guesser('2001:db8:0:2::1'))
    expect(guesser('::1')).toBe('0:0:0:0')
    const { list } = guesses()
    for (let i = 0; i < ADMIN_GUESSES; i++) list.refused(`2001:db8:0:1::${i.toString(16)}`)
    expect(list.lockedFor('2001:db8:0:1:abcd::9')).toBeGreaterThan(0)
  })
})
