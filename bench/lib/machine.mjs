// The machine is shared: other processes may use either core while we measure. Before
// each measured run the benchmark waits (a bounded time) for a quiet moment, and during
// it counts the CPU time used by processes that are not ours ("foreign" load, in cores).

import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'

export const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100
  } catch {
    return 100
  }
})()
export const GATE_FOREIGN_CORES = 0.15
export const GATE_MAX_WAIT_MS = 12_000
let gateBudgetMs = 15_000
export const gateBudget = { total: 15_000 }

/** The total time (ms) all quiet-moment waits of this run may take. */
export function setGateBudget(ms) {
  gateBudgetMs = ms
  gateBudget.total = ms
}

/** pid -> { ppid, ticks }: CPU time (user + system, with reaped children) of every process. */
function procTable() {
  const procs = new Map()
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      procs.set(Number(d), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]) })
    } catch {
      // the process ended while we read
    }
  }
  return procs
}

/** CPU ticks of a process and all its live descendants (nginx: master and worker). */
function treeTicks(procs, root) {
  let ticks = 0
  const queue = [root]
  const seen = new Set()
  while (queue.length) {
    const pid = queue.pop()
    if (seen.has(pid)) continue
    seen.add(pid)
    ticks += procs.get(pid)?.ticks ?? 0
    for (const [child, p] of procs) if (p.ppid === pid) queue.push(child)
  }
  return ticks
}

export function cpuSnapshot(serverPid = null) {
  let busy = 0
  const cores = {}
  try {
    // user nice system idle iowait irq softirq steal: busy without idle, iowait, irq, softirq
    const lines = readFileSync('/proc/stat', 'utf8').split('\n')
    const busyOf = (line) => {
      const f = line.trim().split(/\s+/).slice(1).map(Number)
      return f[0] + f[1] + f[2] + (f[7] ?? 0)
    }
    busy = busyOf(lines[0])
    for (const line of lines.slice(1)) if (/^cpu\d+ /.test(line)) cores[line.slice(3, line.indexOf(' '))] = busyOf(line)
  } catch {
    return null
  }
  const procs = procTable()
  // Ours: this process with its reaped children and every live descendant.
  return { at: performance.now(), busy, cores, ours: treeTicks(procs, process.pid), server: serverPid ? treeTicks(procs, serverPid) : null }
}

/**
 * Cores' worth of CPU used on `core` by anything but the server between two snapshots
 * taken with its pid: other load on the server's core, when the server is pinned there
 * and nothing else of ours is.
 */
export function foreignOnCore(a, b, core) {
  if (!a || !b || a.cores[core] === undefined || a.server === null) return null
  const seconds = (b.at - a.at) / 1000
  return Math.max(0, (b.cores[core] - a.cores[core] - (b.server - a.server)) / CLK_TCK / seconds)
}

/** Cores' worth of CPU used by processes that are not ours between two snapshots. */
export function foreignCores(a, b) {
  if (!a || !b) return null
  const seconds = (b.at - a.at) / 1000
  return Math.max(0, (b.busy - a.busy - (b.ours - a.ours)) / CLK_TCK / seconds)
}

/** Waits (within the run's time budget) until other processes use less than GATE_FOREIGN_CORES. */
export async function quietMoment() {
  const start = performance.now()
  const until = start + Math.min(GATE_MAX_WAIT_MS, gateBudgetMs)
  let last = null
  for (;;) {
    const a = cpuSnapshot()
    await sleep(400)
    last = foreignCores(a, cpuSnapshot())
    if (last === null || last < GATE_FOREIGN_CORES || performance.now() >= until) break
  }
  gateBudgetMs -= performance.now() - start
  return last
}

export function loadAverage() {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
  } catch {
    return '?'
  }
}

/** First line a program prints about its version (stdout or stderr, whatever the exit code); null if it is missing. */
export function versionOf(cmd, argv) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8' })
  if (r.error) return null
  return `${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n').find((l) => l.trim())?.trim() ?? cmd
}

/** Nanoseconds every thread of `pid` has run (/proc/<pid>/task/<tid>/schedstat): a process's CPU time, finer than its ticks. */
export function threadRunNs(pid) {
  let ns = 0
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0])
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return ns
}

/** The builds a `--builds=name=folder,...` option names (default: this checkout), each folder a built checkout. */
export function buildsOption(argv = process.argv) {
  const value = argv.find((a) => a.startsWith('--builds='))?.slice('--builds='.length) ?? 'this=.'
  return value.split(',').map((pair) => {
    const [name, dir] = pair.split('=')
    return { name, root: resolve(dir) }
  })
}
