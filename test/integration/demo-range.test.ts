import { describe, expect, it } from 'vitest'
import { demoConfig } from '../../src/demo.js'
import { loadConfigFrom } from '../helpers/load-config.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'

// Demo mode (README's quick start: `npm start` with nothing configured) runs the bundled
// sandbox, whose reports span at most 366 days. Its range bound is the gateway's too: a
// longer report or job is the gateway's own 400 before any platform call, never the
// sandbox's 422 passed on as GW_PLATFORM_ANSWER.

const sandbox = useSandbox()
const gateways = useGateways()

const report = (from: string, to: string) => `/api/v1/report/campaigns/get?advertiserId=101&byDate=1&dateFrom=${from}&dateTo=${to}`

describe('demo mode\'s report range', () => {
  it('is the sandbox\'s: 367 days is the gateway\'s 400 with no platform call, 366 days is answered', async () => {
    const started = loadConfigFrom({})
    expect(started.demo).toBe(true)
    const { config, key } = demoConfig(started, sandbox)
    const gw = await gateways.build(config)
    const headers = { 'x-api-key': key }

    sandbox.clearRequests()
    const long = await gw.proxy.inject({ method: 'GET', url: report('2025-01-01', '2026-01-02'), headers })
    expect([long.statusCode, long.json().code, long.json().message]).toEqual([400, 'GW_BAD_QUERY', expect.stringContaining('exceeds the maximum of 366')])
    const job = await gw.proxy.inject({ method: 'GET', url: report('2025-01-01', '2026-01-02'), headers: { ...headers, prefer: 'respond-async' } })
    expect([job.statusCode, job.json().code]).toEqual([400, 'GW_BAD_QUERY'])
    expect(sandbox.countRequests((r) => r.path.startsWith('/api/v1/report/'))).toBe(0)

    const longest = await gw.proxy.inject({ method: 'GET', url: report('2025-01-01', '2026-01-01'), headers })
    expect(longest.statusCode).toBe(200)

    const setting = config.settings.find((s) => s.setting === 'cache.maxRangeDays')
    expect([setting?.value, setting?.source]).toEqual([366, 'demo'])
  })

  it('keeps a shorter configured bound', () => {
    const { config } = demoConfig(loadConfigFrom({ DEMO: '1', CONFIG_FILE: '/virtual/config.yaml' }, { '/virtual/config.yaml': 'cache:\n  maxRangeDays: 31\n' }), sandbox)
    expect(config.cache.maxRangeDays).toBe(31)
    expect(config.settings.find((s) => s.setting === 'cache.maxRangeDays')?.source).toBe('file')
  })
})
