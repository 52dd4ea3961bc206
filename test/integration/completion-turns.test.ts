import { describe, expect, it } from 'vitest'
import { loopIterations, mostInOneIteration } from '../helpers/loop-iterations.js'
import { useSandboxGateway } from '../helpers/fixtures.js'
import { KEYS } from '../helpers/sandbox-gateway.js'
import { distinctReport } from '../helpers/gateway-calls.js'

// The report cache's misses take turns on the event loop (reports/completion-turns.ts):
// answers that the platform sends together complete one per iteration of the loop.

const env = useSandboxGateway()


describe('report misses answered together', () => {
  it('are answered one per iteration of the event loop', async () => {
    // Every call waits the same time at the platform: their answers come back in one poll of the loop.
    env.sandbox.setLatency(200)
    const loop = loopIterations()
    try {
      const answered: number[] = []
      await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          env.gw.proxy.inject({ method: 'GET', url: distinctReport(i), headers: { 'x-api-key': KEYS.all } }).then((res) => {
            expect(res.statusCode).toBe(200)
            expect(res.headers['x-cache']).toBe('MISS')
            answered.push(loop.now)
          }),
        ),
      )
      expect(mostInOneIteration(answered)).toBe(1)
    } finally {
      loop.stop()
      env.sandbox.setLatency(0)
    }
  })
})
