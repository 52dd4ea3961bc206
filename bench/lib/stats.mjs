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

/** The sum of a Prometheus series' samples whose labels include `labels`. */
export function metricValue(text, name, labels) {
  let total = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) total += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return total
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
