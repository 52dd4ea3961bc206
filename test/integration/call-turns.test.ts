import { describe, expect, it } from 'vitest'
import { loopIterations, mostInOneIteration } from '../helpers/loop-iterations.js'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { distinctReport } from '../helpers/gateway-calls.js'
import { GATEWAY_TEAM } from '../../src/platform/gateway-team.js'

// The report cache's calls take turns on the event loop (reports/call-turns.ts): misses
// read together start one per iteration of the loop, and answers that the platform sends
// together complete one per iteration.

const env = useSandboxGateway()

const misses = (n: number, from: number, answered: (iteration: number) => void, loop: { readonly now: number }) =>
  Promise.all(
    Array.from({ length: n }, (_, i) =>
      env.gw.proxy.inject({ method: 'GET', url: distinctReport(from + i), headers: { 'x-api-key': KEYS.all } }).then((res) => {
        expect(res.statusCode).toBe(200)
        expect(res.headers['x-cache']).toBe('MISS')
        answered(loop.now)
      }),
    ),
  )

describe('report misses read together', () => {
  it('ask the governor for their seats one per iteration of the event loop', async () => {
    const loop = loopIterations()
    const governors = env.gw.governors
    const seat = governors.seat.bind(governors)
    const asked: number[] = []
    governors.seat = (credential, call) => {
      // The gateway's own calls (ownership lookups) are not the misses'.
      if (call.team !== GATEWAY_TEAM) asked.push(loop.now)
      return seat(credential, call)
    }
    try {
      await misses(12, 100, () => undefined, loop)
      expect(asked).toHaveLength(12)
      expect(mostInOneIteration(asked)).toBe(1)
    } finally {
      governors.seat = seat
      loop.stop()
    }
  })
})

describe('report misses answered together', () => {
  it('are answered one per iteration of the event loop', async () => {
    // Every call waits the same time at the platform: their answers come back in one poll of the loop.
    env.sandbox.setLatency(200)
    const loop = loopIterations()
    try {
      const answered: number[] = []
      await misses(12, 0, (iteration) => answered.push(iteration), loop)
      expect(mostInOneIteration(answered)).toBe(1)
    } finally {
      loop.stop()
      env.sandbox.setLatency(0)
    }
  })
})
