import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { loopIterations, mostInOneIteration } from '../helpers/loop-iterations.js'
import { CompletionTurns } from '../../src/reports/completion-turns.js'
import { fetchReport } from '../../src/reports/report-fetcher.js'
import { canonicalGetReport } from '../../src/reports/report-query.js'
import { PlatformAnswers } from '../../src/platform/client/answer-buffer.js'
import type { PlatformClient, PlatformResponse } from '../../src/platform/client/platform-client.js'
import type { TokenProvider } from '../../src/platform/tokens/token-provider.js'


describe('CompletionTurns', () => {
  it('gives one completion a turn per loop iteration, the teams in turn, each team first come first served', async () => {
    const turns = new CompletionTurns()
    const loop = loopIterations()
    const order: Array<{ who: string; iteration: number }> = []
    const ask = (team: string, who: string) => turns.turn(team).then(() => void order.push({ who, iteration: loop.now }))
    await Promise.all([ask('burst', 'b1'), ask('burst', 'b2'), ask('burst', 'b3'), ask('dashboard', 'd1'), ask('burst', 'b4')])
    loop.stop()
    expect(order.map((o) => o.who)).toEqual(['b1', 'd1', 'b2', 'b3', 'b4'])
    expect(new Set(order.map((o) => o.iteration)).size).toBe(order.length)
    expect(turns.waiting).toBe(0)
  })
})

// A platform whose answers all end at once, when the test lets them: as they do when a
// closed loop of misses has many calls in flight and the loop polls their sockets together.
function gatedPlatform(): { client: PlatformClient; open: () => void } {
  const bodies: Readable[] = []
  const send = () => {
    const body = new Readable({ read: () => undefined })
    bodies.push(body)
    const res: PlatformResponse = { status: 200, headers: { 'content-type': 'application/json' }, body }
    return Promise.resolve(res)
  }
  const open = () => {
    for (const body of bodies) {
      body.push(Buffer.from(JSON.stringify({ rows: Array.from({ length: 50 }, (_, i) => ({ day: i, clicks: i * 7 })) })))
      body.push(null)
    }
  }
  return { client: { send } as unknown as PlatformClient, open }
}

describe('report calls completing together', () => {
  it('are completed one per loop iteration, so that a request read meanwhile waits behind at most one', async () => {
    const { client, open } = gatedPlatform()
    const turns = new CompletionTurns()
    const answers = new PlatformAnswers({ totalBytes: 1 << 20, readIdleMs: 1000, onSlowReader: () => undefined })
    const deps = {
      maxEntryBytes: 1 << 20,
      answers,
      log: { warn: () => undefined },
      ttl: { recentMs: 9000, settledMs: 9000, settledAfterDays: 2, timeZone: 'UTC', staleWhileRevalidateMs: 9000, staleIfErrorMs: 60000 },
      turns,
    }
    const provider = { name: 'default' } as TokenProvider
    const done: number[] = []
    const loop = loopIterations()
    const calls = Array.from({ length: 20 }, (_, i) => {
      const report = canonicalGetReport('/api/v1/report/campaigns/get', `advertiserId=${100 + i}&dateFrom=2026-01-01&dateTo=2026-01-07`, { maxRangeDays: 400 })
      return fetchReport(client, provider, report, { requestId: `r${i}`, team: 'burst' }, deps).then((result) => {
        expect(result.kind).toBe('entry')
        done.push(loop.now)
      })
    })
    // Every call sent, then every answer ends in the same turn of the loop.
    await Promise.resolve()
    open()
    await Promise.all(calls)
    loop.stop()
    expect(mostInOneIteration(done)).toBe(1)
  })
})
