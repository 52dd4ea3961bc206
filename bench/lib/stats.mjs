// Figures and their Markdown.

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
export const percentile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((q / 100) * sorted.length) - 1))]

export const fmtInt = (n) => Math.round(n).toLocaleString('en-US')
export const fmtMs = (ms) => (ms === undefined || ms === null || !Number.isFinite(ms) ? '—' : ms >= 100 ? `${ms.toFixed(0)} ms` : ms >= 10 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(2)} ms`)
export const fmtX = (x) => (x === null || x === undefined || !Number.isFinite(x) ? '—' : `${x.toFixed(2)}×`)
export const fmtPct = (x) => (x === null || x === undefined || !Number.isFinite(x) ? '—' : `${(x * 100).toFixed(1)} %`)

/** The sum of a Prometheus series' samples whose labels include `labels`; `absent` when none does. */
export function metricValue(text, name, labels, absent = 0) {
  let total = 0
  let found = false
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) {
      total += Number(line.slice(line.lastIndexOf(' ') + 1))
      found = true
    }
  }
  return found ? total : absent
}

/** A Markdown table; the first column left-aligned, the others right-aligned. */
export function markdownTable(header, rows) {
  return [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n')
}

/** p50/p99 of latencies (ms) as a sorted copy. */
export function latencyFigures(ms) {
  const sorted = [...ms].sort((a, b) => a - b)
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99), max: sorted.at(-1) }
}

/**
 * A scenario's targets as Markdown list lines, each PASS or FAIL: [{ name, got, target,
 * pass }] (`pass` null: not judged, with `got` saying why).
 */
export function verdictLines(checks) {
  return checks.map((c) => `- **${c.pass === null ? 'NOT JUDGED' : c.pass ? 'PASS' : 'FAIL'}** ${c.name}: ${c.got} (target ${c.target})`)
}

/**
 * The index from which every item of `values` satisfies `ok` to the end; null when the
 * last one does not (an empty list has not settled either).
 */
export function settledFrom(values, ok) {
  let from = values.length
  while (from > 0 && ok(values[from - 1])) from -= 1
  return from === values.length ? null : from
}

/**
 * The most-asked keys of `asks` (a Map key → count) that together take at least `share`
 * of all asks, most asked first (ties in the Map's order); with the share they take.
 */
export function mostAsked(asks, share) {
  const total = [...asks.values()].reduce((x, y) => x + y, 0)
  const keys = []
  let covered = 0
  for (const [key, n] of [...asks].sort((a, b) => b[1] - a[1])) {
    if (covered >= total * share) break
    keys.push(key)
    covered += n
  }
  return { keys, share: total ? covered / total : 0 }
}
