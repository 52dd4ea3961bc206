import { describe, expect, it } from 'vitest'
import { holdsKeyRun, SHORTEST_KEY_CHARS, withoutKeyRuns } from '../../src/observe/key-runs.js'

describe('withoutKeyRuns', () => {
  it('keeps a write\'s ordinary path and accounts', () => {
    expect(withoutKeyRuns('/api/v1/campaign/banner/create')).toBe('/api/v1/campaign/banner/create')
    expect(withoutKeyRuns('/api/v1/campaign/banner/delete/101001')).toBe('/api/v1/campaign/banner/delete/101001')
    expect(withoutKeyRuns('101')).toBe('101')
  })

  it('redacts a run of a random key\'s length with upper case, lower case and digits, whole', () => {
    expect(withoutKeyRuns('/api/v1/x/Xk3+pQ7vLm2Rt9Wz4Bc8Nd1F')).toBe('[REDACTED]')
    expect(withoutKeyRuns('id-Xk3+pQ7vLm2Rt9Wz4Bc8Nd1F-end')).toBe('id-[REDACTED]-end')
    expect(withoutKeyRuns('a-Xk3%2BpQ7vLm2Rt9Wz4Bc8Nd1F')).toBe('a-[REDACTED]')
  })

  it('keeps a run shorter than a key, or without each kind of character', () => {
    const short = 'Xk3pQ7vLm2Rt9Wz4Bc8Nd1F'.slice(0, SHORTEST_KEY_CHARS - 1)
    expect(withoutKeyRuns(`a-${short}`)).toBe(`a-${short}`)
    expect(withoutKeyRuns('a-abcdefghijklmnopqrstuvwxyz0123')).toBe('a-abcdefghijklmnopqrstuvwxyz0123')
  })

  it('redacts whsec_ in any spelling, and a run holding a redaction, whole', () => {
    expect(withoutKeyRuns('x-whsec_ab')).toBe('x-[REDACTED]')
    expect(withoutKeyRuns('x-%77hsec%5Fab')).toBe('x-[REDACTED]')
    expect(withoutKeyRuns('x-ab[REDACTED]cd')).toBe('x-[REDACTED]')
  })

  it('writes a key and a guess at it alike, where the log scrubs the key by value', () => {
    const key = 'Xk3+pQ7vLm2Rt9Wz4Bc8Nd1F'
    for (const around of [['', ''], ['/d/', ''], ['/d/AB', 'cd'], ['-', '-']]) {
      const [before, after] = around as [string, string]
      const scrubbed = withoutKeyRuns(`${before}${key}${after}`).replace(key, '[REDACTED]')
      const guessed = withoutKeyRuns(`${before}${key.slice(0, -1)}G${after}`)
      expect(scrubbed).toBe(guessed)
    }
  })

  it('tells whether a text holds such a run, a redaction among them', () => {
    expect(holdsKeyRun('trace.[REDACTED].7')).toBe(true)
    expect(holdsKeyRun('[REDACTED]')).toBe(true)
    expect(holdsKeyRun('trace.Xk3pQ7vLm2Rt9Wz4Bc8Nd1Fa.7')).toBe(true)
    expect(holdsKeyRun('9f0293ab-7b2f-4e17-97a1-eed0bf8036d9')).toBe(false)
    expect(holdsKeyRun('req.42')).toBe(false)
  })
})
