import { describe, expect, it } from 'vitest'
import { NONCE_WINDOW, NonceSource, SeenNonces } from '../../src/redis/seen-nonces.js'

// A bus message is news once: its nonce (sender and sequence) is taken once over the
// message's lifetime, with memory per sender, not per message.

const MAX_AGE = 60_000
const T = 1_767_225_600_000
const A = 'a1a1a1a1a1a1'
const B = 'b2b2b2b2b2b2'

describe('SeenNonces', () => {
  it.each<[string, [string, string, number, number][], boolean[]]>([
    ['takes a new nonce once', [['c', `${A}-1`, T, T], ['c', `${A}-1`, T, T + 1]], [true, false]],
    ['takes the next ones of a sender', [['c', `${A}-1`, T, T], ['c', `${A}-2`, T, T], ['c', `${A}-3`, T, T]], [true, true, true]],
    ['takes a message overtaken by a later one, once', [['c', `${A}-2`, T, T], ['c', `${A}-1`, T, T], ['c', `${A}-1`, T, T]], [true, true, false]],
    ['keeps senders apart', [['c', `${A}-1`, T, T], ['c', `${B}-1`, T, T]], [true, true]],
    ['keeps channels apart', [['c', `${A}-1`, T, T], ['d', `${A}-1`, T, T]], [true, true]],
    ['refuses a message older than its lifetime', [['c', `${A}-1`, T - MAX_AGE - 1, T]], [false]],
    ['refuses a message dated further ahead than its lifetime', [['c', `${A}-1`, T + MAX_AGE + 1, T]], [false]],
    ['takes a message at the ends of its lifetime', [['c', `${A}-1`, T - MAX_AGE, T], ['c', `${B}-1`, T + MAX_AGE, T]], [true, true]],
    ['refuses a replay for the whole lifetime of its message', [['c', `${A}-1`, T, T], ['c', `${A}-1`, T, T + MAX_AGE]], [true, false]],
    ['refuses a replay after the lifetime, by its age', [['c', `${A}-1`, T, T], ['c', `${A}-1`, T, T + MAX_AGE + 1]], [true, false]],
    ['refuses a time that is no number', [['c', `${A}-1`, Number.NaN, T]], [false]],
    ['refuses a nonce of another form', [['c', 'not-a-nonce', T, T], ['c', `${A}-0`, T, T], ['c', `${A}-01`, T, T]], [false, false, false]],
  ])('%s', (_name, messages, expected) => {
    const nonces = new SeenNonces({ maxAgeMs: MAX_AGE, maxEntries: 100 })
    expect(messages.map(([channel, nonce, sentAt, now]) => nonces.take(channel, nonce, sentAt, now))).toEqual(expected)
  })

  it('refuses a message further below the highest taken than its window', () => {
    const nonces = new SeenNonces({ maxAgeMs: MAX_AGE, maxEntries: 100 })
    expect(nonces.take('c', `${A}-${NONCE_WINDOW + 1}`, T, T)).toBe(true)
    expect(nonces.take('c', `${A}-2`, T, T)).toBe(true)
    expect(nonces.take('c', `${A}-1`, T, T)).toBe(false)
  })

  it('remembers one entry per sender and channel, whatever the number of messages', () => {
    const nonces = new SeenNonces({ maxAgeMs: MAX_AGE, maxEntries: 100 })
    const source = new NonceSource()
    for (let i = 0; i < 10_000; i++) expect(nonces.take('c', source.next(), T + i, T + i)).toBe(true)
    expect(nonces.size).toBe(1)
  })

  it('forgets a sender not heard of for a lifetime', () => {
    const nonces = new SeenNonces({ maxAgeMs: MAX_AGE, maxEntries: 100 })
    nonces.take('c', `${A}-1`, T, T)
    nonces.take('c', `${B}-1`, T + MAX_AGE + 1, T + MAX_AGE + 1)
    expect(nonces.size).toBe(1)
  })

  it('stays within its bound, and refuses what was sent at or before the last message of a sender it forgot', () => {
    const nonces = new SeenNonces({ maxAgeMs: MAX_AGE, maxEntries: 2 })
    expect(nonces.take('c', `${A}-1`, T, T)).toBe(true)
    expect(nonces.take('c', `${B}-1`, T + 1, T + 1)).toBe(true)
    expect(nonces.take('d', `${A}-1`, T + 2, T + 2)).toBe(true)
    expect(nonces.size).toBe(2)
    // A on c is forgotten: its replay is refused by the floor, and so is anything as old.
    expect(nonces.take('c', `${A}-1`, T, T + 10)).toBe(false)
    expect(nonces.take('e', `${B}-1`, T, T + 10)).toBe(false)
    expect(nonces.take('e', `${B}-1`, T + 5, T + 10)).toBe(true)
  })
})

describe('NonceSource', () => {
  it('gives each message a nonce of its own, in order', () => {
    const source = new NonceSource()
    const [a, b] = [source.next(), source.next()]
    expect(a).toMatch(/^[0-9a-f]{12}-1$/)
    expect(b).toBe(`${a.slice(0, 12)}-2`)
    expect(new NonceSource().next()).not.toBe(a)
  })
})
