import { setTimeout as sleep } from 'node:timers/promises'

type Condition = () => boolean | Promise<boolean>

/**
 * Polls `cond` every `everyMs` until it holds: the milliseconds that took, or null when
 * it still does not hold after `ms` (checked once more at the end).
 */
export async function within(ms: number, cond: Condition, everyMs = 10): Promise<number | null> {
  const started = Date.now()
  while (Date.now() - started < ms) {
    if (await cond()) return Date.now() - started
    await sleep(everyMs)
  }
  return (await cond()) ? Date.now() - started : null
}

/** Whether `cond` comes to hold within `ms`. */
export async function waitUntil(ms: number, cond: Condition, everyMs = 10): Promise<boolean> {
  return (await within(ms, cond, everyMs)) !== null
}

/** Polls `cond` until it holds; fails naming `what` (said when it fails) after `ms`. */
export async function waitFor(what: string | (() => string), cond: Condition, ms = 3000, everyMs = 10): Promise<void> {
  if (!(await waitUntil(ms, cond, everyMs))) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`)
}
