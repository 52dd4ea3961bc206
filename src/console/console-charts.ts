// The console's charts of the last 5 minutes, 15 minutes or hour, drawn by uPlot: its script and style come from
// the gateway itself (/console/uPlot.iife.min.js, loaded before this module, and
// /console/uPlot.min.css). uPlot styles its elements through the CSSOM only, which the
// page's style-src 'self' allows.
import type uPlot from 'uplot'
import { lastSum, type Charted, type Series } from './console-cluster.js'
import { plural } from './console-format.js'

const HEIGHT = 210
const MIN_WIDTH = 200

/** Series colours that read on a light and a dark background alike. */
const COLORS = ['#2f81f7', '#d29922', '#cf222e', '#8250df', '#1a7f37', '#bf3989', '#0a7ea4', '#9a6700']

interface Line {
  label: string
  values: Series
  /** The scale it is drawn on: counts (left axis) unless said. */
  scale?: 'count' | 'ms' | 'percent'
  dash?: number[]
}

type Scale = 'count' | 'ms' | 'percent'

interface Chart {
  id: string
  lines: Line[]
  /** The label of each scale's axis (the first line's on the left, another on the right). */
  axes: Partial<Record<Scale, string>>
  /** What the chart says in words (below it, and for a screen reader). */
  summary: string
}

/** The time axis's label: the times are this browser's. */
const TIME_AXIS = 'Time (this browser\'s clock)'

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

const fromZero: uPlot.Range.Function = (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1]

function options(chart: Chart, width: number): uPlot.Options {
  const fg = css('--fg', '#1b1f24')
  const grid = css('--line', '#d0d7de')
  const axis = (scale: Scale, side?: 1): uPlot.Axis => ({
    scale,
    stroke: fg,
    grid: { stroke: grid, width: 1, show: side === undefined },
    ticks: { stroke: grid, width: 1 },
    size: 48,
    label: chart.axes[scale] ?? '',
    labelSize: 20,
    labelFont: '12px system-ui, sans-serif',
    ...(side ? { side } : {}),
  })
  const axes: uPlot.Axis[] = [{ stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, label: TIME_AXIS, labelSize: 20, labelFont: '12px system-ui, sans-serif' }]
  for (const [i, scale] of scalesOf(chart).entries()) axes.push(axis(scale, i === 0 ? undefined : 1))
  return {
    width,
    height: HEIGHT,
    scales: { x: { time: true }, count: { range: fromZero }, ms: { range: fromZero }, percent: { range: [0, 100] } },
    series: [
      {},
      ...chart.lines.map((l, i) => ({
        label: l.label,
        scale: l.scale ?? 'count',
        stroke: COLORS[i % COLORS.length],
        width: 1.5,
        points: { show: fewValues, size: 5 },
        ...(l.dash ? { dash: l.dash } : {}),
        value: (_u: Plot, v: number | null) => (v === null ? '–' : l.scale === 'percent' ? `${v} %` : l.scale === 'ms' ? `${v} ms` : String(v)),
      })),
    ],
    axes,
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
  const signature = chart.lines.map((l) => l.label).join('\n')
  let entry = drawn.get(chart.id)
  if (entry && entry.signature !== signature) {
    entry.plot.destroy()
    entry = undefined
  }
  if (!entry) {
    box.replaceChildren()
    drawn.set(chart.id, { plot: new UPlot(options(chart, width), data, box), signature })
    follow(box)
    return
  }
  if (Math.abs(entry.plot.width - width) > 1) entry.plot.setSize({ width, height: HEIGHT })
  entry.plot.setData(data)
}

const n = (series: Series) => lastSum(series, series.length)
const newest = (series: Series): number | null => {
  for (let i = series.length - 1; i >= 0; i--) if (series[i] !== null && series[i] !== undefined) return series[i] as number
  return null
}
const say = (v: number | null, unit = '') => (v === null ? '–' : `${v}${unit}`)

/** Draws (or updates) every chart from `d`, the buckets of the window `span` names (`5 min`). */
export function drawCharts(d: Charted, span: string): void {
  const reads = n(d.requests)
  const charts: Chart[] = [
    {
      id: 'chart-requests',
      lines: [
        { label: 'Requests', values: d.requests },
        { label: '4xx', values: d.clientErrors },
        { label: '5xx', values: d.serverErrors },
        { label: '429', values: d.tooManyRequests, dash: [4, 3] },
      ],
      axes: { count: 'Requests per 10 s' },
      summary: `Last ${span}: ${plural(reads, 'request')}, ${n(d.clientErrors)} 4xx (${n(d.tooManyRequests)} of them 429), ${n(d.serverErrors)} 5xx.`,
    },
    {
      id: 'chart-hits',
      lines: [{ label: 'Hit ratio', values: d.hitRatio, scale: 'percent' }],
      axes: { percent: 'Hit ratio (%)' },
      summary: `Newest bucket with report reads: ${say(newest(d.hitRatio), ' %')} of them answered by the cache.`,
    },
    {
      id: 'chart-platform',
      lines: [
        { label: 'Platform calls', values: d.platformCalls },
        { label: 'p50 latency', values: d.latencyP50Ms, scale: 'ms' },
        { label: 'p99 latency', values: d.latencyP99Ms, scale: 'ms', dash: [4, 3] },
      ],
      axes: { count: 'Calls per 10 s', ms: 'Latency (ms)' },
      summary: `Last ${span}: ${plural(n(d.platformCalls), 'platform call')}; newest latency p50 ${say(newest(d.latencyP50Ms), ' ms')}, p99 ${say(newest(d.latencyP99Ms), ' ms')}.`,
    },
    {
      id: 'chart-inflight',
      lines: [
        { label: 'In flight', values: d.inFlight },
        { label: 'Waiting', values: d.waiting },
      ],
      axes: { count: 'Platform calls' },
      summary: `Now: ${newest(d.inFlight) === null ? '–' : plural(newest(d.inFlight) as number, 'platform call')} in flight, ${say(newest(d.waiting))} waiting.`,
    },
    {
      id: 'chart-limit',
      lines: d.limits.flatMap((c) => [
        { label: `Limit (${c.credential})`, values: c.limit },
        { label: `Floor (${c.credential})`, values: c.latencyFloorMs, scale: 'ms' as const, dash: [4, 3] },
      ]),
      axes: { count: 'Limit (calls in flight)', ms: 'Latency floor (ms)' },
      summary: d.limits.map((c) => `${c.credential}: limit ${say(newest(c.limit))}, floor ${say(newest(c.latencyFloorMs), ' ms')}`).join('; ') || 'No credential.',
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
