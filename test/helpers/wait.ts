import { setTimeout as sleep } from 'node:timers/promises'
import { TestRunner } from 'vitest'

type Condition = () => boolean | Promise<boolean>

// What a wait leaves of its test's time: enough to fail naming what it waited for before
// the test's own timeout ends it unnamed.
const NAMING_MARGIN_MS = 1000
// Outside a test's body (a beforeAll, a beforeEach), a wait's bound: below
// vitest.config.ts's hookTimeout (20 s).
const OUTSIDE_A_TEST_MS = 15_000

// What one process start is given (node loading dist/main.js, the sandbox, a CLI): about
// 1 s of CPU, which beside other sessions' tests on 2 cores (load 25) can take past 20 s.
export const PROCESS_START_MS = 60_000
// vitest.config.ts's testTimeout: what a test is given beside its process starts.
const TEST_TIMEOUT_MS = 20_000

/**
 * The timeout of a test that starts `starts` processes and waits for each to say it is
 * ready (a line, its exit, /readyz): PROCESS_START_MS for each beside the test's own
 * 20 s. Its waits take the test's time left, so a slow machine makes the test slower,
 * not red; a start that hangs still fails it, naming what it waited for.
 */
export function startsTimeout(starts: number): number {
  return TEST_TIMEOUT_MS + starts * PROCESS_START_MS
}

/**
 * The time left to the running test before its own timeout (the file's or the test's
 * `timeout`, counted from its body's start as vitest counts it: body-timed-runner.ts stamps
 * it), less the margin: the only bound a wait for a condition has. A loaded machine makes
 * a condition come later, never wrong; a bound of its own would fail it for that.
 * Outside a test's body, `outsideMs`: what the hook that waits leaves a wait.
 */
export function testTimeLeft(outsideMs = OUTSIDE_A_TEST_MS): number {
  const test = TestRunner.getCurrentTest()
  const started = test?.meta.bodyStartedAt
  if (!test?.timeout || started === undefined) return outsideMs
  return timeLeftOf(started, test.timeout)
}

/**
 * What is left, less the margin, of a timeout of `timeoutMs` counted from `startedAt`
 * (Date.now()): the bound of a wait in a hook with a timeout of its own, stamped by the
 * hook when it starts (no public API says when a hook started).
 */
export function timeLeftOf(startedAt: number, timeoutMs: number): number {
  return Math.max(0, startedAt + timeoutMs - NAMING_MARGIN_MS - Date.now())
}

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

/**
 * Polls `cond` until it holds; fails naming `what` (said when it fails) once `ms` have
 * gone by, by default the running test's time left (testTimeLeft).
 */
export async function waitFor(what: string | (() => string), cond: Condition, ms = testTimeLeft(), everyMs = 10): Promise<void> {
  if (!(await waitUntil(ms, cond, everyMs))) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`)
}

/**
 * What `promise` settles to (its value, or its error thrown); fails naming `what`, as
 * waitFor does, when it has not settled within `ms` (by default the running test's time
 * left): an await of a call that hangs names the call instead of ending in the test's timeout.
 */
export async function settled<T>(what: string | (() => string), promise: Promise<T>, ms = testTimeLeft()): Promise<T> {
  let outcome: { value: T } | { error: unknown } | undefined
  promise.then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  )
  await waitFor(what, () => outcome !== undefined, ms)
  const done = outcome as { value: T } | { error: unknown }
  if ('error' in done) throw done.error
  return done.value
}
