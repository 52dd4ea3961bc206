import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { KEYS, TEAMS_YAML } from '../helpers/build-gateway.js'
import { startSandboxGateway, type SandboxGateway } from '../helpers/sandbox-gateway.js'
import type { GarbledBody } from '../../src/sandbox/types.js'

// Only a real report is cached. A 200 that is an HTML maintenance
// page, HTML labelled as JSON, JSON cut short or empty is passed to its caller as a 502
// GW_UPSTREAM (or a stale copy), never stored, logged with what it is, and counted.

const PATH = '/api/v1/report/campaigns/get'
const YAML = `${TEAMS_YAML}
cache:
  ttl: { recent: 1s, settled: 1s }
  # Team all's no-cache reaches the platform whatever the copy's age.
  refreshMinAge: 0
`

describe('a platform 200 that is not a JSON report', () => {
  let s: SandboxGateway
  let day = 0
  beforeAll(async () => {
    s = await startSandboxGateway({ yaml: YAML })
  })
  afterEach(() => s.sandbox.setFailure({ kind: 'none' }))
  afterAll(async () => {
    await s.close()
  })

  /** A report of its own for each read: no test sees another's entry. */
  const freshQuery = () => `advertiserId=101&byDate=1&dateFrom=2026-01-01&dateTo=2026-01-${String(++day).padStart(2, '0')}`
  const get = async (query: string) => {
    const res = await request(`${s.url}${PATH}?${query}`, { headers: { 'x-api-key': KEYS.all } })
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
  }
  const metric = async (line: string): Promise<number> => {
    const text = (await s.gw.admin.inject({ method: 'GET', url: '/metrics' })).body
    const found = text.split('\n').find((l) => l.startsWith(`${line} `))
    return found ? Number(found.slice(line.length + 1)) : 0
  }

  const cases: { body: GarbledBody; gzip: boolean; kind: string }[] = [
    { body: 'html', gzip: false, kind: 'html' },
    { body: 'html-as-json', gzip: false, kind: 'html' },
    { body: 'truncated-json', gzip: false, kind: 'truncated-json' },
    { body: 'truncated-json', gzip: true, kind: 'truncated-json' },
    { body: 'empty', gzip: false, kind: 'empty' },
  ]

  it.each(cases)('answers $body (gzip: $gzip) with 502 GW_UPSTREAM, stores nothing, logs and counts it as $kind', async ({ body, gzip, kind }) => {
    const query = freshQuery()
    const before = await metric(`gateway_platform_unusable_answers_total{kind="${kind}"}`)
    s.sandbox.setFailure({ kind: 'garbled', body, gzip, times: 1 })
    const bad = await get(query)
    expect(bad.status).toBe(502)
    expect(JSON.parse(bad.body)).toMatchObject({ code: 'GW_UPSTREAM' })
    expect(bad.body).not.toContain('Be right back')
    expect(await metric(`gateway_platform_unusable_answers_total{kind="${kind}"}`)).toBe(before + 1)
    const lines = s.gw.logs.records().filter((r) => r.bodyKind === kind && /not a JSON report/.test(String(r.msg)))
    expect(lines.length).toBeGreaterThan(0)
    expect(s.gw.logs.text()).not.toContain('Be right back')
    expect(s.gw.logs.text()).not.toContain('impressions":1200')

    // Nothing was stored: the next read goes to the platform, which answers a report now.
    const good = await get(query)
    expect(good.status).toBe(200)
    expect(good.headers['x-cache']).toBe('MISS')
    expect(() => JSON.parse(good.body)).not.toThrow()
  })

  // JSON that holds no report, answered 200: Laravel's error body under a status some
  // middleware set to 200, or nothing.
  it.each([
    { label: 'Laravel\'s error', body: { message: 'Server Error' } },
    { label: 'Laravel\'s error with its debug fields', body: { message: 'Undefined index: data', exception: 'ErrorException', file: '/var/www/app/Http/Controllers/ReportController.php', line: 41, trace: [] } },
    { label: 'an empty object', body: {} },
    { label: 'null', body: null },
    // Its text, under its own content type (the sandbox sends an object as application/json).
    { label: 'a problem document (RFC 9457)', body: JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'maintenance' }), headers: { 'content-type': 'application/problem+json' } },
  ])('answers a 200 of $label with 502 GW_UPSTREAM, stores nothing, logs and counts it as no-report', async ({ body, headers }) => {
    const query = freshQuery()
    const before = await metric('gateway_platform_unusable_answers_total{kind="no-report"}')
    s.sandbox.setFailure({ kind: 'status', status: 200, body, times: 1, ...(headers ? { headers } : {}) })
    const bad = await get(query)
    expect(bad.status).toBe(502)
    expect(JSON.parse(bad.body)).toMatchObject({ code: 'GW_UPSTREAM' })
    expect(bad.body).not.toContain('ReportController')
    expect(await metric('gateway_platform_unusable_answers_total{kind="no-report"}')).toBe(before + 1)
    expect(s.gw.logs.records().some((r) => r.bodyKind === 'no-report' && /not a JSON report/.test(String(r.msg)))).toBe(true)

    const good = await get(query)
    expect(good.status).toBe(200)
    expect(good.headers['x-cache']).toBe('MISS')
    expect(JSON.parse(good.body)).toHaveProperty('data')
  })

  // The same answers marked not to be stored (a maintenance page or an error body its
  // server keeps out of every cache): still no report, and still the platform failing. Passed
  // on as they are, a read got the platform's error (with Laravel's debug fields) as a 200
  // report, and a job ended done with it as its result.
  it.each([
    { label: 'Laravel\'s error with its debug fields', body: { message: 'Undefined index: data', exception: 'ErrorException', file: '/var/www/app/Http/Controllers/ReportController.php', line: 41, trace: [] }, kind: 'no-report' },
    { label: 'an empty object', body: {}, kind: 'no-report' },
  ])('answers a 200 of $label marked no-store with 502 GW_UPSTREAM too, counted as $kind', async ({ body, kind }) => {
    const query = freshQuery()
    const before = await metric(`gateway_platform_unusable_answers_total{kind="${kind}"}`)
    s.sandbox.setFailure({ kind: 'status', status: 200, body, headers: { 'cache-control': 'no-store' }, times: 1 })
    const bad = await get(query)
    expect([bad.status, (JSON.parse(bad.body) as { code?: string }).code]).toEqual([502, 'GW_UPSTREAM'])
    expect(bad.body).not.toContain('ReportController')
    expect(await metric(`gateway_platform_unusable_answers_total{kind="${kind}"}`)).toBe(before + 1)
  })

  // Laravel's `message` beside report fields (an API resource's wrapper): a report, not its error body.
  it('stores and serves a 200 holding message beside the report\'s fields', async () => {
    const query = freshQuery()
    const report = { message: 'ok', data: [{ date: '2026-01-01', impressions: 10, clicks: 1 }] }
    s.sandbox.setFailure({ kind: 'status', status: 200, body: report, times: 1 })
    const first = await get(query)
    expect([first.status, first.headers['x-cache']]).toEqual([200, 'MISS'])
    expect(JSON.parse(first.body)).toEqual(report)
    const again = await get(query)
    expect([again.status, again.headers['x-cache']]).toEqual([200, 'HIT'])
    expect(JSON.parse(again.body)).toEqual(report)
  })

  it('serves the stale copy when a good one exists', async () => {
    const query = freshQuery()
    const first = await get(query)
    expect(first.headers['x-cache']).toBe('MISS')
    // A forced refresh (refreshMinAge 0) is a fill: its garbled answer is not stored, the copy is served.
    s.sandbox.setFailure({ kind: 'garbled', body: 'html' })
    const refreshed = await request(`${s.url}${PATH}?${query}`, { headers: { 'x-api-key': KEYS.all, 'cache-control': 'no-cache' } })
    expect(refreshed.statusCode).toBe(200)
    // A HIT while the copy is fresh (its 1 s, on the machine's clock), STALE after: its ttl's sign says which.
    const status = refreshed.headers['cache-status'] as string
    expect([refreshed.headers['x-cache'], status]).toEqual(status.endsWith('ttl=1') ? ['HIT', 'report-gateway; fwd=request; ttl=1'] : ['STALE', 'report-gateway; fwd=request; ttl=-1'])
    expect(await refreshed.body.text()).toBe(first.body)
  })
})
