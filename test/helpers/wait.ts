import { setTimeout as sleep } from 'node:timers/promises'

/** Polls `cond` until it holds; fails naming `what` after `ms`. */
export async function waitFor(what: string, cond: () => boolean | Promise<boolean>, ms = 3000, everyMs = 10): Promise<void> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await cond()) return
    await sleep(everyMs)
  }
  throw new Error(`timed out waiting for ${what}`)
}
