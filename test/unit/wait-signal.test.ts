import { getEventListeners } from 'node:events'
import { describe, expect, it } from 'vitest'
import { waitSignal } from '../../src/platform/client/wait-signal.js'

// One wait's signal: the first of its sources to abort, until the wait is done.

describe('waitSignal', () => {
  it.each([
    ['the first of its sources to abort', (_wait: ReturnType<typeof waitSignal>, b: AbortController, reason: Error) => b.abort(reason)],
    ['its own abort', (wait: ReturnType<typeof waitSignal>, _b: AbortController, reason: Error) => wait.abort(reason)],
  ])('aborts with the reason of %s, and stops listening to its sources', (_name, abort) => {
    const [a, b] = [new AbortController(), new AbortController()]
    const wait = waitSignal([a.signal, undefined, b.signal])
    expect(wait.signal.aborted).toBe(false)
    const reason = new Error('first')
    abort(wait, b, reason)
    a.abort(new Error('a later'))
    expect(wait.signal.reason).toBe(reason)
    expect(getEventListeners(a.signal, 'abort')).toHaveLength(0)
  })

  it('is aborted at once by a source aborted already, with its reason', () => {
    const [a, b] = [new AbortController(), new AbortController()]
    const reason = new Error('gone')
    b.abort(reason)
    const wait = waitSignal([a.signal, b.signal])
    expect(wait.signal.aborted).toBe(true)
    expect(wait.signal.reason).toBe(reason)
    expect(getEventListeners(a.signal, 'abort')).toHaveLength(0)
  })

  it('once done, leaves its sources without its listener and ignores their aborts', () => {
    const [a, b] = [new AbortController(), new AbortController()]
    const wait = waitSignal([a.signal, b.signal])
    expect(getEventListeners(a.signal, 'abort')).toHaveLength(1)
    wait.done()
    expect(getEventListeners(a.signal, 'abort')).toHaveLength(0)
    expect(getEventListeners(b.signal, 'abort')).toHaveLength(0)
    a.abort()
    expect(wait.signal.aborted).toBe(false)
  })
})
