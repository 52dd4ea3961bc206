import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { RedisBreaker } from '../../src/redis/breaker.js'

const COMMAND_TIMEOUT_MS = 250

/** A breaker on a clock the test moves, and a command that fails after `ms` of it. */
function setUp() {
  let now = 1_000_000
  const breaker = new RedisBreaker({ cooldownMs: 5000, log: pino({ level: 'silent' }), now: () => now, commandTimeoutMs: COMMAND_TIMEOUT_MS })
  const failingAfter = (ms: number, message: string) => async () => {
    now += ms
    throw new Error(message)
  }
  return { breaker, failingAfter }
}

describe('the Redis circuit breaker', () => {
  it('opens on a command that timed out when it was due', async () => {
    const { breaker, failingAfter } = setUp()
    expect(await breaker.run(failingAfter(COMMAND_TIMEOUT_MS + 5, 'Command timed out'), 'fallback')).toBe('fallback')
    expect(breaker.state).toBe('open')
  })

  it('stays closed on a timeout that fired long after it was due: the event loop was late, not Redis', async () => {
    const { breaker, failingAfter } = setUp()
    expect(await breaker.run(failingAfter(COMMAND_TIMEOUT_MS * 3, 'Command timed out'), 'fallback')).toBe('fallback')
    expect(breaker.state).toBe('closed')
    // Any other failure, however late, is Redis's.
    expect(await breaker.run(failingAfter(COMMAND_TIMEOUT_MS * 3, 'Connection is closed.'), 'fallback')).toBe('fallback')
    expect(breaker.state).toBe('open')
  })

  it('a command that succeeds after the cooldown closes the circuit only while Redis is whole (a Cluster with every master reached); the trial closes it otherwise', async () => {
    let now = 1_000_000
    let whole = false
    const breaker = new RedisBreaker({ cooldownMs: 5000, log: pino({ level: 'silent' }), now: () => now, whole: () => whole })
    breaker.fail(new Error('Command timed out'))
    now += 5000
    expect(await breaker.run(async () => 'answer', 'fallback')).toBe('answer')
    expect(breaker.state).toBe('open')
    // Open for another cooldown: the next command is not sent.
    expect(await breaker.run(async () => 'answer', 'fallback')).toBe('fallback')
    expect(await breaker.trial(async () => 'PONG')).toBe(true)
    expect(breaker.state).toBe('closed')
    breaker.fail(new Error('Command timed out'))
    now += 5000
    whole = true
    expect(await breaker.run(async () => 'answer', 'fallback')).toBe('answer')
    expect(breaker.state).toBe('closed')
  })
})
