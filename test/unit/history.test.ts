import { describe, expect, it } from 'vitest'
import { BUCKET_MS, BUCKETS, binBound, binOf, emptyHistory, History, hourOf, LATENCY_BINS, MAX_TEAMS, OTHER_TEAMS, type HistoryView } from '../../src/observe/history.js'
import { fakeClock } from '../helpers/clock.js'

// A replica's last hour in 10-second buckets: a ring of fixed size.

const T0 = Date.UTC(2026, 0, 5, 12, 0, 0)

function history() {
  const clock = fakeClock(T0)
  return { clock, h: new History({ clock }) }
}

describe('History', () => {
  it('keeps 360 buckets of 10 s, oldest first, null where the replica saw nothing', () => {
    const { clock, h } = history()
    h.request(200, 'growth', true, true)
    h.request(200, 'growth', true, false)
    h.request(404, 'growth', false, false)
    clock.advance(BUCKET_MS)
    h.request(503, 'growth', true, false)
    const view = h.view()
    expect(view.bucketSeconds).toBe(10)
    expect(view.requests).toHaveLength(BUCKETS)
    expect(view.start).toBe(T0 + BUCKET_MS - (BUCKETS - 1) * BUCKET_MS)
    expect(view.requests.slice(-3)).toEqual([null, 3, 1])
    expect(view.statuses['2xx'].slice(-2)).toEqual([2, 0])
    expect(view.statuses['4xx'].slice(-2)).toEqual([1, 0])
    expect(view.statuses['5xx'].slice(-2)).toEqual([0, 1])
    // A report read is one answered below 400; a hit is one of these the cache answered.
    expect(view.reportReads.slice(-2)).toEqual([2, 0])
    expect(view.hits.slice(-2)).toEqual([1, 0])
    expect(view.teams).toEqual([{ team: 'growth', tooManyRequests: expect.any(Array), errors: expect.any(Array) }])
    expect(view.teams[0]?.errors.slice(-2)).toEqual([0, 1])
  })

  it('is a ring: a bucket an hour old is cleared when time reaches its slot again', () => {
    const { clock, h } = history()
    h.request(200, null, false, false)
    h.platformCall(120)
    clock.advance(BUCKETS * BUCKET_MS)
    h.request(200, null, false, false)
    const view = h.view()
    expect(view.requests.at(-1)).toBe(1)
    expect(view.platformCalls.at(-1)).toBe(0)
    expect(view.latencyP50Ms.at(-1)).toBeNull()
    // Everything in between is unseen, and the first request is out of the hour.
    expect(view.requests.filter((n) => n !== null)).toEqual([1])
  })

  it('drops what is older than the ring, and counts a late reading in its own bucket', () => {
    const { clock, h } = history()
    h.request(200, null, false, false)
    clock.advance(BUCKET_MS)
    h.request(200, null, false, false)
    h.request(200, null, false, false, T0 + 5)
    h.request(200, null, false, false, T0 - BUCKETS * BUCKET_MS)
    expect(h.view().requests.slice(-2)).toEqual([2, 1])
  })

  it('counts 429s and errors per team; a team with none for an hour is dropped', () => {
    const { clock, h } = history()
    h.request(429, 'growth', false, false)
    h.request(429, 'growth', false, false)
    h.request(502, 'analytics', true, false)
    h.request(200, 'quiet', true, false)
    h.request(500, null, false, false)
    let view = h.view()
    expect(view.teams.map((t) => t.team)).toEqual(['analytics', 'growth'])
    expect(view.teams[1]?.tooManyRequests.at(-1)).toBe(2)
    expect(view.teams[0]?.errors.at(-1)).toBe(1)
    clock.advance(BUCKETS * BUCKET_MS)
    h.request(200, null, false, false)
    view = h.view()
    expect(view.teams).toEqual([])
  })

  it('keeps at most MAX_TEAMS teams, the rest under one name', () => {
    const { h } = history()
    for (let i = 0; i < MAX_TEAMS + 20; i++) h.request(429, `team-${String(i).padStart(3, '0')}`, false, false)
    const teams = h.view().teams
    expect(teams).toHaveLength(MAX_TEAMS)
    expect(teams.find((t) => t.team === OTHER_TEAMS)?.tooManyRequests.at(-1)).toBe(21)
  })

  it('gives the platform latency p50 and p99 per bucket from a bounded histogram', () => {
    const { clock, h } = history()
    for (let i = 1; i <= 100; i++) h.platformCall(i)
    h.platformCall(null)
    clock.advance(BUCKET_MS)
    h.platformCall(42)
    const view = h.view()
    expect(view.platformCalls.slice(-2)).toEqual([101, 1])
    const [p50, p99] = [view.latencyP50Ms.at(-2) as number, view.latencyP99Ms.at(-2) as number]
    // Within a bin (19 %) above the true value, never above the longest.
    expect(p50).toBeGreaterThanOrEqual(50)
    expect(p50).toBeLessThanOrEqual(50 * 1.19)
    expect(p99).toBeGreaterThanOrEqual(99)
    expect(p99).toBeLessThanOrEqual(100)
    // One call: its own latency.
    expect(view.latencyP50Ms.at(-1)).toBe(42)
    expect(view.latencyP99Ms.at(-1)).toBe(42)
  })

  it('places each latency in the first bin whose bound holds it', () => {
    for (const ms of [0, 0.5, 1, 1.01, 7, 100, 1234.5, 30_000, 1e9]) {
      const bin = binOf(ms)
      expect(ms).toBeLessThanOrEqual(binBound(bin))
      if (bin > 0) expect(ms).toBeGreaterThan(binBound(bin - 1))
    }
    expect(binOf(1e12)).toBe(LATENCY_BINS - 1)
  })

  it('keeps the gauges each bucket last read, per credential', () => {
    const { clock, h } = history()
    let inFlight = 1
    h.watch(() => [{ credential: 'default', inFlight, waiting: inFlight * 2, limit: 8, floorMs: 40.04 }])
    inFlight = 3
    clock.advance(1000)
    clock.advance(BUCKET_MS)
    inFlight = 5
    h.sampleNow()
    const [series] = h.view().credentials
    expect(series?.credential).toBe('default')
    expect(series?.inFlight.slice(-3)).toEqual([null, 3, 5])
    expect(series?.waiting.slice(-2)).toEqual([6, 10])
    expect(series?.limit.slice(-2)).toEqual([8, 8])
    expect(series?.latencyFloorMs.slice(-2)).toEqual([40, 40])
    h.stop()
    inFlight = 7
    clock.advance(BUCKET_MS)
    expect(h.view().credentials[0]?.inFlight.at(-1)).toBeNull()
  })

  it('a floor not learned yet reads as null', () => {
    const { h } = history()
    h.sample([{ credential: 'default', inFlight: 0, waiting: 0, limit: 64, floorMs: null }])
    expect(h.view().credentials[0]?.latencyFloorMs.at(-1)).toBeNull()
    expect(h.view().credentials[0]?.limit.at(-1)).toBe(64)
  })

  it('gives one bucket alone, as the hour has it, with only the teams that have a count in it', () => {
    const { clock, h } = history()
    h.sample([{ credential: 'default', inFlight: 2, waiting: 0, limit: 8, floorMs: null }])
    h.request(429, 'growth', true, false)
    h.request(200, 'search', true, true)
    h.platformCall(42)
    const first = Math.floor(T0 / BUCKET_MS)
    clock.advance(BUCKET_MS)
    h.request(503, 'search', false, false)
    const one = h.bucket(first)
    expect(one).toMatchObject({ bucketSeconds: 10, start: first * BUCKET_MS, requests: [2], reportReads: [1], hits: [1], platformCalls: [1], latencyP50Ms: [42] })
    expect(one?.statuses).toEqual({ '2xx': [1], '3xx': [0], '4xx': [1], '5xx': [0] })
    expect(one?.credentials).toEqual([{ credential: 'default', inFlight: [2], waiting: [0], limit: [8], latencyFloorMs: [null] }])
    expect(one?.teams).toEqual([{ team: 'growth', tooManyRequests: [1], errors: [0] }])
    expect(h.bucket(first + 1)?.teams).toEqual([{ team: 'search', tooManyRequests: [0], errors: [1] }])
    // Before the replica saw anything, and once its slot holds a bucket an hour later: none.
    expect(h.bucket(first - 1)).toBeNull()
    clock.advance((BUCKETS - 1) * BUCKET_MS)
    h.request(200, null, false, false)
    expect(h.bucket(first)).toBeNull()
    expect(h.bucket(first + BUCKETS)?.requests).toEqual([1])
  })
})

describe('hourOf', () => {
  it('builds the hour from one-bucket views: each in its place, the hour as History.view has it', () => {
    const { clock, h } = history()
    const first = Math.floor(T0 / BUCKET_MS)
    for (let i = 0; i < 4; i++) {
      h.sample([{ credential: 'default', inFlight: i, waiting: 0, limit: 8, floorMs: 40 }])
      if (i !== 1) h.request(200, null, true, i === 2)
      if (i === 2) h.request(429, 'growth', false, false)
      h.platformCall(10 * (i + 1))
      clock.advance(BUCKET_MS)
    }
    const buckets = [0, 1, 2, 3].map((i) => h.bucket(first + i)) as HistoryView[]
    // The buckets in any order: the same hour History.view gives at the same moment.
    expect(hourOf([...buckets].reverse(), clock.now())).toEqual(h.view(clock.now()))
    // A bucket not written is null in every series; a team is 0 in one written without it.
    const hour = hourOf([buckets[0]!, buckets[2]!], clock.now())
    expect(hour.requests.slice(-5)).toEqual([1, null, 2, null, null])
    expect(hour.teams).toEqual([{ team: 'growth', tooManyRequests: expect.any(Array), errors: expect.any(Array) }])
    expect(hour.teams[0]?.tooManyRequests.slice(-5)).toEqual([0, null, 1, null, null])
    expect(hour.credentials[0]?.inFlight.slice(-5)).toEqual([0, null, 2, null, null])
  })

  it('leaves out a bucket older than the hour, or not on a bucket\'s start', () => {
    const now = T0
    const at = (start: number): HistoryView => ({ ...emptyHistory(0, BUCKET_MS, 1), start, requests: [7] })
    const oldest = emptyHistory(now).start
    const hour = hourOf([at(oldest - BUCKET_MS), at(oldest + 1), at(oldest)], now)
    expect(hour.requests.filter((n) => n !== null)).toEqual([7])
    expect(hour.requests[0]).toBe(7)
    expect(hourOf([], now)).toEqual(emptyHistory(now))
  })
})
