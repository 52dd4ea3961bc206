import pino from 'pino'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { createMetrics } from '../../src/observe/metrics.js'
import { PlatformGovernors } from '../../src/platform/governor/platform-governors.js'
import type { Seat } from '../../src/platform/governor/seat.js'
import { fakeClock } from '../helpers/clock.js'

// Where the pauses meet the seats (platform-governors.ts `seat()`): docs/governor.md, "Pauses".

type Refusal = Error & { code?: string; retryAfterSec?: number }

/** The governors of the default credential, one seat held (not learned), on a clock that moves only when told. */
function governors() {
  const config = loadConfig({ env: {} })
  const metrics = createMetrics()
  const clock = fakeClock(1_000_000)
  const g = new PlatformGovernors({
    config: { ...config, platform: { ...config.platform, adaptive: false, maxConcurrent: 1 } },
    log: pino({ level: 'silent' }),
    metrics,
    redis: null,
    breaker: null,
    bus: null,
    clock,
  })
  return { g, metrics, clock }
}

/** A call of `team` on `url` asking for a seat: its seat once it comes, or its refusal. */
function ask(g: PlatformGovernors, team: string, url: string, clock: { now(): number }) {
  const state: { seat: Seat | null; error: Refusal | null; done: Promise<void> } = { seat: null, error: null, done: Promise.resolve() }
  state.done = g.seat('default', { team, url, deadline: clock.now() + 30_000 }).then(
    (seat) => { state.seat = seat },
    (err: Refusal) => { state.error = err },
  )
  return state
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

describe('PlatformGovernors.seat: the pauses as a call asks and as its seat comes', () => {
  it('refuses, with the entry\'s answer, a call whose team and route were paused while it waited; the seat goes to the next call, of another route', async () => {
    const { g, metrics, clock } = governors()
    const first = ask(g, 'a', '/api/v1/report/r', clock)
    const waiting = ask(g, 'a', '/api/v1/report/r', clock)
    const other = ask(g, 'a', '/api/v1/report/s', clock)
    await settle()
    expect([first.seat !== null, waiting.seat, other.seat]).toEqual([true, null, null])
    // The platform answers the seated call 429: team a is paused on the route before its seat is free.
    first.seat?.end({ kind: 'answer', status: 429, latencyMs: 50, retryAfter: '30' })
    await settle()
    expect(waiting.error).toMatchObject({ code: 'GW_OVERLOADED', statusCode: 503, retryAfterSec: 30 })
    expect(waiting.error?.message).toContain('route /api/v1/report/r for team a of credential default is paused by the platform')
    expect(other.error).toBeNull()
    expect(other.seat).not.toBeNull()
    // A call asking now gets the same answer at the entry.
    const late = ask(g, 'a', '/api/v1/report/r', clock)
    await settle()
    expect(late.error).toMatchObject({ code: 'GW_OVERLOADED', retryAfterSec: 30 })
    const refused = (await metrics.registry.getSingleMetric('gateway_platform_refused_total')?.get())?.values.find((v) => v.labels.reason === 'paused')?.value
    expect(refused).toBe(2)
    g.stop()
  })
})
