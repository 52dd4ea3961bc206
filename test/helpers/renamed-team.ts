import { expect } from 'vitest'
import { hashApiKey } from '../../src/access/api-keys.js'
import { KEYS, REPORT_PATH, type TestGateway } from './build-gateway.js'
import type { ConfigMapDir } from './config-map.js'

/** A config of one team named `name` (every key, every advertiser), reloaded when an admin asks. */
export const teamNamed = (name: string): string => `teamsReload: { poll: 1h }\nteams:\n  ${name}:\n    keys: ["${hashApiKey(KEYS.all)}"]\n    advertisers: ["*"]\n`

/** Reloads `dir` with its one team renamed `renamed-<i>`, then asks a report of day `i` (1 to 9) under that name: a MISS, one platform call on the new team's seats. */
export async function renameAndAsk(gw: TestGateway, dir: ConfigMapDir, i: number): Promise<void> {
  dir.update(teamNamed(`renamed-${i}`))
  expect(gw.reloader.reload('admin').result).toBe('applied')
  const res = await gw.proxy.inject({ method: 'GET', url: `${REPORT_PATH}?advertiserId=101&dateFrom=2026-01-0${i}&dateTo=2026-01-0${i}`, headers: { 'x-api-key': KEYS.all } })
  expect(res.statusCode).toBe(200)
  expect(res.headers['x-cache']).toBe('MISS')
}
