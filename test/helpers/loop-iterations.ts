/** Counts the event loop's iterations: one immediate per iteration, each setting the next. */
export function loopIterations(): { readonly now: number; stop: () => void } {
  let n = 0
  let on = true
  const tick = () => {
    n += 1
    if (on) setImmediate(tick)
  }
  setImmediate(tick)
  return {
    get now() {
      return n
    },
    stop: () => void (on = false),
  }
}

/** The most of `iterations` (one entry per event, the iteration it happened in) that fell in one iteration. */
export function mostInOneIteration(iterations: number[]): number {
  const per = new Map<number, number>()
  for (const i of iterations) per.set(i, (per.get(i) ?? 0) + 1)
  return Math.max(...per.values())
}
