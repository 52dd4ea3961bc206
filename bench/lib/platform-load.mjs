// The calls in flight at the platform stand-in (bench/dashboard-origin.mjs), as the
// platform sees them: their count now, its time-weighted mean and peak between two reads,
// and, for calls that say the limit they were sent under, the most calls in flight as one
// of them came (itself included) beyond that limit. A governor's limit bounds the calls it
// lets start: a cut leaves the calls started before it in flight until they end, so the
// peak of a window may pass the limit in force at its ends while no call was sent past
// its limit; only a call's arrival tells whether its sender counted right.

/** `now`: a monotonic clock (ms). */
export function platformLoad(now) {
  const state = { inFlight: 0, peak: 0, area: 0, changedAt: now(), since: now(), overLimit: null }
  const move = (delta) => {
    const at = now()
    state.area += state.inFlight * (at - state.changedAt)
    state.changedAt = at
    state.inFlight += delta
    state.peak = Math.max(state.peak, state.inFlight)
  }
  return {
    get inFlight() {
      return state.inFlight
    },
    /** A call came, sent under `limit` (null: it does not say); `taken`: it is now in flight (false: refused at once). */
    arrived(limit, taken) {
      if (taken) move(1)
      if (limit !== null) {
        const over = state.inFlight + (taken ? 0 : 1) - limit
        state.overLimit = state.overLimit === null ? over : Math.max(state.overLimit, over)
      }
    },
    /** A call in flight ended (answered, or its connection closed). */
    ended() {
      move(-1)
    },
    /** { inFlight, meanInFlight, peak, overLimit (null: no call said its limit) } since the last read; the next window starts now. */
    read() {
      move(0)
      const elapsed = state.changedAt - state.since
      const out = { inFlight: state.inFlight, meanInFlight: elapsed > 0 ? state.area / elapsed : state.inFlight, peak: state.peak, overLimit: state.overLimit }
      Object.assign(state, { area: 0, peak: state.inFlight, since: state.changedAt, overLimit: null })
      return out
    },
  }
}
