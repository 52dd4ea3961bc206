import { executionAsyncResource } from 'node:async_hooks'

// process.nextTick queues each callback as an object
// literal with computed keys, seven per cache hit. V8 lets the hidden classes of those
// objects go at any full collection that finds none of them alive, which start-up does
// several times, and the next tick makes new ones. nextTick's code, optimized while it saw
// classes come and go, defines their properties through V8's runtime instead of its
// inline caches: measured on a hit, 3 to 4 µs of the gateway's 34 went there. One queue
// entry kept for the life of the process keeps the classes, so every tick has the one
// shape its optimized code expects.
let kept: object | undefined

/** Keeps one of process.nextTick's queue entries alive; the first call does, later ones nothing. */
export function keepTickShape(): void {
  if (kept) return
  // Inside a nextTick callback, the resource executing is its queue entry.
  process.nextTick(() => {
    kept ??= executionAsyncResource()
  })
}

/** The queue entry kept; undefined before the first tick after keepTickShape(). */
export function keptTick(): object | undefined {
  return kept
}
