import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KEYS, REPORT_PATH } from '../helpers/build-gateway.js'
import { useConfigMaps } from '../helpers/config-map.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'

// The report cache keeps one "filled by" record per team that filled a report here, shared
// by the entries it filled: only the teams configured now keep theirs, however many team
// names reloads ever brought.

const sandbox = useSandbox()
const gateways = useGateways()
const configMap = useConfigMaps()

const teamNamed = (name: string) => `teamsReload: { poll: 1h }\nteams:\n  ${name}:\n    keys: ["${hashApiKey(KEYS.all)}"]\n    advertisers: ["*"]\n`

describe('the report cache\'s fillers', () => {
  it('are kept for the teams configured now: a reload drops the removed teams\'', async () => {
    const dir = configMap(teamNamed('renamed-0'))
    const env = { CONFIG_FILE: dir.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }
    const gw = await gateways.build(loadConfig({ env }), { configSource: { env } })
    for (let i = 1; i <= 5; i++) {
      dir.update(teamNamed(`renamed-${i}`))
      expect(gw.reloader.reload('admin').result).toBe('applied')
      const res = await gw.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?advertiserId=101&dateFrom=2026-01-0${i}&dateTo=2026-01-0${i}`, headers: { 'x-api-key': KEYS.all } })
      expect(res.statusCode).toBe(200)
      expect(res.headers['x-cache']).toBe('MISS')
      expect(gw.reports.fillers).toBeLessThanOrEqual(1)
    }
  })
})
