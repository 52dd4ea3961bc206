import { Counter, Histogram, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { CounterTallies, TalliedHistogram } from '../../src/perf/metric-tally.js'

const BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

/** The exposition lines of a registry, sorted, and with each line's labels in name order. */
async function lines(registry: Registry): Promise<string[]> {
  const text = await registry.metrics()
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.replace(/\{([^}]*)\}/, (_, inner: string) => `{${inner.split(',').sort().join(',')}}`))
    .sort()
}

describe('tallied metrics (the hit path counts in plain numbers)', () => {
  it('write the same histogram as prom-client for the same observations', async () => {
    const theirs = new Registry()
    const ours = new Registry()
    const reference = new Histogram({ name: 'd_seconds', help: 'h', labelNames: ['route'], buckets: BUCKETS, registers: [theirs] })
    const tallied = new TalliedHistogram<'route'>({ name: 'd_seconds', help: 'h', labelNames: ['route'], buckets: BUCKETS, registers: [ours] })
    const samples = [0, 0.0004, 0.001, 0.003, 0.0099, 0.2, 0.9, 3, 29.9, 30, 31, 1e6]
    for (const [i, v] of samples.entries()) {
      const route = i % 3 === 0 ? 'report' : 'proxy'
      reference.observe({ route }, v)
      tallied.labels({ route }).observe(v)
    }
    expect(await lines(ours)).toEqual(await lines(theirs))
    expect((await ours.metrics()).split('\n').slice(0, 2)).toEqual(['# HELP d_seconds h', '# TYPE d_seconds histogram'])
    // What reads a registry for its labels (the chart's PromQL check) sees the same ones.
    const declared = (r: Registry) => r.getMetricsAsArray().map((m) => (m as unknown as { labelNames?: string[] }).labelNames)
    expect(declared(ours)).toEqual(declared(theirs))
  })

  it('zero a histogram on reset, and keep counting through the children held before it', async () => {
    const registry = new Registry()
    const tallied = new TalliedHistogram<'route'>({ name: 'd_seconds', help: 'h', labelNames: ['route'], buckets: [1], registers: [registry] })
    const child = tallied.labels({ route: 'report' })
    child.observe(0.5)
    registry.resetMetrics()
    child.observe(2)
    expect(await lines(registry)).toEqual(['d_seconds_bucket{le="+Inf",route="report"} 1', 'd_seconds_bucket{le="1",route="report"} 0', 'd_seconds_count{route="report"} 1', 'd_seconds_sum{route="report"} 2'])
  })

  it('hand counter counts to prom-client whenever the counter is read, once each', async () => {
    const registry = new Registry()
    const tallies = new CounterTallies<'route' | 'status'>()
    const counter = new Counter({
      name: 'r_total',
      help: 'h',
      labelNames: ['route', 'status'] as const,
      registers: [registry],
      collect() {
        tallies.flush(this)
      },
    })
    const ok = tallies.child({ route: 'report', status: '200' })
    expect(tallies.child({ route: 'report', status: '200' })).toBe(ok)
    for (let i = 0; i < 3; i++) ok.inc()
    tallies.child({ route: 'proxy', status: '502' }).inc()
    expect(await lines(registry)).toEqual(['r_total{route="proxy",status="502"} 1', 'r_total{route="report",status="200"} 3'])
    ok.inc()
    // get() reads through collect too (GET /admin/status does).
    const got = await counter.get()
    expect(got.values.find((v) => v.labels.route === 'report')?.value).toBe(4)
    expect(await lines(registry)).toEqual(['r_total{route="proxy",status="502"} 1', 'r_total{route="report",status="200"} 4'])
  })
})
