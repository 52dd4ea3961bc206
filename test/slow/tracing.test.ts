/**
 * OpenTelemetry traces, against a real OTLP/HTTP receiver on loopback: a gateway process
 * (dist/main.js, as production runs it) with the standard OTEL_* variables exports a SERVER
 * span per request with a child span per step (admission, the cache lookup, the wait for a
 * fill, the governor's queue, the platform call), honours the caller's traceparent, sends
 * the platform its own (and nothing else of the caller's tracing headers), logs the trace id,
 * and puts no key, token or secret in any attribute. Off (no endpoint), the platform gets no
 * traceparent at all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { KEYS, listen, sandboxLoginEnv, TEAMS_YAML, TEST_GATEWAY_SECRET, testConfig } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox, useSandboxGateway } from '../helpers/fixtures.js'
import { redisAvailability } from '../helpers/start-redis.js'
import { spawnGateway, type GatewayProcess } from '../helpers/gateway-process.js'
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js'
import { leakedSecrets, runSecrets } from '../helpers/secret-scan.js'
import { waitFor } from '../helpers/wait.js'

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
const REPORT = '/api/v1/report/campaigns/get'
const COLLECTOR_TOKEN = 'collector-token-4f1d2a9b7c3e'
const ADMIN_TOKEN = 'traced-admin-token-9c2e4b7a1f3d5e80'
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CALLER_SPAN = '00f067aa0ba902b7'
/** A trace of its own for the proxied call: its spans are told apart from the report reads' in CALLER_TRACE. */
const PROXY_TRACE = '5ce0e9a56015fec5aadfa328ae398115'
const SERVER = 2
const CLIENT = 3

const sandbox = useSandbox()

/** A gateway process exporting to `receiver` with `otel` variables on top of the test's. */
async function tracedGateway(receiver: OtlpReceiver, otel: Record<string, string>): Promise<GatewayProcess> {
  return spawnGateway({
    env: {
      PLATFORM_BASE_URL: sandbox.url,
      PLATFORM_TOKEN: sandbox.issueToken(),
      LOG_LEVEL: 'info',
      ADMIN_TOKEN,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      // A batch every 50 ms instead of 5 s: the spans come while the test waits.
      OTEL_BSP_SCHEDULE_DELAY: '50',
      ...otel,
    },
    yaml: TEAMS_YAML,
  })
}

async function get(gw: GatewayProcess, path: string, headers: Record<string, string>) {
  const res = await fetch(`${gw.url}${path}`, { headers })
  return { status: res.status, headers: res.headers, body: await res.text() }
}

/** The access log line of a request id. */
/** The access line of `reqId`, once the gateway process's output has reached this one (its pipe is read apart from its answers). */
async function logLine(gw: GatewayProcess, reqId: string): Promise<Record<string, unknown>> {
  const find = () =>
    gw
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && l.reqId === reqId)
  await waitFor(`the access line of ${reqId}`, () => find() !== undefined)
  return find()!
}

/** One millisecond in nanoseconds: how far the clocks of two spans may differ. */
const MS = 1_000_000n

describe('traces exported over OTLP/HTTP (JSON)', () => {
  let receiver: OtlpReceiver
  let gw: GatewayProcess

  beforeAll(async () => {
    receiver = await startOtlpReceiver()
    gw = await tracedGateway(receiver, {
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'report-gateway-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${COLLECTOR_TOKEN}`,
    })
  }, 120_000)

  afterAll(async () => {
    await gw?.close()
    await receiver?.close()
  })

  /** The exported spans of the request whose server span carries `reqId`, once that span has come. */
  async function spansOf(reqId: string): Promise<{ server: ReceivedSpan; all: ReceivedSpan[]; named: (name: string) => ReceivedSpan[] }> {
    let server: ReceivedSpan | undefined
    await waitFor(`the server span of ${reqId}`, () => (server = receiver.spans().find((s) => s.kind === SERVER && s.attributes['gateway.request_id'] === reqId)) !== undefined)
    const all = receiver.spans().filter((s) => s.traceId === server!.traceId)
    return { server: server!, all, named: (name) => all.filter((s) => s.name === name) }
  }

  /** The spans of the fill a request's `cache.fill` waited for: the trace of the `report.fill` span linked to it, once that span has come. */
  async function fillOf(waiting: ReceivedSpan): Promise<{ root: ReceivedSpan; all: ReceivedSpan[]; named: (name: string) => ReceivedSpan[] }> {
    let root: ReceivedSpan | undefined
    const linked = (s: ReceivedSpan) => s.name === 'report.fill' && s.links.some((l) => l.traceId === waiting.traceId && l.spanId === waiting.spanId)
    await waitFor(`the fill linked to ${waiting.spanId}`, () => (root = receiver.spans().find(linked)) !== undefined)
    const all = receiver.spans().filter((s) => s.traceId === root!.traceId)
    return { root: root!, all, named: (name) => all.filter((s) => s.name === name) }
  }

  it('traces a miss end to end: the caller\'s trace, a span per step, the gateway\'s own traceparent to the platform', async () => {
    const res = await get(gw, `${REPORT}?advertiserId=101&dateFrom=2026-04-01&dateTo=2026-04-07`, {
      'x-api-key': KEYS.all,
      'x-request-id': 'trace-miss-1',
      traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
      tracestate: 'caller=secret-state',
      baggage: 'user=alice',
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-cache')).toBe('MISS')
    const { server, all, named } = await spansOf('trace-miss-1')

    expect(server).toMatchObject({ traceId: CALLER_TRACE, parentSpanId: CALLER_SPAN, name: 'GET /api/v1/report/{split}/get', status: 0, scope: 'report-gateway' })
    expect(server.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.route': '/api/v1/report/{split}/get',
      'url.path': REPORT,
      'url.scheme': 'http',
      'http.response.status_code': 200,
      'client.address': '127.0.0.1',
      'server.address': '127.0.0.1',
      'network.protocol.version': '1.1',
      'gateway.team': 'all',
      'gateway.cache.status': 'MISS',
    })
    expect(server.resource).toMatchObject({ 'service.name': 'report-gateway-test', 'service.version': VERSION, 'deployment.environment.name': 'test', 'service.instance.id': expect.any(String), 'host.name': expect.any(String) })

    const [admission] = named('admission')
    const [lookup] = named('cache.lookup')
    const [fill] = named('cache.fill')
    for (const [span, parent] of [[admission, server], [lookup, server], [fill, server]] as const) {
      expect(span, `${span?.name} under ${parent?.name}`).toBeDefined()
      expect(span!.parentSpanId).toBe(parent!.spanId)
      // Each span's clock is anchored to the wall clock (whole milliseconds) when it starts: spans compare within 1 ms.
      expect(span!.startNs + MS >= parent!.startNs && span!.endNs <= parent!.endNs + MS).toBe(true)
    }
    expect(lookup!.attributes).toMatchObject({ 'gateway.cache.tier': 'none', 'gateway.cache.result': 'miss' })
    expect(fill!.attributes).toMatchObject({ 'gateway.fill.source': 'own', 'gateway.fill.result': 'entry' })
    // The caller's trace holds no span of the fill, which every team of the credential reads: its cache.fill links to it.
    expect(all).toHaveLength(4)

    // The fill is a trace of the gateway's own, linked to the cache.fill of the caller that started it, and back.
    const shared = await fillOf(fill!)
    const { root } = shared
    expect(root.traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(root.traceId).not.toBe(CALLER_TRACE)
    expect(root.parentSpanId).toBe('')
    expect(root.links).toEqual([{ traceId: CALLER_TRACE, spanId: fill!.spanId }])
    expect(fill!.links).toEqual([{ traceId: root.traceId, spanId: root.spanId }])
    const sent = sandbox.requests.filter((r) => r.path === REPORT)
    expect(sent).toHaveLength(1)
    expect(root.attributes).toMatchObject({ 'gateway.credential': 'default', 'gateway.request_id': sent[0]!.headers['x-request-id'], 'gateway.fill.result': 'entry' })
    const [queue] = shared.named('governor.queue')
    const [call] = shared.named('GET /api/v1/report/campaigns/get')
    for (const span of [queue, call]) {
      expect(span?.parentSpanId).toBe(root.spanId)
      expect(span!.startNs + MS >= root.startNs && span!.endNs <= root.endNs + MS).toBe(true)
    }
    expect(queue!.attributes).toMatchObject({ 'gateway.credential': 'default', 'gateway.team': 'all', 'gateway.priority': 'caller' })
    expect(queue!.endNs <= call!.startNs + MS).toBe(true)
    expect(call!.kind).toBe(CLIENT)
    const platform = new URL(sandbox.url)
    expect(call!.attributes).toMatchObject({
      'http.request.method': 'GET',
      'server.address': platform.hostname,
      'server.port': Number(platform.port),
      'url.full': `${platform.origin}${REPORT}`,
      'url.template': REPORT,
      'http.response.status_code': 200,
    })
    expect(shared.all).toHaveLength(3)

    // The platform was sent the gateway's traceparent, naming the call's span in the fill's trace; nothing of the caller's.
    expect(sent[0]!.headers.traceparent).toBe(`00-${root.traceId}-${call!.spanId}-01`)
    expect(sent[0]!.headers.traceparent).not.toContain(CALLER_TRACE)
    expect(sent[0]!.headers.tracestate).toBeUndefined()
    expect(sent[0]!.headers.baggage).toBeUndefined()

    expect(await logLine(gw, 'trace-miss-1')).toMatchObject({ status: 200, cache: 'MISS', traceId: CALLER_TRACE })
  })

  it('links the fill to each read that waited for it on this replica, and each such read\'s cache.fill to the fill', async () => {
    const url = `${REPORT}?advertiserId=101&dateFrom=2026-04-10&dateTo=2026-04-12`
    sandbox.setLatency(600)
    const first = get(gw, url, { 'x-api-key': KEYS.all, 'x-request-id': 'trace-join-1', traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` })
    await waitFor('the first read\'s platform call', () => sandbox.requests.some((r) => r.path === REPORT))
    const second = await get(gw, url, { 'x-api-key': KEYS.all, 'x-request-id': 'trace-join-2' })
    expect([(await first).headers.get('x-cache'), second.headers.get('x-cache')]).toEqual(['MISS', 'MISS'])
    expect(sandbox.requests.filter((r) => r.path === REPORT)).toHaveLength(1)
    // Each read's own wait: the first read's trace (the caller's) holds other tests' spans too.
    const waits = await Promise.all(['trace-join-1', 'trace-join-2'].map(async (id) => {
      const { server, named } = await spansOf(id)
      return named('cache.fill').find((s) => s.parentSpanId === server.spanId)!
    }))
    expect(waits.map((w) => w.attributes['gateway.fill.source'])).toEqual(['own', 'joined'])
    const { root, all } = await fillOf(waits[0]!)
    expect(root.links).toEqual(waits.map((w) => ({ traceId: w.traceId, spanId: w.spanId })))
    for (const w of waits) expect(w.links).toEqual([{ traceId: root.traceId, spanId: root.spanId }])
    expect(all.filter((s) => s.kind === CLIENT)).toHaveLength(1)
  })

  it('traces a hit answered before the router: admission and an L1 lookup, no platform; a new trace without a caller\'s', async () => {
    const url = `${REPORT}?advertiserId=101&dateFrom=2026-04-08&dateTo=2026-04-09`
    expect((await get(gw, url, { 'x-api-key': KEYS.all })).status).toBe(200)
    const hit = await get(gw, url, { 'x-api-key': KEYS.all, 'x-request-id': 'trace-hit-1' })
    expect(hit.headers.get('x-cache')).toBe('HIT')
    const { server, all, named } = await spansOf('trace-hit-1')
    expect(server.parentSpanId).toBe('')
    expect(server.traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(server.traceId).not.toBe(CALLER_TRACE)
    expect(server.attributes).toMatchObject({ 'http.response.status_code': 200, 'gateway.cache.status': 'HIT', 'http.route': '/api/v1/report/{split}/get', 'server.address': '127.0.0.1' })
    expect(named('cache.lookup')[0]?.attributes).toMatchObject({ 'gateway.cache.tier': 'l1', 'gateway.cache.result': 'hit' })
    expect(all.map((s) => s.name).sort()).toEqual(['GET /api/v1/report/{split}/get', 'admission', 'cache.lookup'])
    expect(await logLine(gw, 'trace-hit-1')).toMatchObject({ cache: 'HIT', traceId: server.traceId })
  })

  it('traces a platform call the gateway proxies, with its traceparent, and a refusal as a failed admission', async () => {
    const res = await fetch(`${gw.url}/api/v1/campaign/get?per_page=5`, {
      method: 'POST',
      headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json', 'x-request-id': 'trace-proxy-1', traceparent: `00-${PROXY_TRACE}-${CALLER_SPAN}-01` },
      body: JSON.stringify({ userId: 101 }),
    })
    expect(res.status).toBe(200)
    const { server, named } = await spansOf('trace-proxy-1')
    expect(server).toMatchObject({ name: 'POST /api/v1/{path}' })
    expect(server.attributes).toMatchObject({ 'http.route': '/api/v1/{path}', 'http.response.status_code': 200 })
    const [call] = named('POST /api/v1/campaign/get')
    expect(call?.parentSpanId).toBe(server.spanId)
    expect(named('governor.queue')[0]?.parentSpanId).toBe(server.spanId)
    // A proxied call's answer goes to its caller alone: the platform is asked in the caller's trace.
    expect(server.traceId).toBe(PROXY_TRACE)
    expect(sandbox.requests.find((r) => r.path === '/api/v1/campaign/get')?.headers.traceparent).toBe(`00-${PROXY_TRACE}-${call!.spanId}-01`)

    const refused = await get(gw, `${REPORT}?advertiserId=101&dateFrom=2026-04-01&dateTo=2026-04-07`, { 'x-api-key': 'rgw_not_a_key_0000000000000000000000', 'x-request-id': 'trace-refused-1' })
    expect(refused.status).toBe(401)
    // A request without a key the gateway knows is named by an id of the gateway's (decisions/secret-guesses.md).
    const deniedId = refused.headers.get('x-request-id') as string
    expect(deniedId).not.toBe('trace-refused-1')
    const denied = await spansOf(deniedId)
    // HTTP semantic conventions: a 4xx leaves a server span's status unset; the step that refused is the error.
    expect(denied.server.status).toBe(0)
    expect(denied.server.attributes['http.response.status_code']).toBe(401)
    // The fast path handed the unknown key to the router, whose admission refused it.
    expect(denied.named('admission').sort((a, b) => (a.startNs < b.startNs ? -1 : 1)).map((s) => [s.status, s.attributes['gateway.handed_over'] ?? null, s.attributes['error.type'] ?? null])).toEqual([
      [0, true, null],
      [2, null, '401'],
    ])
  })

  it('writes no key-shaped text of a proxied path into its CLIENT span, and bounds the span\'s name', async () => {
    const lookalike = 'rgw_looks_like_a_key_of_no_team_00000000000000'
    const long = `/api/v1/campaign/${'a'.repeat(3000)}/get`
    for (const [i, path] of [`/api/v1/campaign/${lookalike}/get`, long].entries()) {
      const res = await get(gw, path, { 'x-api-key': KEYS.all, 'x-request-id': `trace-client-path-${i}` })
      expect(res.status, path.slice(0, 60)).toBeLessThan(500)
      const { all, server } = await spansOf(`trace-client-path-${i}`)
      const call = all.find((s) => s.kind === CLIENT && s.parentSpanId === server.spanId)
      expect(call).toBeDefined()
      expect(call!.name.length).toBeLessThanOrEqual(4 + 1024)
      expect(JSON.stringify([call!.name, call!.attributes])).not.toContain('rgw_')
    }
    const first = receiver.spans().find((s) => s.kind === CLIENT && s.name.includes('[REDACTED]'))
    expect(first?.attributes['url.template']).toBe('/api/v1/campaign/[REDACTED]/get')
  })

  it('starts a trace of its own for a malformed traceparent, and still sends the platform only its own', async () => {
    const forged = `00-${CALLER_TRACE}-${CALLER_SPAN}-01, 00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01`
    for (const [i, traceparent] of [forged, '00-zz-yy-01', `ff-${CALLER_TRACE}-${CALLER_SPAN}-01;x=<script>`].entries()) {
      const res = await get(gw, `${REPORT}?advertiserId=102&dateFrom=2026-04-0${i + 1}&dateTo=2026-04-0${i + 1}`, { 'x-api-key': KEYS.all, 'x-request-id': `trace-forged-${i}`, traceparent })
      expect(res.status).toBe(200)
      const { server, named } = await spansOf(`trace-forged-${i}`)
      expect(server.parentSpanId).toBe('')
      expect(server.traceId).not.toBe(CALLER_TRACE)
      const fill = await fillOf(named('cache.fill')[0]!)
      const call = fill.named('GET /api/v1/report/campaigns/get')[0]!
      const sent = sandbox.requests.filter((r) => r.path === REPORT).at(-1)!
      expect(sent.headers.traceparent).toBe(`00-${fill.root.traceId}-${call.spanId}-01`)
    }
  })

  it('puts no key, token or secret in any span, and sends the collector its headers without logging them', async () => {
    // Calls with every kind of secret a caller holds in a header: keys both ways, a cookie.
    await get(gw, `${REPORT}?advertiserId=101&dateFrom=2026-04-01&dateTo=2026-04-07`, { authorization: `Bearer ${KEYS.growth}`, cookie: `session=${KEYS.writer}`, 'x-request-id': 'trace-secrets-1' })
    await spansOf('trace-secrets-1')
    const exported = receiver.exports.map((e) => e.body.toString('utf8')).join('\n')
    expect(exported.length).toBeGreaterThan(0)
    expect(leakedSecrets(exported, runSecrets(sandbox, [TEST_GATEWAY_SECRET, COLLECTOR_TOKEN]))).toEqual([])
    expect(exported).not.toMatch(/authorization|x-api-key|cookie|bearer/i)
    expect(receiver.exports.every((e) => e.path === '/v1/traces' && e.headers.authorization === `Bearer ${COLLECTOR_TOKEN}`)).toBe(true)
    expect(gw.output()).not.toContain(COLLECTOR_TOKEN)
  })

  it('carries no secret of the gateway\'s from a refused target, a user-agent or a Host into a span or a log line', async () => {
    // The admin token in the query; in the path, as it is and with one character percent-encoded (the platform would decode it); in a proxied call's user-agent.
    const encoded = `%${ADMIN_TOKEN.charCodeAt(0).toString(16)}${ADMIN_TOKEN.slice(1)}`
    const asked = [
      [`${REPORT}?advertiserId=101&dateFrom=2026-04-01&dateTo=2026-04-07&note=${ADMIN_TOKEN}`, KEYS.growth, {}],
      [`/api/v1/campaign/${ADMIN_TOKEN}/get`, KEYS.writer, {}],
      [`/api/v1/campaign/${encoded}/get`, KEYS.limited, {}],
      [`/api/v1/campaign/get?per_page=5`, KEYS.all, { 'user-agent': `tool/1 (${ADMIN_TOKEN})` }],
    ] as const
    // In Host, which server.address takes (fetch sends no Host of its own choosing), first:
    // each call below suspends its team, and a suspended team's id is not taken.
    const hostReq = await new Promise<number>((resolve, reject) => {
      const req = request(`${gw.url}${REPORT}?advertiserId=101&dateFrom=2026-04-01&dateTo=2026-04-07`, { headers: { host: ADMIN_TOKEN, 'x-api-key': KEYS.all, 'x-request-id': 'trace-secret-host' } }, (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0)))
      req.on('error', reject).end()
    })
    expect(hostReq).toBeGreaterThan(0)
    expect((await spansOf('trace-secret-host')).server.attributes['server.address']).toBe('[REDACTED]')
    // Each by a team of its own: a secret sent suspends its team (the hit itself is the 400 read here).
    for (const [i, [path, key, headers]] of asked.entries()) {
      const res = await get(gw, path, { 'x-api-key': key, 'x-request-id': `trace-secret-${i}`, ...headers })
      expect(res.status, path).toBe(400)
      expect(res.body).toContain('holds a secret of the gateway')
      const { server } = await spansOf(`trace-secret-${i}`)
      expect(server.attributes['http.response.status_code']).toBe(400)
      await logLine(gw, `trace-secret-${i}`)
    }
    const exported = receiver.exports.map((e) => e.body.toString('utf8')).join('\n')
    expect(exported).not.toContain(ADMIN_TOKEN.slice(1))
    expect(gw.output().split("\n").filter((l) => l.includes(ADMIN_TOKEN.slice(1)))).toEqual([])
  })
})

describe('traces exported over OTLP/HTTP (protobuf, the default)', () => {
  let receiver: OtlpReceiver
  let gw: GatewayProcess

  beforeAll(async () => {
    receiver = await startOtlpReceiver()
    gw = await tracedGateway(receiver, {})
  }, 120_000)

  afterAll(async () => {
    await gw?.close()
    await receiver?.close()
  })

  it('sends protobuf holding the caller\'s trace id and the gateway\'s name', async () => {
    const res = await get(gw, `${REPORT}?advertiserId=101&dateFrom=2026-05-01&dateTo=2026-05-02`, { 'x-api-key': KEYS.all, traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` })
    expect(res.status).toBe(200)
    const id = Buffer.from(CALLER_TRACE, 'hex')
    // The spans of one trace may leave in several batches: the server span, which ends last, in a later one.
    const route = Buffer.from('/api/v1/report/{split}/get')
    const served = (e: { body: Buffer }) => e.body.includes(id) && e.body.includes(route)
    await waitFor('a protobuf export with the trace\'s server span', () => receiver.exports.some(served))
    const exported = receiver.exports.find(served)!
    expect(exported.contentType).toBe('application/x-protobuf')
    expect(exported.path).toBe('/v1/traces')
    expect(exported.body.includes(Buffer.from('report-gateway'))).toBe(true)
  })

  it('sends a hit\'s new trace, its id drawn as bytes, under the trace id its access line names', async () => {
    const url = `${REPORT}?advertiserId=101&dateFrom=2026-05-03&dateTo=2026-05-04`
    expect((await get(gw, url, { 'x-api-key': KEYS.all })).status).toBe(200)
    const hit = await get(gw, url, { 'x-api-key': KEYS.all, 'x-request-id': 'proto-hit-1' })
    expect(hit.headers.get('x-cache')).toBe('HIT')
    const { traceId } = await logLine(gw, 'proto-hit-1')
    expect(traceId).toMatch(/^[0-9a-f]{32}$/)
    const id = Buffer.from(traceId as string, 'hex')
    const served = (e: { body: Buffer }) => e.body.includes(id) && e.body.includes(Buffer.from('proto-hit-1'))
    await waitFor('a protobuf export with the hit\'s server span', () => receiver.exports.some(served))
    // Its three spans (the request, admission, the L1 lookup) each carry the id: 16 bytes after the trace id's tag and length.
    const framed = Buffer.concat([Buffer.from([0x0a, 0x10]), id])
    const times = (body: Buffer) => body.toString('latin1').split(framed.toString('latin1')).length - 1
    await waitFor('the hit\'s three spans exported', () => receiver.exports.reduce((n, e) => n + times(e.body), 0) === 3)
  })

  it('sends its exports on one kept-alive connection, not a new one each', async () => {
    // One export at a time: a request, then the batch its spans leave in, five times over.
    for (let i = 0; i < 5; i += 1) {
      const before = receiver.exports.length
      const res = await get(gw, `${REPORT}?advertiserId=101&dateFrom=2026-05-01&dateTo=2026-05-02`, { 'x-api-key': KEYS.all })
      expect(res.status).toBe(200)
      await waitFor(`export ${i + 1}`, () => receiver.exports.length > before)
    }
    expect(new Set(receiver.exports.map((e) => e.connection)).size).toBe(1)
  })
})

describe.skipIf(!redisAvailability('the traces of a fill across replicas').available)('two replicas on one Redis', () => {
  const redis = useRedis()
  const gateways = useGateways()

  it('traces the wait for another replica\'s fill: its cache.fill says so, and it made no platform call', async () => {
    const receiver = await startOtlpReceiver()
    try {
      const env = { PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.server.url, GATEWAY_SECRET: TEST_GATEWAY_SECRET, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }
      const [a, b] = [await listen(await gateways.build(testConfig(env, TEAMS_YAML))), await listen(await gateways.build(testConfig(env, TEAMS_YAML)))]
      const url = `${REPORT}?advertiserId=101&dateFrom=2026-08-01&dateTo=2026-08-03`
      sandbox.setLatency(600)
      const leader = fetch(`${a.url}${url}`, { headers: { 'x-api-key': KEYS.all, 'x-request-id': 'fill-leader' } })
      await waitFor('the leader\'s platform call', () => sandbox.requests.some((r) => r.path === REPORT))
      const waiter = await fetch(`${b.url}${url}`, { headers: { 'x-api-key': KEYS.all, 'x-request-id': 'fill-waiter' } })
      expect([(await leader).status, waiter.status]).toEqual([200, 200])
      expect(waiter.headers.get('cache-status')).toMatch(/^report-gateway; fwd=uri-miss; collapsed; stored; ttl=\d+$/)
      // Closing sends every span still held.
      await a.close()
      await b.close()
      const spans = receiver.spans()
      const server = (reqId: string) => spans.find((s) => s.kind === SERVER && s.attributes['gateway.request_id'] === reqId)!
      const within = (reqId: string) => spans.filter((s) => s.traceId === server(reqId).traceId)
      const waited = (reqId: string) => within(reqId).find((s) => s.name === 'cache.fill')!
      // Each replica's fill is a trace of its own, linked to the wait of the read that started it there.
      const fillOf = (reqId: string) => {
        const root = spans.find((s) => s.name === 'report.fill' && s.links.some((l) => l.spanId === waited(reqId).spanId))!
        return spans.filter((s) => s.traceId === root.traceId)
      }
      expect(waited('fill-leader').attributes['gateway.fill.source']).toBe('own')
      expect(waited('fill-waiter').attributes['gateway.fill.source']).toBe('replica')
      expect([...within('fill-leader'), ...within('fill-waiter')].filter((s) => s.kind === CLIENT)).toEqual([])
      expect(fillOf('fill-waiter').filter((s) => s.kind === CLIENT)).toEqual([])
      expect(fillOf('fill-leader').filter((s) => s.kind === CLIENT)).toHaveLength(1)
      expect(sandbox.requests.filter((r) => r.path === REPORT)).toHaveLength(1)
      // The two replicas' fills are linked both ways (another replica's span: a link of its
      // trace and span ids), and no caller's trace reaches the other replica.
      const [leaderFill, waiterFill] = [fillOf('fill-leader')[0]!, fillOf('fill-waiter')[0]!].map((s) => spans.find((f) => f.name === 'report.fill' && f.traceId === s.traceId)!)
      const named = (s: ReceivedSpan) => ({ traceId: s.traceId, spanId: s.spanId })
      expect(waiterFill!.links).toEqual([named(waited('fill-waiter')), named(leaderFill!)])
      expect(leaderFill!.links).toEqual([named(waited('fill-leader')), named(waiterFill!)])
      const callerTraces = new Set([server('fill-leader').traceId, server('fill-waiter').traceId])
      expect(within('fill-waiter').flatMap((s) => s.links).filter((l) => l.traceId === server('fill-leader').traceId)).toEqual([])
      expect(within('fill-leader').flatMap((s) => s.links).filter((l) => l.traceId === server('fill-waiter').traceId)).toEqual([])
      expect(leaderFill!.traceId).not.toBe(waiterFill!.traceId)
      expect(callerTraces.has(leaderFill!.traceId) || callerTraces.has(waiterFill!.traceId)).toBe(false)
    } finally {
      await receiver.close()
    }
  })
})

describe('a request the sampler leaves out', () => {
  const gateways = useGateways()

  it('makes no span, for a caller\'s traceparent or none, yet sends the platform a traceparent of the fill\'s own (not sampled) and logs the caller\'s trace id', async () => {
    const receiver = await startOtlpReceiver()
    try {
      const config = testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_TRACES_SAMPLER: 'always_off' }, TEAMS_YAML)
      const gw = await listen(await gateways.build(config))
      const res = await fetch(`${gw.url}${REPORT}?advertiserId=101&dateFrom=2026-07-01&dateTo=2026-07-02`, { headers: { 'x-api-key': KEYS.all, 'x-request-id': 'unsampled-1', traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` } })
      expect(res.status).toBe(200)
      const sent = sandbox.requests.find((r) => r.path === REPORT)!
      // The fill's trace is the gateway's own, not sampled as the request that started it was not.
      expect(sent.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/)
      expect(sent.headers.traceparent).not.toContain(CALLER_TRACE)
      expect(sent.headers.traceparent).not.toContain(CALLER_SPAN)
      expect(gw.logs.records().find((r) => r.reqId === 'unsampled-1')).toMatchObject({ traceId: CALLER_TRACE })
      // A request without a traceparent is decided too (by its new trace's id, as the sampler
      // decides it): a trace of its own, not sampled, down to the platform call.
      const own = await fetch(`${gw.url}${REPORT}?advertiserId=101&dateFrom=2026-07-03&dateTo=2026-07-04`, { headers: { 'x-api-key': KEYS.all, 'x-request-id': 'unsampled-2' } })
      expect(own.status).toBe(200)
      const ownSent = sandbox.requests.find((r) => r.path === REPORT && r.query.includes('2026-07-03'))!
      expect(ownSent.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/)
      expect(gw.logs.records().find((r) => r.reqId === 'unsampled-2')?.traceId).toMatch(/^[0-9a-f]{32}$/)
      // Closing sends every span still held: none was made.
      await gw.close()
      expect(receiver.exports).toEqual([])
    } finally {
      await receiver.close()
    }
  })
})

describe('tracing off (no OTLP endpoint)', () => {
  const env = useSandboxGateway()

  it('sends the platform no traceparent, tracestate or baggage, whatever the caller sends', async () => {
    const headers = { 'x-api-key': KEYS.all, traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`, tracestate: 'caller=1', baggage: 'user=alice' }
    expect((await fetch(`${env.url}${REPORT}?advertiserId=101&dateFrom=2026-06-01&dateTo=2026-06-02`, { headers })).status).toBe(200)
    const proxied = await fetch(`${env.url}/api/v1/campaign/get`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{"userId":101}' })
    expect(proxied.status).toBe(200)
    const sent = env.callerRequests()
    expect(sent.map((r) => r.path).sort()).toEqual(['/api/v1/campaign/get', REPORT])
    for (const r of sent) {
      expect(r.headers.traceparent).toBeUndefined()
      expect(r.headers.tracestate).toBeUndefined()
      expect(r.headers.baggage).toBeUndefined()
    }
    expect(env.gw.logs.records().filter((r) => r.msg === 'request').every((r) => !('traceId' in r))).toBe(true)
  })
})

describe('a login password shorter than 20 characters, which requests are not searched for', () => {
  const short = useSandbox({ password: 'Summer2026' })
  const gateways = useGateways()

  it('reaches no span: a request holding it is sent on, and its target is [REDACTED] whole in its span as in its log line', async () => {
    const receiver = await startOtlpReceiver()
    try {
      const config = testConfig({ PLATFORM_BASE_URL: short.url, ...sandboxLoginEnv(short), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, TEAMS_YAML)
      const gw = await listen(await gateways.build(config))
      const res = await fetch(`${gw.url}/api/v1/campaign/Summer2026promo/get`, { headers: { 'x-api-key': KEYS.all, 'x-request-id': 'short-password-1' } })
      // Sent on, not refused: the sandbox's answer to a campaign id it does not know.
      expect(res.status).not.toBe(400)
      expect(short.requests.some((r) => r.path === '/api/v1/campaign/Summer2026promo/get')).toBe(true)
      // Closing sends every span still held.
      await gw.close()
      const server = receiver.spans().find((s) => s.kind === SERVER && s.attributes['gateway.request_id'] === 'short-password-1')
      expect(server?.attributes['url.path']).toBe('[REDACTED]')
      const exported = receiver.exports.map((e) => e.body.toString('utf8')).join('\n')
      expect(exported).not.toContain('Summer2026')
      expect(gw.logs.text()).not.toContain('Summer2026')
    } finally {
      await receiver.close()
    }
  })
})

