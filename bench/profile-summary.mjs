// Summarizes a V8 .cpuprofile (node --cpu-prof): top functions by self time, the same
// grouped by where the code lives (the gateway's dist/, a package, Node's internals),
// and top functions by total (inclusive) time.
// Usage: node bench/profile-summary.mjs FILE.cpuprofile [LAST_SECONDS]   (also used by run.mjs --profile)
//        node bench/profile-summary.mjs FILE.cpuprofile --windows=windows.json
// `--windows`: only the samples inside those [from, to] windows (µs on the profile's clock),
// as bench/stampede-cpu.mjs --profile writes them for its counted rounds; the figures are then
// also given per window, and a sample counts for at most twice the profile's median interval:
// on a shared core the gap before a sample is mostly time the thread did not run (the
// sampler could not interrupt it), which the sample's function did not spend.

import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)'])

function where(url, root) {
  if (!url) return 'V8/native'
  if (url.startsWith('node:')) return 'node internals'
  const path = url.startsWith('file://') ? fileURLToPath(url) : url
  const nm = path.lastIndexOf('/node_modules/')
  if (nm !== -1) {
    const rest = path.slice(nm + '/node_modules/'.length).split('/')
    return rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : (rest[0] ?? 'node_modules')
  }
  if (root && path.startsWith(root)) return path.slice(root.length).replace(/^\//, '').split('/').slice(0, 2).join('/')
  return path
}

function shortFile(url, root) {
  if (!url) return ''
  const path = url.startsWith('file://') ? fileURLToPath(url) : url
  const nm = path.lastIndexOf('/node_modules/')
  if (nm !== -1) return path.slice(nm + '/node_modules/'.length)
  if (root && path.startsWith(root)) return path.slice(root.length).replace(/^\//, '')
  return path
}

/**
 * lastSeconds: only the samples of the profile's last seconds (the measured run, not start-up);
 * windows: only the samples taken inside one of these [from, to] spans (µs on the profile's clock),
 * each counted for at most twice the median interval between samples.
 */
export function summarizeProfile(profile, { root = '', top = 25, lastSeconds = null, windows = null } = {}) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const keyOf = (n) => {
    const f = n.callFrame
    const name = f.functionName || '(anonymous)'
    return SPECIAL.has(name) ? name : `${name} ${shortFile(f.url, root)}:${f.lineNumber + 1}`
  }
  const self = new Map()
  const total = new Map()
  const groups = new Map()
  let all = 0
  let idle = 0
  const from = lastSeconds === null ? -Infinity : profile.endTime - lastSeconds * 1e6
  const sorted = windows === null ? [] : [...profile.timeDeltas].sort((a, b) => a - b)
  const capUs = windows === null ? Infinity : 2 * (sorted[Math.floor(sorted.length / 2)] ?? 0)
  let t = profile.startTime
  for (let i = 0; i < profile.samples.length; i += 1) {
    const gap = profile.timeDeltas[i] ?? 0
    t += gap
    if (t < from || (windows !== null && !windows.some(([a, b]) => t >= a && t < b))) continue
    const dt = Math.min(gap, capUs)
    const node = byId.get(profile.samples[i])
    if (!node) continue
    all += dt
    const name = node.callFrame.functionName
    if (name === '(idle)') {
      idle += dt
      continue
    }
    const key = keyOf(node)
    self.set(key, (self.get(key) ?? 0) + dt)
    const group = SPECIAL.has(name) ? name : where(node.callFrame.url, root)
    groups.set(group, (groups.get(group) ?? 0) + dt)
    const seen = new Set()
    for (let id = node.id; id !== undefined; id = parent.get(id)) {
      const k = keyOf(byId.get(id))
      if (k === '(root)' || seen.has(k)) continue
      seen.add(k)
      total.set(k, (total.get(k) ?? 0) + dt)
    }
  }
  const busy = all - idle
  const perWindow = (t) => (windows === null || windows.length === 0 ? '' : `, ${(t / 1e3 / windows.length).toFixed(3).padStart(7)} ms a window`)
  const pct = (t) => `${((t / busy) * 100).toFixed(1).padStart(5)} %${perWindow(t)}`
  const list = (m, n) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, t]) => `${pct(t)}  ${k}`)
  return [
    `CPU profile${lastSeconds === null ? '' : ` (its last ${lastSeconds} s)`}${windows === null ? '' : ` (inside ${windows.length} windows, a sample counted for at most ${capUs} µs: ${(busy / 1e3 / Math.max(1, windows.length)).toFixed(2)} ms busy a window)`}: ${(all / 1e6).toFixed(1)} s sampled, ${((busy / all) * 100).toFixed(0)} % busy; percentages are of busy time.`,
    '',
    `Top ${top} functions by self time:`,
    ...list(self, top),
    '',
    'Self time by where the code lives:',
    ...list(groups, 20),
    '',
    `Top ${top + 15} functions by total (inclusive) time:`,
    ...list(total, top + 15),
  ].join('\n')
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const file = process.argv[2]
  if (!file) {
    process.stderr.write('usage: node bench/profile-summary.mjs FILE.cpuprofile\n')
    process.exit(2)
  }
  const root = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '')
  const windowsFile = process.argv.find((a) => a.startsWith('--windows='))?.slice('--windows='.length)
  const last = process.argv[3] && !process.argv[3].startsWith('--') ? Number(process.argv[3]) : null
  const windows = windowsFile ? JSON.parse(readFileSync(windowsFile, 'utf8')) : null
  process.stdout.write(`${summarizeProfile(JSON.parse(readFileSync(file, 'utf8')), { root, lastSeconds: last, windows })}\n`)
}
