import { Cluster, Pipeline } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { SlotMovingCluster } from '../../src/redis/client.js'

// SlotMovingCluster fails a TRYAGAIN at once by overriding Cluster#handleError, a method
// ioredis marks @ignore. An upgrade that renames it, changes its handlers or stops routing
// a command's or a pipeline's redirection errors through it would leave the override in
// place and doing nothing: a resharding would open the circuit again. This fails first.

type Handlers = Record<'moved' | 'ask' | 'tryagain' | 'clusterDown' | 'connectionClosed' | 'maxRedirections' | 'defaults', () => void>

/** Handlers recording which one ioredis called, synchronously. */
function recording(): { handlers: Handlers; called: string[] } {
  const called: string[] = []
  const names = ['moved', 'ask', 'tryagain', 'clusterDown', 'connectionClosed', 'maxRedirections', 'defaults'] as const
  const handlers = Object.fromEntries(names.map((n) => [n, () => void called.push(n)])) as Handlers
  return { handlers, called }
}

describe('SlotMovingCluster against the installed ioredis', () => {
  const made: Cluster[] = []
  const cluster = (Kind: typeof Cluster) => {
    const c = new Kind([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true, retryDelayOnTryAgain: 60_000 })
    made.push(c)
    return c
  }
  afterEach(() => {
    for (const c of made.splice(0)) c.disconnect()
  })

  it('overrides a method of ioredis\'s Cluster that a command\'s and a pipeline\'s redirection errors go through', () => {
    const own = Object.getOwnPropertyDescriptor(Cluster.prototype, 'handleError')?.value as unknown
    expect(typeof own).toBe('function')
    expect(SlotMovingCluster.prototype.handleError).not.toBe(own)
    // The two callers ioredis has: a command's reply error and a pipeline's (MULTI too).
    expect(String(Cluster.prototype.sendCommand)).toMatch(/\.handleError\(/)
    expect(String((Pipeline.prototype as unknown as { fillResult: () => void }).fillResult)).toMatch(/\.handleError\(/)
  })

  it('is given the handlers it calls: ioredis\'s own calls defaults for an error it does not follow, and delays a TRYAGAIN', () => {
    const base = cluster(Cluster)
    const other = recording()
    base.handleError(new Error('ERR unknown'), {}, other.handlers)
    expect(other.called).toEqual(['defaults'])
    const tryAgain = recording()
    base.handleError(new Error('TRYAGAIN Multiple keys request during rehashing of slot'), {}, tryAgain.handlers)
    expect(tryAgain.called).toEqual([])
  })

  it('fails a TRYAGAIN at once (defaults) and leaves MOVED and ASK to ioredis', () => {
    const moving = cluster(SlotMovingCluster)
    const tryAgain = recording()
    moving.handleError(new Error('TRYAGAIN Multiple keys request during rehashing of slot'), {}, tryAgain.handlers)
    expect(tryAgain.called).toEqual(['defaults'])
    const moved = recording()
    moving.handleError(new Error('MOVED 3999 127.0.0.1:6381'), {}, moved.handlers)
    expect(moved.called).toEqual(['moved'])
    const ask = recording()
    moving.handleError(new Error('ASK 3999 127.0.0.1:6381'), {}, ask.handlers)
    expect(ask.called).toEqual(['ask'])
  })
})
