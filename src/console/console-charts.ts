// The console's charts of the last 5 minutes, 15 minutes or hour, drawn by uPlot: its script and style come from
// the gateway itself (/console/uPlot.iife.min.js, loaded before this module, and
// /console/uPlot.min.css). uPlot styles its elements through the CSSOM only, which the
// page's style-src 'self' allows.
import type uPlot from 'uplot'
import { chartSummaries, type Charted, type Series } from './console-cluster.js'
import { localInstant, onHover, timeTicks, utcInstant } from './console-format.js'

const HEIGHT = 230
const MIN_WIDTH = 200

/** Series colours that read on a light and a dark background alike. */
const COLORS = ['#2f81f7', '#d29922', '#cf222e', '#8250df', '#1a7f37', '#bf3989', '#0a7ea4', '#9a6700']

/**
 * The scales a chart draws on: counts (of requests, answers or calls: whole numbers,
 * from 0), latencies in ms (a log scale: a floor of tens of ms, a p99 of seconds, each
 * readable), a percentage.
 */
type Scale = 'count' | 'ms' | 'percent'

interface Line {
  label: string
  values: Series
  /** The scale it is drawn on: counts (left axis) unless said. */
  scale?: Scale
  dash?: number[]
}

interface Chart {
  id: string
  lines: Line[]
  /** The label of each scale's axis (the first line's on the left, another on the right). */
  axes: Partial<Record<Scale, string>>
  /** What the chart says in words (below it, and for a screen reader). */
  summary: string
}

/** The time axis's label: one time zone on the page, UTC (the browser's own is on the cursor's legend). */
const TIME_AXIS = 'Time (UTC)'
const FONT = '12px system-ui, sans-serif'

type Plot = uPlot
const drawn = new Map<string, { plot: Plot; signature: string }>()

// A chart follows its box's width (a phone turned, a window resized): the box's width is
// the page's to set, never its chart's (min-width 0, its overflow scrolls).
let resized: ResizeObserver | null = null
function follow(box: HTMLElement): void {
  resized ??= new ResizeObserver((entries) => {
    for (const entry of entries) {
      const plot = drawn.get((entry.target as HTMLElement).id)?.plot
      const width = Math.max(MIN_WIDTH, Math.floor(entry.contentRect.width))
      if (plot && Math.abs(plot.width - width) > 1) plot.setSize({ width, height: HEIGHT })
    }
  })
  resized.observe(box)
}

function uPlotClass(): typeof uPlot | null {
  return (globalThis as unknown as { uPlot?: typeof uPlot }).uPlot ?? null
}

function css(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback
}

/** Points are marked while a series has few values (a replica just started): a line of one or two is hard to see. */
const FEW = 60
const fewValues: uPlot.Series.Points.Show = (u, seriesIdx) => {
  let n = 0
  for (const v of u.data[seriesIdx] ?? []) if (v !== null && v !== undefined) n++
  return n < FEW
}

/** Whole steps for the count axes: 1, 2, 5, 10, 20, 50, … (a count has no fractional tick). */
const WHOLE_STEPS = Array.from({ length: 27 }, (_, i) => ([1, 2, 5][i % 3] as number) * 10 ** Math.floor(i / 3))
/** The time axis's steps: whole minutes (its labels say hours and minutes). */
const TIME_STEPS = [60, 120, 300, 600, 900, 1200, 1800, 3600, 7200]

/**
 * A count scale from 0 with a tenth of headroom, up to a whole step (of WHOLE_STEPS, a fifth
 * of it at least): the highest value is drawn below the top border, and the top is labelled.
 */
const counts: uPlot.Range.Function = (_u, _min, max) => {
  const top = Math.max(1, Math.ceil((max ?? 0) * 1.1))
  const step = WHOLE_STEPS.find((s) => s >= top / 5) ?? 1
  return [0, Math.ceil(top / step) * step]
}

/** The bucket's time under the cursor: UTC, and the browser's own when it is another zone. */
function cursorTime(seconds: number): string {
  const utc = utcInstant(seconds * 1000)
  const local = localInstant(seconds * 1000)
  return utc.startsWith(local) ? utc : `${utc} (${onHover(seconds * 1000)})`
}

function valueText(scale: Scale, v: number | null): string {
  if (v === null) return '–'
  return scale === 'percent' ? `${v} %` : scale === 'ms' ? `${v} ms` : String(v)
}

function options(chart: Chart, width: number, UPlot: typeof uPlot): uPlot.Options {
  const fg = css('--fg', '#1b1f24')
  const grid = css('--line', '#d0d7de')
  const scales = scalesOf(chart)
  const axis = (scale: Scale, side?: 1): uPlot.Axis => ({
    scale,
    stroke: fg,
    font: FONT,
    grid: { stroke: grid, width: 1, show: side === undefined },
    ticks: { stroke: grid, width: 1 },
    size: 52,
    space: 24,
    label: chart.axes[scale] ?? '',
    labelSize: 20,
    labelFont: FONT,
    ...(scale === 'count' ? { incrs: WHOLE_STEPS } : {}),
    // Every value a whole number: counts by their steps, ms on whole decades, percentages by 25.
    values: (_u, splits) => splits.map((v) => (v === null || v === undefined ? null : String(Math.round(v)))),
    ...(side ? { side } : {}),
  })
  const time: uPlot.Axis = {
    stroke: fg,
    font: FONT,
    grid: { stroke: grid, width: 1 },
    ticks: { stroke: grid, width: 1 },
    // Two lines (the time, and the date under the first and each new day's): far enough apart for the dates.
    size: 58,
    space: 96,
    incrs: TIME_STEPS,
    values: (_u, splits) => timeTicks(splits),
    label: TIME_AXIS,
    labelSize: 20,
    labelFont: FONT,
  }
  return {
    width,
    height: HEIGHT,
    // Ticks fall on whole minutes of UTC, whatever the browser's zone.
    tzDate: (ts) => UPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    scales: {
      x: { time: true },
      count: { range: counts },
      ms: { distr: 3, log: 10, range: (_u, min, max) => UPlot.rangeLog(Math.max(1, min ?? 1), Math.max(10, max ?? 10), 10, true) },
      percent: { range: [0, 100] },
    },
    series: [
      { label: 'Time', value: (_u: Plot, v: number | null) => (v === null ? '–' : cursorTime(v)) },
      ...chart.lines.map((l, i) => ({
        label: l.label,
        scale: l.scale ?? 'count',
        stroke: COLORS[i % COLORS.length],
        width: 1.5,
        points: { show: fewValues, size: 5 },
        ...(l.dash ? { dash: l.dash } : {}),
        value: (_u: Plot, v: number | null) => valueText(l.scale ?? 'count', v),
      })),
    ],
    axes: [time, ...scales.map((scale, i) => axis(scale, i === 0 ? undefined : 1))],
    legend: { live: true },
  }
}

/** The scales a chart draws on, the first line's first (the left axis). */
function scalesOf(chart: Chart): Scale[] {
  return [...new Set(chart.lines.map((l) => l.scale ?? 'count'))]
}

/** Values drawn (not null) that are above zero: what a chart has to show. */
function points(lines: readonly Line[]): number {
  let n = 0
  for (const l of lines) for (const v of l.values) if (v !== null && v > 0) n++
  return n
}

function draw(chart: Chart, times: number[]): void {
  const box = document.getElementById(chart.id)
  const UPlot = uPlotClass()
  if (!box) return
  box.dataset.points = String(points(chart.lines))
  // What the axes say (drawn on the canvas), for a reader of the page's text and its tests.
  box.dataset.axes = [TIME_AXIS, ...scalesOf(chart).map((s) => chart.axes[s] ?? '')].join(' | ')
  box.dataset.buckets = String(times.length)
  const note = document.getElementById(`${chart.id}-summary`)
  if (note) note.textContent = chart.summary
  if (!UPlot) {
    box.textContent = 'The chart library did not load.'
    return
  }
  const width = Math.max(MIN_WIDTH, Math.floor(box.clientWidth))
  const data: uPlot.AlignedData = [times, ...chart.lines.map((l) => l.values)]
  const signature = chart.lines.map((l) => `${l.label}:${l.scale ?? 'count'}`).join('\n')
  let entry = drawn.get(chart.id)
  if (entry && entry.signature !== signature) {
    entry.plot.destroy()
    entry = undefined
  }
  if (!entry) {
    box.replaceChildren()
    drawn.set(chart.id, { plot: new UPlot(options(chart, width, UPlot), data, box), signature })
    follow(box)
    return
  }
  if (Math.abs(entry.plot.width - width) > 1) entry.plot.setSize({ width, height: HEIGHT })
  entry.plot.setData(data)
}

/** Per credential, or the credential's own words when there is only one. */
const named = (label: string, credential: string, several: boolean) => (several ? `${label} (${credential})` : label)

/** Draws (or updates) every chart from `d`, the buckets of the window `span` names (`5 min`). */
export function drawCharts(d: Charted, span: string): void {
  const several = d.credentials.length > 1
  const said = chartSummaries(d, span)
  const charts: Chart[] = [
    {
      id: 'chart-requests',
      lines: [{ label: 'Requests', values: d.requests }],
      axes: { count: 'Requests per 10 s' },
      summary: said.requests,
    },
    {
      // The error answers on an axis of their own: on the requests' they would lie on its bottom border.
      id: 'chart-errors',
      lines: [
        { label: '4xx', values: d.clientErrors },
        { label: '5xx', values: d.serverErrors },
        { label: '429', values: d.tooManyRequests, dash: [4, 3] },
      ],
      axes: { count: 'Answers per 10 s' },
      summary: said.errors,
    },
    {
      id: 'chart-hits',
      lines: [{ label: 'Hit ratio', values: d.hitRatio, scale: 'percent' }],
      axes: { percent: 'Hit ratio (%)' },
      summary: said.hits,
    },
    {
      // The latency floor (the latency of the kind answered most, with a free worker) beside the latencies it is the floor of.
      id: 'chart-platform',
      lines: [
        { label: 'Platform calls', values: d.platformCalls },
        { label: 'p50 latency', values: d.latencyP50Ms, scale: 'ms' },
        { label: 'p99 latency', values: d.latencyP99Ms, scale: 'ms', dash: [4, 3] },
        ...d.credentials.map((c) => ({ label: named('Latency floor', c.credential, several), values: c.latencyFloorMs, scale: 'ms' as const, dash: [1, 3] })),
      ],
      axes: { count: 'Calls per 10 s', ms: 'Latency (ms, log)' },
      summary: said.platform,
    },
    {
      // The limit in force with the calls it limits, on their axis.
      id: 'chart-inflight',
      lines: d.credentials.flatMap((c) => [
        { label: named('In flight', c.credential, several), values: c.inFlight },
        { label: named('Waiting', c.credential, several), values: c.waiting },
        { label: named('Limit in force', c.credential, several), values: c.limit, dash: [4, 3] },
      ]),
      axes: { count: 'Platform calls' },
      summary: said.inflight,
    },
  ]
  for (const chart of charts) draw(chart, d.times)
}

/** Removes every chart (the token was forgotten or refused). */
export function clearCharts(): void {
  resized?.disconnect()
  resized = null
  for (const [id, { plot }] of drawn) {
    plot.destroy()
    document.getElementById(id)?.removeAttribute('data-points')
  }
  drawn.clear()
}
