import { Socket } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { tracingConfig } from '../../src/config/tracing.js'
import { otelTracing } from '../../src/observe/otel-tracing.js'
import { traced, tracedCall, type TracedRequest } from '../../src/observe/tracing.js'
import type { RequestTracer } from '../../src/observe/trace.js'
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp-receiver.js'

// A request the sampler leaves out costs close to tracing off: its trace makes no span,
// computes no attribute and adds no async frame of its own (docs/decisions/opentelemetry.md,
// "An unsampled request's price").

let receiver: OtlpReceiver
beforeAll(async () => {
  receiver = await startOtlpReceiver()
})
afterAll(() => receiver.close())
const open: RequestTracer[] = []
afterEach(async () => {
  for (const t of open.splice(0)) await t.close()
})

/** The gateway's tracer with `sampler` (and its ratio); `searched` counts the texts of a request put to the secret search, as its SERVER span's attributes are made. */
async function tracer(sampler: string, ratio?: string): Promise<{ tracer: RequestTracer; searched: string[] }> {
  const problems: string[] = []
  const config = tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: sampler, ...(ratio === undefined ? {} : { OTEL_TRACES_SAMPLER_ARG: ratio }) }, problems)
  expect(problems).toEqual([])
  const searched: string[] = []
  const made = await otelTracing(config!, { version: '0.1.0', instanceId: 'test', now: () => Date.now(), warn: () => undefined, holdsSecret: (text) => (searched.push(text), false) })
  open.push(made)
  return { tracer: made, searched }
}

function request(headers: Record<string, string> = {}): TracedRequest {
  return { method: 'GET', url: '/api/v1/report/x/get?advertiserId=1', headers: { host: 'gateway.internal:8080', 'user-agent': 'wrk', ...headers }, httpVersion: '1.1', socket: new Socket() }
}

describe('a request the sampler leaves out', () => {
  it('computes no attribute of its SERVER span, without a traceparent, for each sampler that leaves it out', async () => {
    for (const [sampler, ratio] of [['always_off'], ['parentbased_always_off'], ['traceidratio', '0'], ['parentbased_traceidratio', '0']] as const) {
      const { tracer: t, searched } = await tracer(sampler, ratio)
      const trace = t.start(request())
      expect([sampler, trace.recording, searched]).toEqual([sampler, false, []])
      expect(trace.traceId).toMatch(/^(?!0{32})[0-9a-f]{32}$/)
    }
  })

  it('still computes them for a request it records', async () => {
    const { tracer: t, searched } = await tracer('parentbased_traceidratio', '1')
    expect(t.start(request()).recording).toBe(true)
    expect(searched).toContain('/api/v1/report/x/get')
  })

  it('keeps its trace id from start to its platform call: the traceparent sent names it, not sampled', async () => {
    const { tracer: t } = await tracer('parentbased_traceidratio', '0')
    const trace = t.start(request())
    const id = trace.traceId
    let headers: Readonly<Record<string, string>> = {}
    await tracedCall(trace, () => ({ name: 'GET', attributes: {} }), async (h) => ((headers = h), { statusCode: 200 }))
    expect(headers.traceparent).toMatch(new RegExp(`^00-${id}-(?!0{16})[0-9a-f]{16}-00$`))
    expect(trace.traceId).toBe(id)
  })
})

describe('a step of a trace that records nothing', () => {
  it('runs its work as given: its attributes not asked, its promise the work\'s own (no async frame added)', async () => {
    const { tracer: t } = await tracer('always_off')
    const parent = t.start(request())
    let asked = 0
    const work = Promise.resolve(7)
    const child = traced(parent, 'governor.queue', () => (asked++, { 'gateway.team': 'x' }), () => work)
    expect(child).toBe(work)
    expect(await child).toBe(7)
    expect(asked).toBe(0)
  })

  it('sends a platform call the trace\'s traceparent without asking what its span would hold', async () => {
    const { tracer: t } = await tracer('always_off')
    const parent = t.start(request({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }))
    let asked = 0
    let headers: Readonly<Record<string, string>> = {}
    const res = await tracedCall(parent, () => (asked++, { name: 'GET', attributes: {} }), async (h) => ((headers = h), { statusCode: 503 }))
    expect(res.statusCode).toBe(503)
    expect(asked).toBe(0)
    expect(headers.traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-00$/)
  })

  it('is still a span of a recorded parent, its attributes asked once', async () => {
    const { tracer: t } = await tracer('parentbased_always_on')
    const parent = t.start(request())
    let asked = 0
    expect(await traced(parent, 'governor.queue', () => (asked++, { 'gateway.team': 'x' }), async () => 7)).toBe(7)
    expect(asked).toBe(1)
  })
})
