import { KEYS, SANDBOX_TEAMS_YAML, type SandboxGateway } from '../helpers/sandbox-gateway.js'
import { ADMIN_TOKEN, call, useAttackGateway } from './attack-gateway.js'

// The L1 room attacks' gateway and moves: four teams, each an even part of cache.l1MaxBytes
// (512 KiB of 2 MiB) once full, no Redis; a year by date and campaign is about 210 KB of L1.
// `writer` shares advertiser 101 with `growth`.

export const REPORT = '/api/v1/report/campaigns/get'

/** A gateway of the sandbox's teams with an L1 of 2 MiB (the test file's fixtures). */
export const useL1RoomGateway = (): SandboxGateway => useAttackGateway({ yaml: `${SANDBOX_TEAMS_YAML}cache:\n  l1MaxBytes: 2MiB\n` })

/** The nth copy of a flood: advertiser 101, a year by date and campaign, about 210 KB. */
export const floodCopy = (n: number): string => `${REPORT}?advertiserId=101&dateFrom=2025-12-01&dateTo=2026-11-30&byDate=1&byCampaign=1&bust=${n}`

/** The team of `key` (writer by default) asks twenty distinct copies of advertiser 101 of about 210 KB each: twice the whole L1, all of it within that team's own scope and rate; their statuses. */
export async function flood(sg: SandboxGateway, key: string = KEYS.writer): Promise<Set<number>> {
  const statuses = new Set<number>()
  for (let n = 0; n < 20; n++) statuses.add((await call(sg, 'GET', floodCopy(n), { key })).status)
  return statuses
}

/** growth's cache hits and platform calls so far (`/admin/usage`). */
export async function growthUsage(sg: SandboxGateway): Promise<{ cacheHits: number; platformCalls: number }> {
  const res = await sg.gw.admin.inject({ method: 'GET', url: '/admin/usage?team=growth', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  const rows = res.json<{ usage: { cacheHits: number; platformCalls: number }[] }>().usage
  return { cacheHits: rows.reduce((n, r) => n + r.cacheHits, 0), platformCalls: rows.reduce((n, r) => n + r.platformCalls, 0) }
}
