// Where a process's event loop was held, for bench/burst-hits.mjs: loaded with `--import`
// (the gateway by BENCH_GATEWAY_NODE_FLAGS="--import ./bench/lib/loop-watch.mjs", the load
// generator by `npx node --import ./bench/lib/loop-watch.mjs bench/run.mjs ...`), it writes
// BENCH_LOOP_WATCH_DIR/<pid>.jsonl (default .bench/loop-watch): the script it runs, every
// collection's pause and every 5 ms tick that ran more than 8 ms late, in epoch ms, with
// the main thread's time on a core (`run`) and waiting for one (`wait`, the kernel's run
// queue: other processes on its core) over that tick, from /proc/thread-self/schedstat;
// and every second each kind of the process's threads' time on a core (by their names in
// /proc/self/task: the main thread, V8's workers that run the collector's parallel tasks,
// libuv's pool), which share a pinned process's one core.
// The ticks cost the process about 200 wake-ups a second.

import { appendFileSync, mkdirSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { PerformanceObserver, performance } from 'node:perf_hooks'
import { setInterval } from 'node:timers'

const dir = process.env.BENCH_LOOP_WATCH_DIR ?? join(process.cwd(), '.bench', 'loop-watch')
mkdirSync(dir, { recursive: true })
const file = join(dir, `${process.pid}.jsonl`)
const origin = performance.timeOrigin
const TICK_MS = 5
const LATE_MS = 8
let lines = [{ t: 'start', at: origin, script: process.argv[1] ?? '' }]

new PerformanceObserver((list) => {
  for (const e of list.getEntries()) lines.push({ t: 'gc', at: origin + e.startTime, ms: e.duration, kind: e.detail?.kind })
}).observe({ entryTypes: ['gc'] })

/** The main thread's time on a core and waiting for one since it started, in ms. */
function schedstat() {
  const [run, wait] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ').map(Number)
  return { run: run / 1e6, wait: wait / 1e6 }
}

let due = performance.now() + TICK_MS
let before = schedstat()
setInterval(() => {
  const now = performance.now()
  const after = schedstat()
  if (now - due > LATE_MS) lines.push({ t: 'late', at: origin + due, ms: now - due, run: after.run - before.run, wait: after.wait - before.wait })
  before = after
  due = now + TICK_MS
}, TICK_MS).unref()

/** Time on a core in ms since each thread started, summed by the threads' names. */
function threadTimes() {
  const byName = {}
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim()
      byName[name] = (byName[name] ?? 0) + Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]) / 1e6
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return byName
}

let threadsBefore = threadTimes()
setInterval(() => {
  const now = threadTimes()
  const ran = {}
  for (const [name, ms] of Object.entries(now)) ran[name] = ms - (threadsBefore[name] ?? 0)
  threadsBefore = now
  lines.push({ t: 'threads', at: origin + performance.now(), ran })
}, 1000).unref()

function flush() {
  if (lines.length === 0) return
  appendFileSync(file, lines.map((x) => JSON.stringify(x)).join('\n') + '\n')
  lines = []
}
setInterval(flush, 500).unref()
process.on('exit', flush)
