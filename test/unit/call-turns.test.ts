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

  it('runs a start at once, before the loop reaches its check phase, when no work waits for a turn: one an iteration, every other in its turn', async () => {
    const turns = new CallTurns()
    const loop = loopIterations()
    const order: Array<{ who: string; iteration: number; atOnce: boolean }> = []
    const start = (who: string, checked: { done: boolean }) =>
      turns.start('burst').then((go) => void order.push({ who: go ? who : `${who} gone`, iteration: loop.now, atOnce: !checked.done }))
    // Three starts asked in one phase of the loop that is not its check phase, as a poll asks them.
    await outsideTheCheckPhase()
    const first = checkPhase()
    await Promise.all([start('s1', first), start('s2', first), start('s3', first)])
    // A later iteration: the one start at once again; and none while work waits, whatever the phase.
    await outsideTheCheckPhase()
    const second = checkPhase()
    const completion = turns.turn('dashboard').then(() => void order.push({ who: 'd1', iteration: loop.now, atOnce: !second.done }))
    await Promise.all([start('s4', second), completion])
    await outsideTheCheckPhase()
    await start('s5', checkPhase())
    loop.stop()
    expect(order.map((o) => [o.who, o.atOnce])).toEqual([
      ['s1', true],
      ['s2', false],
      ['s3', false],
      ['d1', false],
      ['s4', false],
      ['s5', true],
    ])
    expect(order[2]!.iteration).toBe(order[1]!.iteration + 1)
    expect(order[4]!.iteration).toBe(order[3]!.iteration + 1)
    expect(turns.waiting).toBe(0)
  })
})

/** Resolves in the timers phase of the loop (its continuation runs there too). */
function outsideTheCheckPhase(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0))
}

/** Resolves after `n` turns of the microtask queue: still in the phase of the loop that asked. */
async function microtasks(n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) await Promise.resolve()
}

/** `done` turns true in the loop's next check phase. */
function checkPhase(): { done: boolean } {
  const phase = { done: false }
  setImmediate(() => void (phase.done = true))
  return phase
}

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
    answers: new PlatformAnswers({ totalBytes: 1 << 20, readIdleMs: 1000, onSlowReader: () => undefined }),
    log: { warn: () => undefined },
    ttl: { recentMs: 9000, settledMs: 9000, settledAfterDays: 2, timeZone: 'UTC', staleWhileRevalidateMs: 9000, staleIfErrorMs: 60000 },
    turns,
    ...more,
  }
}

const provider = { name: 'default' } as TokenProvider
const reportOf = (i: number) => canonicalGetReport('/api/v1/report/campaigns/get', `advertiserId=${100 + i}&dateFrom=2026-01-01&dateTo=2026-01-07`, { maxRangeDays: 400 })

describe('report calls asked together', () => {
  it('send the first at once and start the others one per loop iteration, so that a request read meanwhile waits behind at most one start of each', async () => {
    const loop = loopIterations()
    const { client, sent, open } = gatedPlatform(loop)
    const deps = fetcherDeps(new CallTurns())
    // Twenty misses' calls asked in one phase of the loop, as when one poll reads twenty requests.
    await outsideTheCheckPhase()
    const checked = checkPhase()
    const calls = Array.from({ length: 20 }, (_, i) => fetchReport(client, provider, reportOf(i), { requestId: `r${i}`, team: 'burst' }, deps))
    // The first is sent in the phase that asked it, before the loop's check phase (where an
    // HTTP client's own immediate then runs: before the loop's next poll).
    await microtasks(100)
    expect(sent.map((s) => s.requestId)).toEqual(['r0'])
    expect(checked.done).toBe(false)
    await untilSent(sent, 20)
    open()
    await Promise.all(calls)
    loop.stop()
    expect(mostInOneIteration(sent.slice(1).map((s) => s.iteration))).toBe(1)
  })

  it('complete one per loop iteration, so that a request read meanwhile waits behind at most one completion', async () => {
    const loop = loopIterations()
    const { client, sent, open } = gatedPlatform(loop)
    const deps = fetcherDeps(new CallTurns())
    const done: number[] = []
    const calls = Array.from({ length: 20 }, (_, i) =>
      fetchReport(client, provider, reportOf(i), { requestId: `r${i}`, team: 'burst' }, deps).then((result) => {
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
    const kept = fetchReport(client, provider, reportOf(1), { requestId: 'kept', team: 'burst' }, deps)
    const left = fetchReport(client, provider, reportOf(2), { requestId: 'left', team: 'burst', hangUp: hangUp.signal }, deps)
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
    const turns = new CallTurns()
    const deps = fetcherDeps(turns, { timeoutMs: 5000, now: () => now })
    // Work waits for a turn (another team's completion), so no start runs at once.
    const waiting = turns.turn('dashboard')
    const first = fetchReport(client, provider, reportOf(1), { requestId: 'first', team: 'burst' }, deps)
    const late = fetchReport(client, provider, reportOf(2), { requestId: 'late', team: 'burst' }, { ...deps, timeoutMs: 300 })
    // The clock moves on while both wait for their turns: 400 ms of the first's 5 s, all of the late one's 300.
    now += 400
    const timedOut = await late
    expect(timedOut.kind === 'failed' && timedOut.error.code).toBe('GW_UPSTREAM_TIMEOUT')
    await untilSent(sent, 1)
    open()
    expect((await first).kind).toBe('entry')
    expect(await waiting).toBe(true)
    loop.stop()
    expect(sent.map((s) => [s.requestId, s.timeoutMs])).toEqual([['first', 4600]])
  })
})
