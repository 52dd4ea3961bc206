/**
 * What the soak measures (scripts/soak.mjs): answers by status with their latencies, a
 * replica's memory after a full GC, and the chaos run's ledger of answers by second and by
 * fault.
 */
import { performance } from 'node:perf_hooks'
import { HOT_PATHS } from './soak-load.mjs'
import { alive, runSeconds } from './soak-processes.mjs'
import { classify } from './soak-targets.mjs'

export const percentile = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : NaN)
export const ms = (v) => (Number.isNaN(v) ? '—' : v < 10 ? `${v.toFixed(1)} ms` : `${Math.round(v)} ms`)
export const mb = (bytes) => `${(bytes / 1048576).toFixed(1)}`
export const secs = (s) => `${s.toFixed(1)} s`

export class Tally {
  statuses = new Map()
  latencies = []
  add(status, latency) {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1)
    if (latency !== null) this.latencies.push(latency)
  }
  count(filter = () => true) {
    let n = 0
    for (const [status, c] of this.statuses) if (filter(status)) n += c
    return n
  }
  sorted() {
    return Float64Array.from(this.latencies).sort()
  }
}

export async function memoryOf(proc) {
  if (!alive(proc)) return null
  const reading = new Promise((resolve) => {
    proc.onMemory = resolve
    setTimeout(() => resolve(null), 5000)
  })
  proc.child.kill('SIGUSR2')
  const m = await reading
  proc.onMemory = null
  if (!m) return null
  const sample = { ...m, at: runSeconds(), age: (performance.now() - proc.startedAt) / 1000 }
  proc.memory.push(sample)
  return sample
}

/**
 * The chaos run's record: each answer with when it was sent (the error rate), and by
 * the fault window they were sent in (window 0 is before the first fault; window k runs
 * from fault k's start to the next's). The error rate leaves out two kinds of errors,
 * counted apart: 503 GW_OVERLOADED refusals while the platform has paused a route or the
 * credential (its own 429s, honoured for their retry-after as documented: the random ones
 * of the platform's weather come in bursts), and answers that came after the next fault
 * had begun (queued calls a platform killed then failed, which says nothing of the fault
 * they were sent in).
 */
export class Ledger {
  // Each answer not overtaken by the next fault: when it was sent, what error it counts as (null: none) and the error body's message.
  answers = []
  windows = [{ n: 0, name: 'before the first fault', startS: 0, endS: 0, detail: '' }]
  // Hot reports answered 200 so far: from then on, each is answered from the cache.
  answered = new Set()

  get current() {
    return this.windows[this.windows.length - 1]
  }

  open(name, startS) {
    this.windows.push({ n: this.windows.length, name, startS, endS: startS, detail: '' })
  }

  /** `w`: the window the request was sent in. */
  record(r, sentS, outcome, w) {
    const { error, undocumented } = classify(r.expect, outcome)
    const overtaken = w !== this.current
    const paused = error && outcome.paused === true
    w.answers = (w.answers ?? 0) + 1
    if (error) w.errors = (w.errors ?? 0) + 1
    if (paused) w.paused = (w.paused ?? 0) + 1
    if (overtaken && error) w.overtaken = (w.overtaken ?? 0) + 1
    if (!overtaken) {
      const what = !error || paused ? null : outcome.status === null ? `lost (${outcome.lost})` : `${outcome.status} ${outcome.code ?? ''}`.trim()
      this.answers.push({ s: sentS, error: what, message: what === null ? null : (outcome.message ?? null) })
    }
    const where = `${sentS.toFixed(1)} s ${r.kind} on ${outcome.replica}${outcome.retried ? ' (retried)' : ''}: ${r.method} ${r.path}`
    if (undocumented) (w.undocumented ??= []).push(`${where} -> ${undocumented}`)
    if (outcome.wrongBody) (w.wrong ??= []).push(`${where} -> ${outcome.wrongBody}`)
    if (r.checked && HOT_PATHS.has(r.path)) {
      const fromCache = outcome.status === 200 || (outcome.status === 429 && outcome.code === 'GW_RATE_LIMITED')
      if (!fromCache && this.answered.has(r.path)) (w.refused ??= []).push(`${where} -> ${outcome.status ?? 'lost'} ${outcome.code ?? outcome.lost ?? ''}`.trim())
      if (outcome.status === 200) this.answered.add(r.path)
      if (outcome.xCache) w.xCache = { ...w.xCache, [outcome.xCache]: (w.xCache?.[outcome.xCache] ?? 0) + 1 }
    }
  }
}
