import { START } from './simulate.js'
import { newGovernor } from './new-governor.js'
import type { GovernorFactory } from './gateway.js'
import type { SimClock } from './sim-clock.js'

/**
 * The governor's wall clock (Date.now(): src/clock.ts systemClock) moved by `stepMs` from `atMs` into the run (an NTP
 * step, a VM resumed or live-migrated; from 0, a machine whose clock disagrees), on every replica or on `only`; the
 * platform, the callers, the latencies and the clock's monotonic reading (performance.now() in platform-client.ts and
 * src/clock.ts) and the lease store keep the true time.
 * A caller's deadline is read on the moved clock, as the gateway reads it.
 */
export function steppedGovernor(atMs: number, stepMs: number, only: string | null = null): GovernorFactory {
  return (ctx) => {
    const real = ctx.clock
    const steps = only === null || ctx.replica === only
    const off = () => (steps && real.now() >= START + atMs ? stepMs : 0)
    const clock = {
      now: () => real.now() + off(),
      // The monotonic reading (performance.now() for the system's clock) no step moves.
      monotonic: () => real.now(),
      setTimeout: (fn: () => void, ms: number) => real.setTimeout(fn, ms),
      clearTimeout: (t: Parameters<SimClock['clearTimeout']>[0]) => real.clearTimeout(t),
      setInterval: (fn: () => void, ms: number) => real.setInterval(fn, ms),
      clearInterval: (t: Parameters<SimClock['clearInterval']>[0]) => real.clearInterval(t),
    } as unknown as SimClock
    const g = newGovernor({ ...ctx, clock })
    return Object.assign(Object.create(g) as typeof g, { seat: (ask: Parameters<typeof g.seat>[0]) => g.seat({ ...ask, deadline: ask.deadline + off() }) })
  }
}
