import { describe, expect, it } from 'vitest'
import { KEYS, teamsYamlWith, testConfig, type TestGateway } from '../helpers/build-gateway.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'

// An operator paged at night reads the log to find what is wrong. A platform failure the
// gateway answers as documented (502, 503, 504 with a GW_* code, or a stale copy served)
// is one warn line with its code and no stack, and a flood of the same failure is summed
// up in one line per interval with a count: 1,400 error lines with stack traces in 8
// minutes of a chaos soak hid everything else. Errors stay for what is unexpected.

const sandbox = useSandbox()
const gateways = useGateways()

/** A week of its own for each n: no two reads coalesce or hit the cache. */
const week = (n: number) => {
  const day = (d: number) => `2026-0${1 + Math.floor(d / 28)}-${String(1 + (d % 28)).padStart(2, '0')}`
  return `/api/v1/report/campaigns/get?advertiserId=101&dateFrom=${day(n * 2)}&dateTo=${day(n * 2 + 1)}`
}

function read(gw: TestGateway, url: string) {
  return gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all } })
}

const records = (gw: TestGateway) => gw.logs.records()
const atOrAbove = (gw: TestGateway, level: number) => records(gw).filter((r) => (r.level as number) >= level && r.msg !== 'request')

describe('handled failures in the log', () => {
  it('logs a flood of platform failures answered 502 GW_UPSTREAM as one warn line without a stack, and sums up the rest', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }))
    sandbox.setFailure({ kind: 'status', status: 500 })
    for (let n = 0; n < 12; n++) {
      const res = await read(gw, week(n))
      expect([res.statusCode, res.json<{ code: string }>().code]).toEqual([502, 'GW_UPSTREAM'])
    }
    expect(atOrAbove(gw, 50)).toEqual([])
    const warned = atOrAbove(gw, 40)
    expect(warned).toHaveLength(1)
    expect(warned[0]).toMatchObject({ level: 40, code: 'GW_UPSTREAM', statusCode: 502 })
    expect(gw.logs.text()).not.toContain('"stack"')
    // The rest, summed up when the interval ends (here: when the gateway closes).
    await gw.close()
    const summary = atOrAbove(gw, 40).slice(1)
    expect(summary).toHaveLength(1)
    expect(summary[0]).toMatchObject({ level: 40, code: 'GW_UPSTREAM', count: 11 })
  })

  it('logs a copy served for a failing platform once, without a stack', async () => {
    const gw = await gateways.build(
      // Team all's no-cache reaches the platform whatever the copy's age.
      testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }, teamsYamlWith({ cache: { refreshMinAge: 0 } })),
    )
    // Asked with no-cache: every later read of it goes to the platform first.
    const url = `${week(20)}&byDate=1`
    expect((await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all, 'cache-control': 'no-cache' } })).statusCode).toBe(200)
    sandbox.setFailure({ kind: 'status', status: 503 })
    for (let i = 0; i < 5; i++) {
      const res = await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': KEYS.all, 'cache-control': 'no-cache' } })
      // The copy is still fresh: a hit, whatever became of the refresh.
      expect([res.statusCode, res.headers['x-cache']]).toEqual([200, 'HIT'])
    }
    expect(atOrAbove(gw, 50)).toEqual([])
    const warned = atOrAbove(gw, 40)
    expect(warned).toHaveLength(1)
    expect(warned[0]).toMatchObject({ level: 40, code: 'GW_UPSTREAM', msg: 'platform failed; serving a fresh copy' })
    expect(gw.logs.text()).not.toContain('"stack"')
  })

  it('names the GW_* code of every refusal on its request line, a flood\'s requests included, and none on an answer the platform wrote', async () => {
    const gw = await gateways.build(testConfig({ PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }))
    const lineOf = (reqId: string) => records(gw).find((r) => r.msg === 'request' && r.reqId === reqId)
    const asked = async (url: string, key: string, status: number) => {
      const res = await gw.proxy.inject({ method: 'GET', url, headers: { 'x-api-key': key } })
      expect(res.statusCode).toBe(status)
      return lineOf(res.headers['x-request-id'] as string)
    }
    // The gateway's own refusals: the warn line of a flood names only its first request.
    expect(await asked(week(30), 'rgw_not_a_key_of_any_team_00000000000000000', 401)).toMatchObject({ status: 401, team: null, code: 'GW_UNAUTHORIZED' })
    expect(await asked(week(30).replace('advertiserId=101', 'advertiserId=103'), KEYS.growth, 403)).toMatchObject({ status: 403, team: 'growth', code: 'GW_FORBIDDEN' })
    expect(await asked('/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-13-01&dateTo=2026-12-01', KEYS.growth, 400)).toMatchObject({ status: 400, team: 'growth', code: 'GW_BAD_QUERY' })
    sandbox.setFailure({ kind: 'status', status: 500 })
    for (let n = 40; n < 44; n++) expect(await asked(week(n), KEYS.all, 502)).toMatchObject({ status: 502, team: 'all', code: 'GW_UPSTREAM' })
    sandbox.setFailure({ kind: 'none' })
    // An answer of the platform's, passed on, and a success carry none.
    const ok = await asked(week(50), KEYS.all, 200)
    expect(ok).toBeDefined()
    expect(ok).not.toHaveProperty('code')
  })
})
