import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { useConfigMaps } from '../helpers/config-map.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { renameAndAsk, teamNamed } from '../helpers/renamed-team.js'

// The report cache keeps one "filled by" record per team that filled a report here, shared
// by the entries it filled: only the teams configured now keep theirs, however many team
// names reloads ever brought.

const sandbox = useSandbox()
const gateways = useGateways()
const configMap = useConfigMaps()

describe('the report cache\'s fillers', () => {
  it('are kept for the teams configured now: a reload drops the removed teams\'', async () => {
    const dir = configMap(teamNamed('renamed-0'))
    const env = { CONFIG_FILE: dir.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }
    const gw = await gateways.build(loadConfig({ env }), { configSource: { env } })
    for (let i = 1; i <= 5; i++) {
      await renameAndAsk(gw, dir, i)
      expect(gw.reports.fillers).toBeLessThanOrEqual(1)
    }
  })
})
