// Facts about the processes of a run, for the notes of its results: where each runs,
// what a gateway logged, which build was measured.

import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { ROOT } from './processes.mjs'

/** The cores a process may run on, as the kernel has it (a check of the pinning). */
export function affinity(pid) {
  try {
    return /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '?'
  } catch {
    return '?'
  }
}

/** Every sample of the cache metric, summed: all report lookups the gateway answered. */
export function allCacheResults(text, metric = 'gateway_cache_requests_total') {
  let total = 0
  for (const line of text.split('\n')) if (line.startsWith(`${metric}{`)) total += Number(line.slice(line.lastIndexOf(' ') + 1))
  return total
}

/** A gateway's own log (LOG_LEVEL=warn: every line is news), summed up: count and first messages. */
export function gatewayLog(gw) {
  let text = ''
  try {
    text = readFileSync(gw.logPath, 'utf8')
  } catch {
    return null
  }
  const lines = text.split('\n').filter((l) => l.trim())
  if (!lines.length) return null
  const messages = new Map()
  for (const line of lines) {
    let what = line.slice(0, 160)
    try {
      const j = JSON.parse(line)
      what = `${j.level >= 50 ? 'error' : j.level >= 40 ? 'warn' : `level ${j.level}`}: ${j.msg ?? ''}${j.cause ? ` (${String(j.cause).slice(0, 100)})` : j.err?.message ? ` (${String(j.err.message).slice(0, 100)})` : ''}`
    } catch {
      // not pino JSON: the line itself
    }
    messages.set(what, (messages.get(what) ?? 0) + 1)
  }
  return `${gw.name} logged ${lines.length} line(s): ${[...messages].slice(0, 5).map(([m, n]) => `${n}× ${m}`).join('; ')}`
}

/** The commit dist/ was built from, and whether src/ had changes not committed. */
export function buildInfo() {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim()
    return `${sha}${dirty ? ' plus uncommitted changes in src/' : ''}`
  } catch {
    return '?'
  }
}
