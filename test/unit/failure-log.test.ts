import { describe, expect, it } from 'vitest'
import pino from 'pino'
import { FailureLog, failureFields, handledFailure } from '../../src/observe/failure-log.js'
import { loggerOptions, SecretSet } from '../../src/observe/logger.js'
import { captureLogs } from '../helpers/build-gateway.js'
import { fakeClock } from '../helpers/clock.js'

// A flood of one handled failure is one line at once and one line per interval after,
// with a count; other failures keep their own first line (test/integration/failure-log.test.ts
// drives it through the gateway).

describe('handledFailure: warn without a stack, or error with one', () => {
  it.each([
    [502, 'GW_UPSTREAM', true],
    [504, 'GW_UPSTREAM_TIMEOUT', true],
    [503, 'GW_OVERLOADED', true],
    [502, 'GW_PLATFORM_AUTH', true],
    [503, 'GW_REDIS_UNAVAILABLE', true],
    [500, 'GW_INTERNAL', false],
    [500, undefined, false],
    [502, 'UND_ERR_SOCKET', false],
    [503, undefined, false],
  ])('%i %s: %s', (status, code, handled) => {
    expect(handledFailure(status, code)).toBe(handled)
  })
})

describe('FailureLog', () => {
  function setup() {
    const clock = fakeClock(0)
    const lines: { fields: Record<string, unknown>; msg: string }[] = []
    const log = { warn: (fields: Record<string, unknown>, msg: string) => lines.push({ fields, msg }) }
    const failures = new FailureLog({ log: log as never, intervalMs: 10_000, clock })
    const first: string[] = []
    const note = (code: string, how?: string) => failures.note(code, () => first.push(code), how)
    return { clock, lines, failures, first, note }
  }

  it('logs the first in full, counts the rest, and sums them up at the end of the interval', () => {
    const { clock, lines, first, note } = setup()
    for (let i = 0; i < 40; i++) note('GW_UPSTREAM_TIMEOUT')
    expect(first).toEqual(['GW_UPSTREAM_TIMEOUT'])
    expect(lines).toEqual([])
    clock.advance(10_000)
    expect(lines).toEqual([{ fields: { code: 'GW_UPSTREAM_TIMEOUT', count: 39, seconds: 10 }, msg: 'GW_UPSTREAM_TIMEOUT: 39 more in the last 10 s' }])
  })

  it('gives a flood that goes on one line per interval, and a failure after a quiet interval its full line again', () => {
    const { clock, lines, first, note } = setup()
    note('GW_UPSTREAM')
    for (let s = 0; s < 30; s++) {
      clock.advance(1000)
      note('GW_UPSTREAM')
    }
    // The note at 10 s falls in the second interval, the one at 30 s in the fourth.
    expect(first).toHaveLength(1)
    expect(lines.map((l) => l.fields.count)).toEqual([9, 10, 10])
    clock.advance(20_000)
    expect(lines.map((l) => l.fields.count)).toEqual([9, 10, 10, 1])
    note('GW_UPSTREAM')
    expect(first).toHaveLength(2)
  })

  it('keeps codes, and stale copies served, apart', () => {
    const { clock, lines, first, note } = setup()
    note('GW_UPSTREAM')
    note('GW_UPSTREAM_TIMEOUT')
    note('GW_UPSTREAM', 'stale copy served')
    note('GW_UPSTREAM', 'stale copy served')
    expect(first).toEqual(['GW_UPSTREAM', 'GW_UPSTREAM_TIMEOUT', 'GW_UPSTREAM'])
    clock.advance(10_000)
    expect(lines).toEqual([{ fields: { code: 'GW_UPSTREAM', how: 'stale copy served', count: 1, seconds: 10 }, msg: 'GW_UPSTREAM (stale copy served): 1 more in the last 10 s' }])
  })

  it('sums up what it counted when closed, and nothing after', () => {
    const { clock, lines, failures, note } = setup()
    note('GW_OVERLOADED')
    note('GW_OVERLOADED')
    clock.advance(3000)
    failures.close()
    expect(lines).toEqual([{ fields: { code: 'GW_OVERLOADED', count: 1, seconds: 3 }, msg: 'GW_OVERLOADED: 1 more in the last 3 s' }])
    clock.advance(20_000)
    expect(lines).toHaveLength(1)
  })
})

describe('a handled failure\'s line', () => {
  const driver = Object.assign(new Error("Stream isn't writeable and enableOfflineQueue options is false"), { code: 'ERR_OFFLINE' })

  it('carries the error\'s message, its own code where it is not the line\'s, and its cause\'s message, a Redis command\'s failure in the gateway\'s words; no stack', () => {
    const closed = Object.assign(new Error('Connection is closed.'), { code: 'ERR_CLOSED' })
    expect(failureFields('GW_JOBS_UNAVAILABLE', closed)).toEqual({ reason: 'not connected to Redis (the connection was closed and is not made again)', errorCode: 'ERR_CLOSED' })
    expect(failureFields('GW_JOBS_UNAVAILABLE', driver)).toEqual({ reason: 'not connected to Redis (reconnecting)', errorCode: 'ERR_OFFLINE' })
    const answered = Object.assign(new Error('report jobs are kept in Redis', { cause: driver }), { code: 'GW_JOBS_UNAVAILABLE' })
    expect(failureFields('GW_JOBS_UNAVAILABLE', answered)).toEqual({ reason: 'report jobs are kept in Redis', cause: 'not connected to Redis (reconnecting)' })
    expect(failureFields('OTEL_EXPORT', 'not an error')).toEqual({})
  })

  it('is written by FailureLog.warn with its code and fields, once a flood', () => {
    const lines: [Record<string, unknown>, string][] = []
    const log = { warn: (fields: Record<string, unknown>, msg: string) => void lines.push([fields, msg]) } as never
    const failures = new FailureLog({ log, clock: fakeClock(0) })
    for (let i = 0; i < 3; i++) failures.warn('GW_JOBS_UNAVAILABLE', { log, msg: 'looking for report jobs to run failed', err: driver, fields: { job: 'j1' } }, 'runner')
    expect(lines).toEqual([[{ code: 'GW_JOBS_UNAVAILABLE', job: 'j1', reason: 'not connected to Redis (reconnecting)', errorCode: 'ERR_OFFLINE' }, 'looking for report jobs to run failed']])
  })
})

describe('the logger: a stack on error lines only', () => {
  it('writes a warn line\'s err as a handled failure\'s fields (failureFields), an error line\'s with its stack', () => {
    const logs = captureLogs()
    const log = pino(loggerOptions('info', new SecretSet()), logs.stream)
    const err = Object.assign(new Error('Connection is closed.', { cause: new Error('ECONNREFUSED') }), { code: 'ERR_CLOSED' })
    log.warn({ err, job: 'j1' }, 'renewing a report job\'s lease failed')
    log.error({ err }, 'request failed')
    const [warned, failed] = logs.records()
    expect(warned).toMatchObject({ job: 'j1', reason: 'not connected to Redis (the connection was closed and is not made again)', errorCode: 'ERR_CLOSED', cause: 'ECONNREFUSED' })
    expect(warned).not.toHaveProperty('err')
    expect(JSON.stringify(warned)).not.toContain('stack')
    expect(failed).toMatchObject({ err: { message: expect.stringContaining('Connection is closed.'), stack: expect.stringContaining('Error: Connection is closed.') } })
  })
})
