// A cluster as GET /admin/cluster answers it, built from the gateway's own types: three
// replicas over the last 25 minutes, one of which crashed (no clean stop) and was
// replaced by a replica that started after it. The console's browser tests answer the
// page's /admin/cluster with it, so that what the page shows is known to the minute.
import { BUCKET_MS, emptyHistory, type HistoryView } from '../../src/observe/history.js'
import type { Gone, ReplicaState } from '../../src/observe/replicas.js'

export type FixtureReplica = ReplicaState & { self: boolean; gone: Gone | null }
export interface FixtureCluster {
  at: string
  redis: 'ok'
  complete: true
  note: null
  replicas: FixtureReplica[]
}

const MINUTE = 60_000

export interface ClusterFixtureOptions {
  /** The cluster's "now" (epoch ms, a whole bucket). */
  now: number
  /** How long the oldest replica has run (the data's age), in minutes. */
  ageMinutes: number
  /** When the crashed replica last announced itself, minutes before `now`. */
  crashedMinutesAgo: number
  /** When its replacement started, minutes before `now` (null: no replacement). */
  replacedMinutesAgo: number | null
  /** The latency floor of the live replicas and of the crashed one (null: none learned); 41.2 ms unless said. */
  floorMs?: { live: number | null; crashed: number | null }
}

/** A replica's hour with data from `from` to `to` (epoch ms), small whole counts, a steady limit and floor (`floorMs`, null: none). */
function hour(now: number, from: number, to: number, seed: number, floorMs: number | null): HistoryView {
  const h = emptyHistory(now)
  const limit: (number | null)[] = h.requests.map(() => null)
  const floor: (number | null)[] = h.requests.map(() => null)
  const inFlight: (number | null)[] = h.requests.map(() => null)
  const waiting: (number | null)[] = h.requests.map(() => null)
  const tooMany: (number | null)[] = h.requests.map(() => null)
  const errors: (number | null)[] = h.requests.map(() => null)
  for (let i = 0; i < h.requests.length; i++) {
    const at = h.start + i * BUCKET_MS
    if (at < from || at > to) continue
    const wave = (i * 7 + seed * 3) % 5
    h.requests[i] = 30 + wave * 4
    h.statuses['2xx'][i] = 28 + wave * 4
    h.statuses['3xx'][i] = 0
    h.statuses['4xx'][i] = wave % 3
    h.statuses['5xx'][i] = wave === 4 ? 1 : 0
    h.reportReads[i] = 20 + wave
    h.hits[i] = 15 + (wave % 4)
    h.platformCalls[i] = 1 + (wave % 3)
    h.latencyP50Ms[i] = 110 + wave * 6
    h.latencyP99Ms[i] = 380 + wave * 20
    inFlight[i] = wave % 2
    waiting[i] = wave === 4 ? 1 : 0
    limit[i] = 4
    floor[i] = floorMs
    tooMany[i] = wave === 3 ? 1 : 0
    errors[i] = wave === 4 ? 1 : 0
  }
  h.credentials = [{ credential: 'default', inFlight, waiting, limit, latencyFloorMs: floor }]
  h.teams = [{ team: 'growth', tooManyRequests: tooMany, errors }]
  return h
}

function replica(id: string, now: number, startedAt: number, lastSeen: number, self: boolean, gone: Gone | null, seed: number, floorMs: number | null): FixtureReplica {
  return {
    id,
    self,
    version: '0.1.0',
    commit: '70854ba3c1d2e4f5a6b7c8d9e0f1a2b3c4d5e6f7',
    node: 'v24.12.0',
    startedAt: new Date(startedAt).toISOString(),
    uptimeSeconds: Math.round((lastSeen - startedAt) / 1000),
    // A replica that vanished is listed with its last announcement's phase.
    phase: 'serving',
    ready: gone === null,
    logLevel: 'info',
    // A replica that vanished is listed with its last announcement's calls: it crashed holding some.
    inFlight: gone ? 3 : 1,
    waiting: gone ? 2 : 0,
    degraded: [],
    at: new Date(lastSeen).toISOString(),
    gone,
    history: hour(now, startedAt, lastSeen, seed, floorMs),
  }
}

export const FIXTURE_IDS = { self: 'report-gateway-7d9f-x2k4-1a2b3c', crashed: 'report-gateway-7d9f-p8q1-4d5e6f', replacement: 'report-gateway-7d9f-m3n7-7a8b9c' } as const

/** The cluster at `now`: this replica since `ageMinutes`, a replica that crashed, and (unless null) its replacement. */
export function clusterFixture(o: ClusterFixtureOptions): FixtureCluster {
  const { now } = o
  const started = now - o.ageMinutes * MINUTE
  const crashed = now - o.crashedMinutesAgo * MINUTE
  const floors = o.floorMs ?? { live: 41.2, crashed: 41.2 }
  const replicas = [replica(FIXTURE_IDS.self, now, started, now, true, null, 0, floors.live)]
  if (o.replacedMinutesAgo !== null) replicas.push(replica(FIXTURE_IDS.replacement, now, now - o.replacedMinutesAgo * MINUTE, now, false, null, 2, floors.live))
  replicas.push(replica(FIXTURE_IDS.crashed, now, started, crashed, false, { how: 'vanished', lastSeen: new Date(crashed).toISOString() }, 1, floors.crashed))
  return { at: new Date(now).toISOString(), redis: 'ok', complete: true, note: null, replicas }
}
