import { describe, expect, it } from 'vitest'
import { platformLoad } from '../../bench/lib/platform-load.mjs'

// The scale bench's judge of the governor's seats (bench/scenarios/scale.mjs): the calls in
// flight at the platform stand-in as each call comes, against the limit it was sent under.
// Judged against the limit sampled at a window's ends instead, a cut failed a gateway that
// sent no call past its limit (the calls started before the cut were still in flight).

const clock = () => {
  let t = 0
  return { now: () => t, pass: (ms: number) => void (t += ms) }
}

describe('platformLoad: calls in flight at the platform, judged as each call comes', () => {
  it('calls started under a higher limit, in flight after a cut, are no call past its limit', () => {
    const c = clock()
    const load = platformLoad(c.now)
    for (let i = 0; i < 48; i++) load.arrived(64, true)
    expect(load.read()).toMatchObject({ peak: 48, overLimit: -16 })
    c.pass(500)
    // The limit is cut to 17: no call comes until the calls in flight are fewer.
    for (let i = 0; i < 32; i++) load.ended()
    load.arrived(17, true)
    const window = load.read()
    expect(window.peak).toBe(48)
    expect(window.overLimit).toBe(0)
  })

  it('a call that comes with more calls in flight than its limit is past it', () => {
    const load = platformLoad(clock().now)
    for (let i = 0; i < 5; i++) load.arrived(17, true)
    load.arrived(3, true)
    expect(load.read().overLimit).toBe(3)
  })

  it('a call refused at once counts itself among the calls in flight it found', () => {
    const load = platformLoad(clock().now)
    for (let i = 0; i < 4; i++) load.arrived(null, true)
    load.arrived(4, false)
    expect(load.read()).toMatchObject({ inFlight: 4, peak: 4, overLimit: 1 })
  })

  it('a window where no call says its limit judges nothing', () => {
    const load = platformLoad(clock().now)
    load.arrived(null, true)
    load.read()
    expect(load.read()).toMatchObject({ inFlight: 1, peak: 1, overLimit: null })
  })

  it('the mean is weighted by time', () => {
    const c = clock()
    const load = platformLoad(c.now)
    load.arrived(null, true)
    c.pass(100)
    load.arrived(null, true)
    c.pass(100)
    expect(load.read().meanInFlight).toBe(1.5)
  })
})
