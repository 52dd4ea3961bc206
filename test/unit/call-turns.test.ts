import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { loopIterations, mostInOneIteration } from '../helpers/loop-iterations.js'
import { CallTurns } from '../../src/reports/call-turns.js'
import { fetchReport, type FetcherDeps } from '../../src/reports/report-fetcher.js'
import { canonicalGetReport } from '../../src/reports/report-query.js'
import { PlatformAnswers } from '../../src/platform/client/answer-buffer.js'
import { CallersGoneError } from '../../src/platform/client/caller-group.js'
import type { PlatformCall, PlatformClient, PlatformResponse } from '../../src/platform/client/platform-client.js'
import type { TokenProvider } from '../../src/platform/tokens/token-provider.js'


describe('CallTurns', () => {
  it('gives one piece of work a turn per loop iteration, the teams in turn, each team first come first served', async () => {
    const turns = new CallTurns()
    const loop = loopIterations()
    const order: Array<{ who: string; iteration: number }> = []
    const ask = (team: string, who: string) => turns.turn(team).then((go) => void order.push({ who: go ? who : `${who} gone`, iteration: loop.now }))
    await Promise.all([ask('burst', 'b1'), ask('burst', 'b2'), ask('burst', 'b3'), ask('dashboard', 'd1'), ask('burst', 'b4')])
    loop.stop()
    expect(order.map((o) => o.who)).toEqual(['b1', 'd1', 'b2', 'b3', 'b4'])
    expect(new Set(order.map((o) => o.iteration)).size).toBe(order.length)
    expect(turns.waiting).toBe(0)
  })

  it('gives up the place of work whose asker is gone before its turn: it takes no turn from the others', async () => {
    const turns = new CallTurns()
    const loop = loopIterations()
    const gone = new AbortController()
    const order: Array<{ who: string; iteration: number }> = []
    const ask = (who: string, signal?: AbortSignal) => turns.turn('burst', signal).then((go) => void order.push({ who: go ? who : `${who} gone`, iteration: loop.now }))
    const asked = [ask('b1'), ask('b2', gone.signal), ask('b3')]
    gone.abort()
    expect(turns.waiting).toBe(2)
    await Promise.all([...asked, ask('b4', gone.signal)])
    loop.stop()
    // The two gone at once, then b1 and b3 in two iterations after it: b2 left no gap.
    expect(order.map((o) => o.who)).toEqual(['b2 gone', 'b4 gone', 'b1', 'b3'])
    expect(order[2]!.iteration).toBeGreaterThan(order[0]!.iteration)
    expect(order[3]!.iteration).toBe(order[2]!.iteration + 1)
  })
})

const ROWS = Buffer.from(JSON.stringify({ rows: Array.from({ length: 50 }, (_, i) => ({ day: i, clicks: i * 7 })) }))

// A platform whose answers all end at once, when the test lets them (`open`): as they do
// when a closed loop of misses has many calls in flight and the loop polls their sockets
// together. `sent` holds each call as sent, with the iteration of the loop it was sent in.
function gatedPlatform(loop: { readonly now: number }): { client: PlatformClient; sent: Array<PlatformCall & { iteration: number }>; open: () => void } {
  const bodies: Readable[] = []
  const sent: Array<PlatformCall & { iteration: number }> = []
  const send = (_provider: TokenProvider, call: PlatformCall) => {
    sent.push({ ...call, iteration: loop.now })
    const body = new Readable({ read: () => undefined })
    bodies.push(body)
    const res: PlatformResponse = { status: 200, headers: { 'content-type': 'application/json' }, body }
    return Promise.resolve(res)
  }
  const open = () => {
    for (const body of bodies) {
      body.push(ROWS)
      body.push(null)
    }
  }
  return { client: { send } as unknown as PlatformClient, sent, open }
}

/** Resolves once `n` calls were sent, looking once per loop iteration. */
function untilSent(sent: readonly unknown[], n: number): Promise<void> {
  return new Promise((resolve) => {
    const look = () => (sent.length >= n ? resolve() : setImmediate(look))
    look()
  })
}

function fetcherDeps(turns: CallTurns, more: Partial<FetcherDeps> = {}): FetcherDeps {
  return {
    maxEntryBytes: 1 << 20,
    reportFields: [],
    answers: new PlatformAnswers({ totalBytes: 1 << 20, readIdleMs: 1000, onSlowReader: () => undefined }),
    log: { warn: () => undefined },
    ttl: { recentMs: 9000, settledMs: 9000, settledAfterDays: 2, timeZone: 'UTC', staleWhileRevalidateMs: 9000, staleIfErrorMs: 60000 },
    turns,
    ...more,
  }
}

const provider = { name: 'default' } as TokenProvider
// The calls' work class (reports/work-class.ts): the stand-in platform here does not read it.
const WORK = '/api/v1/report/campaigns/get|r3||n0'
const reportOf = (i: number) => canonicalGetReport('/api/v1/report/campaigns/get', `advertiserId=${100 + i}&dateFrom=2026-01-01&dateTo=2026-01-07`, { maxRangeDays: 400 })

describe('report calls asked together', () => {
  it('start one per loop iteration, so that a request read meanwhile waits behind at most one start', async () => {
    const loop = loopIterations()
    const { client, sent, open } = gatedPlatform(loop)
    const deps = fetcherDeps(new CallTurns())
    // Twenty misses' calls asked in one turn of the loop, as when one poll reads twenty requests.
    const calls = Array.from({ length: 20 }, (_, i) => fetchReport(client, provider, reportOf(i), { requestId: `r${i}`, team: 'burst', workClass: WORK }, deps))
    expect(sent).toHaveLength(0)
    await untilSent(sent, 20)
    open()
    await Promise.all(calls)
    loop.stop()
    expect(mostInOneIteration(sent.map((s) => s.iteration))).toBe(1)
  })

  it('complete one per loop iteration, so that a request read meanwhile waits behind at most one completion', async () => {
    const loop = loopIterations()
    const { client, sent, open } = gatedPlatform(loop)
    const deps = fetcherDeps(new CallTurns())
    const done: number[] = []
    const calls = Array.from({ length: 20 }, (_, i) =>
      fetchReport(client, provider, reportOf(i), { requestId: `r${i}`, team: 'burst', workClass: WORK }, deps).then((result) => {
        expect(result.kind).toBe('entry')
        done.push(loop.now)
      }),
    )
    await untilSent(sent, 20)
    // Every call sent, then every answer ends in the same turn of the loop.
    open()
    await Promise.all(calls)
    loop.stop()
    expect(mostInOneIteration(done)).toBe(1)
  })

  it('send none whose callers all hung up while it waited for its turn, as a call dropped in the queue', async () => {
    const loop = loopIterations()
    const { client, sent, open } = gatedPlatform(loop)
    const deps = fetcherDeps(new CallTurns())
    const hangUp = new AbortController()
    const kept = fetchReport(client, provider, reportOf(1), { requestId: 'kept', team: 'burst', workClass: WORK }, deps)
    const left = fetchReport(client, provider, reportOf(2), { requestId: 'left', team: 'burst', workClass: WORK, hangUp: hangUp.signal }, deps)
    hangUp.abort(new CallersGoneError())
    const gone = await left
    expect(gone.kind).toBe('failed')
    expect(gone.kind === 'failed' && gone.error.cause).toBeInstanceOf(CallersGoneError)
    await untilSent(sent, 1)
    open()
    expect((await kept).kind).toBe('entry')
    loop.stop()
    expect(sent.map((s) => s.requestId)).toEqual(['kept'])
  })

  it('count their wait for a turn within their budget', async () => {
    const loop = loopIterations()
    const { client, sent, open } = gatedPlatform(loop)
    let now = 1_000_000
    const deps = fetcherDeps(new CallTurns(), { timeoutMs: 5000, now: () => now })
    const first = fetchReport(client, provider, reportOf(1), { requestId: 'first', team: 'burst', workClass: WORK }, deps)
    const late = fetchReport(client, provider, reportOf(2), { requestId: 'late', team: 'burst', workClass: WORK }, { ...deps, timeoutMs: 300 })
    // The clock moves on while both wait for their turns: 400 ms of the first's 5 s, all of the late one's 300.
    now += 400
    const timedOut = await late
    expect(timedOut.kind === 'failed' && timedOut.error.code).toBe('GW_UPSTREAM_TIMEOUT')
    await untilSent(sent, 1)
    open()
    expect((await first).kind).toBe('entry')
    loop.stop()
    expect(sent.map((s) => [s.requestId, s.timeoutMs])).toEqual([['first', 4600]])
  })
})
