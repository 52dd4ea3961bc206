import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { TEST_GATEWAY_SECRET } from '../helpers/build-gateway.js'
import { useConfigMaps } from '../helpers/config-map.js'
import { useGateways, useRedis, useSandbox } from '../helpers/fixtures.js'
import { renameAndAsk, teamNamed } from '../helpers/renamed-team.js'

// The governor keeps by team name (accounts, own estimates, seat-time charged from the other
// replicas) only the teams configured now and the gateway's own, however many team names
// reloads ever brought: on a replica with its lease in Redis, each reload drops the entries
// of the team it removed (its one call ended before).

const sandbox = useSandbox()
const redis = useRedis()
const gateways = useGateways()
const configMap = useConfigMaps()

describe('the governor\'s entries by team', () => {
  it('stay as many across reloads that rename the one team configured', async () => {
    const dir = configMap(teamNamed('renamed-0'))
    const env = { CONFIG_FILE: dir.path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken(), REDIS_URL: redis.server.url, GATEWAY_SECRET: TEST_GATEWAY_SECRET }
    const gw = await gateways.build(loadConfig({ env }), { configSource: { env } })
    const seen: string[] = []
    for (let i = 1; i <= 5; i++) {
      await renameAndAsk(gw, dir, i)
      seen.push(JSON.stringify(gw.governors.teamEntries()))
    }
    expect(new Set(seen).size, seen.join('\n')).toBe(1)
  })
})
