import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { KEYS, REPORT_PATH, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { testTimeLeft, waitFor } from '../helpers/wait.js'

// One cached report, found by its URL in any spelling the gateway takes for the same
// report (contract, GET and DELETE /admin/cache/entry): looked at without changing it,
// and dropped on every replica, finally (a copy put back into Redis is never served).

const ADMIN_TOKEN = 'cache-entry-admin-token-0123456789'
const CANONICAL = `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2026-02-01&dateTo=2026-02-07`
const SPELLINGS = [
  `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2026-02-01&dateTo=2026-02-07`,
  `${REPORT_PATH}/?dateTo=2026-02-07&byDate=true&advertiserId=0101&dateFrom=2026-02-01&byCampaign=0`,
  `http://gateway.example:8080${REPORT_PATH.replace('get', 'g%65t')}?dateFrom=2026-02-01&advertiserId=101&dateTo=2026-02-07&byDate=1`,
]
const OTHER = `${REPORT_PATH}?advertiserId=102&dateFrom=2026-02-01&dateTo=2026-02-07`

const sandbox = useSandbox()
const redis = useRedis()
const gateways = useGateways()

const replica = (withRedis = true) =>
  gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), ADMIN_TOKEN, ...(withRedis ? { REDIS_URL: redis.server.url } : {}) }))

const read = async (gw: TestGateway, url = CANONICAL) => {
  const res = await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all } })
  expect(res.statusCode).toBe(200)
  return res
}
const admin = (gw: TestGateway, method: 'GET' | 'DELETE', url: string, extra = '') =>
  gw.admin.inject({ method, url: `/admin/cache/entry?url=${encodeURIComponent(url)}${extra}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
const idOf = async (gw: TestGateway) => (await gw.admin.inject({ method: 'GET', url: '/admin/cluster', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json().replicas[0].id as string

type Entry = { credential: string; key: string; tiers: { tier: string; etag: string }[]; state: string; ageSeconds: number; ttlSeconds: number; etag: string; gzipBytes: number; bodyBytes: number; advertiserIds: number[]; filledBy: { team: string; replica: string } | null }

describe('GET /admin/cache/entry', () => {
  it('finds the one entry of a report by any of its spellings: key, tiers, age, freshness, size, ETag, who filled it', async () => {
    const a = await replica()
    const b = await replica()
    const filled = await read(a)
    expect(filled.headers['x-cache']).toBe('MISS')
    expect((await read(b)).headers['x-cache']).toBe('HIT')
    const seen: unknown[] = []
    for (const url of SPELLINGS) {
      const res = await admin(b, 'GET', url)
      expect(res.statusCode, url).toBe(200)
      seen.push(res.json())
    }
    expect(seen[1]).toEqual(seen[0])
    expect(seen[2]).toEqual(seen[0])
    const body = seen[0] as { report: string; redis: string; entries: Entry[] }
    expect(body.report).toBe(CANONICAL)
    expect(body.redis).toBe('ok')
    expect(body.entries).toHaveLength(1)
    const [entry] = body.entries as [Entry]
    expect(entry).toMatchObject({ credential: 'default', state: 'fresh', etag: filled.headers.etag, advertiserIds: [101], filledBy: { team: 'all', replica: await idOf(a) } })
    expect(entry.key).toMatch(/^rgw:report:v\d+:[\w-]{43}$/)
    expect(entry.tiers.map((t) => t.tier)).toEqual(['l1', 'l2'])
    expect(entry.bodyBytes).toBe(filled.rawPayload.length)
    expect(entry.gzipBytes).toBeGreaterThan(0)
    expect(entry.ageSeconds).toBeLessThan(60)
    expect(entry.ttlSeconds).toBeGreaterThan(0)
    // Reading it changed nothing: a replica that never served it still has no copy in memory.
    const c = await replica()
    expect(((await admin(c, 'GET', CANONICAL)).json() as { entries: Entry[] }).entries[0]!.tiers.map((t) => t.tier)).toEqual(['l2'])
    expect(((await admin(c, 'GET', CANONICAL)).json() as { entries: Entry[] }).entries[0]!.tiers.map((t) => t.tier)).toEqual(['l2'])
  })

  it('answers 404 for a report not cached, and 400 naming what is wrong for a URL that is no report read', async () => {
    const gw = await replica(false)
    const none = await admin(gw, 'GET', OTHER)
    expect(none.statusCode).toBe(404)
    expect(none.json().message).toBe('no copy of the report this URL asks is cached, under any credential')
    const cases: [string, RegExp][] = [
      ['/api/v1/campaign/get', /^url: not a report read/],
      // checkTarget's 404 of an escaped prefix (its words the proxy listener's) is the look-up's 400.
      ['/%61pi/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-02-01&dateTo=2026-02-07', /^url: not a report read \(GET \/api\/v1\/report\/…\) the gateway serves$/],
      [`${REPORT_PATH}?advertiserId=101&dateFrom=2026-02-30&dateTo=2026-03-01`, /^url: dateFrom: not a calendar date$/],
      [`${REPORT_PATH}?dateFrom=2026-02-01&dateTo=2026-02-07`, /^url: advertiserId: required$/],
    ]
    for (const [url, message] of cases) {
      const res = await admin(gw, 'GET', url)
      expect(res.statusCode, url).toBe(400)
      expect(res.json(), url).toMatchObject({ code: 'GW_BAD_REQUEST', message: expect.stringMatching(message) })
    }
    expect((await gw.admin.inject({ method: 'GET', url: '/admin/cache/entry', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json().message).toBe('url: required')
  })

  // The operations page quoted the refusal with the value it read, which the answer leaves out
  // (a viewer's guess at a secret would be answered by its [REDACTED]): an operator grepping for it found nothing.
  it("the operations page quotes the refusal of a URL that is no report read as the answer writes it", async () => {
    const gw = await replica(false)
    const res = await admin(gw, 'GET', `${REPORT_PATH}?advertiserId=101&dateFrom=2026-02-30&dateTo=2026-03-01`)
    const page = await readFile(new URL('../../docs/operations/report-cache.md', import.meta.url), 'utf8')
    expect(page.replace(/\s+/g, ' ')).toContain(`(\`${res.json().message as string}\`)`)
  })
})

describe('DELETE /admin/cache/entry', () => {
  it('drops the one report on every replica, finally, and leaves the others; a dry run drops nothing', async () => {
    const a = await replica()
    const b = await replica()
    await read(a)
    await read(a, OTHER)
    expect((await read(b)).headers['x-cache']).toBe('HIT')
    const key = ((await admin(a, 'GET', CANONICAL)).json() as { entries: Entry[] }).entries[0]!.key
    const stored = await redis.client.getBuffer(key)
    expect((await admin(a, 'DELETE', SPELLINGS[1]!, '&dryRun=1')).json()).toEqual({ purged: 'report', report: CANONICAL, dryRun: true, wouldDrop: 1 })
    expect((await read(b)).headers['x-cache']).toBe('HIT')

    expect((await admin(a, 'DELETE', SPELLINGS[2]!)).json()).toEqual({ purged: 'report', report: CANONICAL, dryRun: false, dropped: 1 })
    await waitFor('the purge to reach the other replica', async () => (await b.reports.inspect(key)).l1 === null, testTimeLeft(), 20)
    expect((await read(b, OTHER)).headers['x-cache']).toBe('HIT')
    // Its old copy put back into Redis (someone who may write there) is never served again.
    await redis.client.set(key, stored!)
    const late = await replica()
    for (const gw of [b, late]) expect((await admin(gw, 'GET', CANONICAL)).statusCode).toBe(404)
    expect((await read(late)).headers['x-cache']).toBe('MISS')
    expect(a.logs.records().filter((r) => r.action === 'purge').map((r) => [r.outcome, r.scope, r.report, r.actor])).toEqual([
      ['dry-run', 'report', CANONICAL, 'admin'],
      [undefined, 'report', CANONICAL, 'admin'],
    ])
  })

  it('without Redis drops this replica\'s copy', async () => {
    const gw = await replica(false)
    await read(gw)
    expect((await admin(gw, 'DELETE', CANONICAL)).json()).toMatchObject({ dropped: 1 })
    expect((await read(gw)).headers['x-cache']).toBe('MISS')
  })
})
