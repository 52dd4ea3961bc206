import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { hashApiKey } from '../../src/access/api-keys.js'
import { useGateways, useSandbox } from '../helpers/fixtures.js'
import { fakeClock } from '../helpers/clock.js'

// A teams file written in place (truncated, then written: `cat >`, many editors) may be read
// half-written. A first part that validates alone (team growth, without team beta after it)
// revoked beta's keys on every replica until the rest came (black-box pass J, session 134): a
// change is taken once two polls in a row read it alike.

const GROWTH = 'rgw_halfwritten_growth_0000000000000000000000'
const BETA = 'rgw_halfwritten_beta_111111111111111111111111'
const REPORT = '/api/v1/report/campaigns/get?advertiserId=101&dateFrom=2026-01-01&dateTo=2026-01-02'
const growth = `  growth:\n    keys: ["${hashApiKey(GROWTH)}"]\n    advertisers: ["*"]\n`
const beta = `  beta:\n    keys: ["${hashApiKey(BETA)}"]\n    advertisers: ["*"]\n`

const sandbox = useSandbox()
const gateways = useGateways()
const dir = mkdtempSync(join(tmpdir(), 'rgw-teams-half-written-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('a teams file caught half-written', () => {
  it('revokes no key of the part not yet written: a change is taken once two polls read it alike', async () => {
    const path = join(dir, 'teams.yaml')
    writeFileSync(path, `teams:\n${growth}${beta}`)
    const env = { TEAMS_FILE: path, PLATFORM_BASE_URL: sandbox.url, PLATFORM_TOKEN: sandbox.issueToken() }
    const clock = fakeClock()
    const gw = await gateways.build(loadConfig({ env }), { configSource: { env }, clock })
    const status = async (key: string) => (await gw.proxy.inject({ method: 'GET', url: REPORT, headers: { 'x-api-key': key } })).statusCode
    const poll = gw.config.teamsReload.pollMs
    expect([await status(GROWTH), await status(BETA)]).toEqual([200, 200])

    // Caught half-written: growth alone, a file that validates. One poll reads it: beta still runs.
    writeFileSync(path, `teams:\n${growth}`)
    clock.advance(poll)
    expect(await status(BETA)).toBe(200)
    // The rest written before the next poll: the file is as it was, and nothing changed.
    writeFileSync(path, `teams:\n${growth}${beta}`)
    clock.advance(poll)
    clock.advance(poll)
    expect([await status(GROWTH), await status(BETA)]).toEqual([200, 200])

    // A change that holds is taken at the second poll that reads it.
    writeFileSync(path, `teams:\n${growth}`)
    clock.advance(poll)
    expect(await status(BETA)).toBe(200)
    clock.advance(poll)
    expect([await status(GROWTH), await status(BETA)]).toEqual([200, 401])
  })
})
