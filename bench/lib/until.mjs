// A bounded wait for an event a scenario measures the time of.

import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'

/** Checks `cond` every `everyMs` from `since` (performance.now()): the milliseconds until it held, or null past `boundMs`. */
export async function msUntil(cond, since, boundMs, everyMs) {
  while (performance.now() - since < boundMs) {
    if (await cond()) return performance.now() - since
    await sleep(everyMs)
  }
  return null
}
