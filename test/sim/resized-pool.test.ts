import { describe, expect, it } from 'vitest'
import { SimClock } from './sim-clock.js'
import { SimPlatform, type PlatformAnswer } from './platform.js'
import { Random } from './random.js'

// The platform's pool resized for a while (platform.ts `resized`, drawn into one scenario in
// ten by scenario.ts): another tenant's work takes workers, or the pool is scaled.

describe('a pool resized for a while', () => {
  it('serves the span\'s workers in it, runs the calls in service past them to their ends, and serves its own again after', async () => {
    const clock = new SimClock(0)
    const platform = new SimPlatform(clock, { workers: 4, spread: 0, slowness: () => 1, stalls: [], outages: [], shedding: [], resized: [{ from: 1_000, to: 3_000, workers: 2 }] }, new Random(1))
    const ended: number[] = []
    const send = () => void platform.send({ team: 't', route: 'k0', costMs: 1_500, fail: 'none' }).then((a: PlatformAnswer) => { expect(a.status).toBe(200); ended.push(clock.now()) })
    for (let i = 0; i < 8; i++) send()
    await clock.run(8_000)
    platform.stopSampling()
    // 4 start at 0 and run to 1,500 although the pool is 2 from 1,000; then 2 at a time
    // until 3,000, when 4 serve again.
    expect(ended).toEqual([1_500, 1_500, 1_500, 1_500, 3_000, 3_000, 4_500, 4_500])
    expect(platform.samples.filter((x) => x.at >= 1_500 && x.at < 3_000).every((x) => x.busy <= 2 && x.workers === 2)).toBe(true)
    expect(platform.samples.filter((x) => x.at >= 3_000 && x.at < 4_500).every((x) => x.busy === 2 && x.workers === 4)).toBe(true)
  })
})
