import { hostname } from 'node:os'
import { describe, expect, it } from 'vitest'
import { crashLine } from '../../src/observe/crash-line.js'

describe('the line of a crash before the logger runs', () => {
  it('is one JSON line in the logger\'s shape, naming the error with its stack', () => {
    const err = new RangeError('out of range')
    const line = crashLine('failed to start', err, [], 1_000)
    expect(line.endsWith('\n')).toBe(true)
    expect(line.trimEnd()).not.toContain('\n')
    expect(JSON.parse(line)).toEqual({ level: 60, time: 1_000, pid: process.pid, hostname: hostname(), err: { type: 'RangeError', message: 'out of range', stack: err.stack }, msg: 'failed to start' })
  })

  it('scrubs the secrets named, in the message and the stack, as JSON escapes them too', () => {
    const secret = 'a"secret\\value-0123'
    const line = crashLine('crashed', new Error(`token ${secret} leaked`), [secret])
    expect(line).not.toContain(JSON.stringify(secret).slice(1, -1))
    expect(JSON.parse(line).err.message).toBe('token [REDACTED] leaked')
  })

  it('names a rejection\'s reason that is no Error by its type and its text', () => {
    expect(JSON.parse(crashLine('crashed', 'just text', [])).err).toEqual({ type: 'string', message: 'just text' })
  })
})
