import { afterEach, describe, expect, it } from 'vitest'
import { KEYS, listen, REPORT_PATH, TEAMS_YAML, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways } from '../helpers/fixtures.js'
import { proxyGet } from '../helpers/gateway-calls.js'
import { heldPlatform } from '../helpers/held-platform.js'
import { waitFor } from '../helpers/wait.js'

// A purge is final for the reads that come after it: a read asked after a purge that
// reaches its report does not join the fill asked before the purge (the platform may have
// read that fill's figures before it); it waits for that fill to end and asks the
// platform anew. The reads that joined before the purge get the fill's answer, as its own
// caller does.

const ADMIN_TOKEN = 'purge-joined-admin-token-0123456789abcd'
const REPORT = `${REPORT_PATH}?advertiserId=101&byDate=1&dateFrom=2025-04-01&dateTo=2025-04-07`
const OTHER = `${REPORT_PATH}?advertiserId=102&byDate=1&dateFrom=2025-04-01&dateTo=2025-04-07`

describe('a read after a purge and the fill under way before it', () => {
  const gateways = useGateways()
  const closing: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const close of closing.splice(0)) await close()
  })
  const impressions = (res: { body: string }) => (JSON.parse(res.body) as { data: { impressions: number }[] }).data[0]?.impressions
  const setUp = async () => {
    const platform = await heldPlatform()
    closing.push(platform.close)
    const gw: TestGateway = await gateways.build(testConfig({ PLATFORM_BASE_URL: platform.url, PLATFORM_TOKEN: 'held-platform-token', ADMIN_TOKEN }, TEAMS_YAML))
    /** `read` started while the platform holds its answer, then a purge of `advertiserId` once its fill asked: the read, under way. */
    const fillThenPurge = async <T>(advertiserId: number, read: () => Promise<T>): Promise<{ first: Promise<T> }> => {
      platform.hold()
      const first = read()
      await waitFor('the fill to ask the platform', () => platform.waiting() === 1)
      const purged = await gw.admin.inject({ method: 'DELETE', url: `/admin/cache?advertiserId=${advertiserId}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect(purged.statusCode).toBe(200)
      return { first }
    }
    return { platform, gw, fillThenPurge }
  }

  it('is answered from a call of its own, not from the fill asked before the purge', async () => {
    const { platform, gw, fillThenPurge } = await setUp()
    const { first } = await fillThenPurge(101, () => proxyGet(gw, REPORT))
    const after = proxyGet(gw, REPORT)
    platform.release()
    expect(impressions(await first)).toBe(1)
    const own = await after
    expect(own.statusCode).toBe(200)
    expect(own.headers['x-cache']).toBe('MISS')
    expect(impressions(own)).toBe(2)
    expect(impressions(await proxyGet(gw, REPORT))).toBe(2)
  })

  // Over a socket, a read is decided before the router, where a read finding a cold fill
  // under way joins it: not one a purge overtook.
  it('over a socket too', async () => {
    const { platform, gw, fillThenPurge } = await setUp()
    const { url } = await listen(gw)
    const read = async () => {
      const res = await fetch(`${url}${REPORT}`, { headers: { 'x-api-key': KEYS.all } })
      return { statusCode: res.status, cache: res.headers.get('x-cache'), body: await res.text() }
    }
    // Heard after the gateway's own listener: by then a read the entrance joins to a fill has joined it.
    let arrived = 0
    gw.proxy.server.on('request', () => (arrived += 1))
    const { first } = await fillThenPurge(101, read)
    const after = read()
    await waitFor('the read after the purge to arrive', () => arrived === 2)
    platform.release()
    expect(impressions(await first)).toBe(1)
    const own = await after
    expect([own.statusCode, own.cache, impressions(own)]).toEqual([200, 'MISS', 2])
  })

  it('a purge of another advertiser leaves the join as it was', async () => {
    const { platform, gw, fillThenPurge } = await setUp()
    const { first } = await fillThenPurge(102, () => proxyGet(gw, REPORT))
    const after = proxyGet(gw, REPORT)
    platform.release()
    expect(impressions(await first)).toBe(1)
    expect(impressions(await after)).toBe(1)
    expect(impressions(await proxyGet(gw, OTHER))).toBe(2)
  })
})
