// The benchmark's child processes: each in its own process group, its output in a log
// file, stopped at the end, on error and on SIGINT/SIGTERM; and the pinning of a process
// to a core (servers under test on one core, the load on the other).

import { spawn, execFileSync } from 'node:child_process'
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const BENCH = join(ROOT, 'bench')
// As the issue 17 set-up has it: servers under test `taskset -c 1`, the load on core 0.
export const SERVER_CORE = '1'
export const LOAD_CORE = '0'

const started = performance.now()
export const tmp = mkdtempSync(join(tmpdir(), 'rgw-bench-'))
/** pid -> { name, child, exited } of every process started here (each leads its own process group). */
const children = new Map()

export const log = (...parts) => process.stderr.write(`[bench ${secondsSinceStart().toFixed(1).padStart(5)}s] ${parts.join(' ')}\n`)
export const secondsSinceStart = () => (performance.now() - started) / 1000

let canPin = false
export const pinning = () => canPin

/** Pins this process (the load generator) to LOAD_CORE when the machine has two cores and taskset. */
export function setUpPinning() {
  const cores = cpus().length
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' })
    canPin = cores >= 2
  } catch {
    canPin = false
  }
  if (canPin) execFileSync('taskset', ['-a', '-p', '-c', LOAD_CORE, String(process.pid)], { stdio: 'ignore' })
  else log(`WARNING: cannot pin (${cores} cores, taskset ${cores >= 2 ? 'missing' : 'n/a'}): numbers are not comparable`)
}

export function pin(core, cmd, argv) {
  return canPin ? ['taskset', ['-c', core, cmd, ...argv]] : [cmd, argv]
}

/**
 * Starts a process in its own process group, its output in tmp/<name>.log, and
 * resolves once a line matches `ready` (or at once without one). `env` is merged over
 * this process's environment; a variable set to undefined there is removed.
 */
export function launch(name, cmd, argv, { env = {}, ready = null, timeoutMs = 15_000 } = {}) {
  const logPath = join(tmp, `${name}.log`)
  const out = createWriteStream(logPath)
  const childEnv = { ...process.env, ...env }
  for (const [k, v] of Object.entries(childEnv)) if (v === undefined) delete childEnv[k]
  const child = spawn(cmd, argv, { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  const entry = { name, child, exited: new Promise((resolve) => child.once('exit', resolve)), logPath }
  child.once('spawn', () => children.set(child.pid, entry))
  entry.exited.then(() => children.delete(child.pid))
  return new Promise((resolve, reject) => {
    let buffered = ''
    let done = false
    const timer = setTimeout(() => finish(new Error(`${name} did not start within ${timeoutMs} ms`)), timeoutMs)
    const finish = (err, line) => {
      if (done) return
      done = true
      clearTimeout(timer)
      if (err) {
        let tail = ''
        try {
          tail = readFileSync(logPath, 'utf8').slice(-2000)
        } catch {
          // no output yet
        }
        reject(new Error(`${err.message}${tail ? `\n--- ${name} output ---\n${tail}` : ''}`))
      } else resolve({ ...entry, line })
    }
    const onData = (chunk) => {
      out.write(chunk)
      if (done || !ready) return
      buffered += chunk.toString('utf8')
      const lines = buffered.split('\n')
      buffered = lines.pop() ?? ''
      for (const line of lines) if (ready.test(line)) return finish(null, line)
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.once('error', (err) => finish(new Error(`${name}: ${err.message}`)))
    child.once('exit', (code, signal) => finish(new Error(`${name} exited (${signal ?? code}) before it was ready`)))
    if (!ready) child.once('spawn', () => finish(null, ''))
  })
}

/** Runs a command to its end (registered, so a cleanup also stops it); resolves with its stdout. */
export function runToEnd(name, cmd, argv, timeoutMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    const entry = { name, child, exited: new Promise((r) => child.once('exit', r)) }
    child.once('spawn', () => children.set(child.pid, entry))
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    const timer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), timeoutMs)
    child.once('error', (err) => {
      clearTimeout(timer)
      reject(new Error(`${name}: ${err.message}`))
    })
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      children.delete(child.pid)
      if (code === 0) resolve(stdout)
      else reject(new Error(`${name} failed (${signal ?? code}): ${stderr.slice(-1000) || stdout.slice(-1000)}`))
    })
  })
}

function killGroup(pid, signal) {
  try {
    process.kill(-pid, signal)
  } catch {
    // already gone
  }
}

// A gateway profiled (BENCH_GATEWAY_NODE_FLAGS=--cpu-prof ...) writes its profile only on a clean exit, after its shutdown drain (5 s).
const STOP_GRACE_MS = process.env.BENCH_GATEWAY_NODE_FLAGS ? 30_000 : 4000

/** SIGTERM, then SIGKILL after `graceMs`. Accepts what launch() resolved with. */
export async function stopProcess(entry, graceMs = STOP_GRACE_MS) {
  const live = children.get(entry.child.pid) ?? entry
  killGroup(live.child.pid, 'SIGTERM')
  const exited = await Promise.race([live.exited.then(() => true), sleep(graceMs).then(() => false)])
  if (!exited) killGroup(live.child.pid, 'SIGKILL')
}

/** SIGKILL at once (a replica that dies); resolves when it has exited. */
export async function killProcess(entry) {
  killGroup(entry.child.pid, 'SIGKILL')
  await entry.exited
}

let cleaning = null
export function cleanup() {
  cleaning ??= (async () => {
    await Promise.all([...children.values()].map((e) => stopProcess(e)))
    rmSync(tmp, { recursive: true, force: true })
  })()
  return cleaning
}
process.on('exit', () => {
  for (const pid of children.keys()) killGroup(pid, 'SIGKILL')
})

let interrupted = false
export const wasInterrupted = () => interrupted
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    interrupted = true
    log(`${signal}: stopping every process started by the benchmark`)
    void cleanup().finally(() => process.exit(130))
  })
}
