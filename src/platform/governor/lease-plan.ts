/**
 * What one replica makes of every replica's lease record (docs/governor.md, "Across
 * replicas"): pure functions, the one place where the seats are shared across replicas.
 * The store (redis-lease-store.ts) only keeps the records and grants seats no other
 * replica holds; the shares, the targets, the lent seats and the learner are worked out
 * here, the same way on every replica, from the records the last renewal returned.
 */
import { nominalShares, owedSeats, type TeamLoad } from './shares.js'

/** A team on one replica, as its record carries it. */
export interface TeamRecord extends TeamLoad {
  lingering: boolean
}

/** One replica's record in the lease store. */
export interface ReplicaRecord {
  /** The replica run's id. */
  run: string
  /** Seats leased to it. */
  lease: number
  /** Its calls in flight. */
  inFlight: number
  /** Its calls in flight and waiting. */
  need: number
  /** Its calls answered per second, smoothed: the replica that sees most of the platform learns the limit. */
  answered: number
  /** Calls waited at the limit on it since its last renewal. */
  waited: boolean
  teams: TeamRecord[]
}

/** This replica's part of the shares, and what it knows of the others. */
export interface LeasePlan {
  /** Each of its teams' part of its nominal share, across replicas. */
  targets: Map<string, number>
  /** The sum of those: the seats it is due while others need theirs. */
  target: number
  /** Seats owed to the teams of other replicas that wait for nothing (lent only to short calls). */
  owedElsewhere: number
  /** Another replica needs more seats than it holds. */
  contended: boolean
  /** Calls in flight on the other replicas. */
  elsewhere: number
  /** Calls waited at the limit on another replica. */
  waitedElsewhere: boolean
  /** Whether this replica learns the limit. */
  learner: boolean
  /** The replica to tell of seats given back (the one that needs most), or null. */
  needsMost: string | null
}

/**
 * The plan of replica `mine` among `others`, with `shared` seats to share (the knee: the
 * seats past it are a probe's, owed to no team). Each team's nominal share is computed
 * over every replica's teams, and split between the replicas by their demand for it
 * (calls in flight and waiting); a team that only lingers, between the replicas it
 * lingers on.
 */
export function leasePlan(mine: ReplicaRecord, others: readonly ReplicaRecord[], shared: number): LeasePlan {
  const all = [mine, ...others]
  const teams = new Map<string, TeamLoad & { replicas: number; lingerers: number }>()
  for (const r of all) {
    for (const t of r.teams) {
      const g = teams.get(t.team) ?? { team: t.team, weight: 1, held: 0, waiting: 0, cap: null, peak: 0, replicas: 0, lingerers: 0 }
      g.weight = Math.max(g.weight, t.weight)
      g.held += t.held
      g.waiting += t.waiting
      g.peak += t.peak
      g.cap = t.cap === null ? g.cap : g.cap === null ? t.cap : Math.min(g.cap, t.cap)
      g.replicas += 1
      if (t.held + t.waiting === 0) g.lingerers += 1
      teams.set(t.team, g)
    }
  }
  const shares = nominalShares(shared, [...teams.values()])
  const partOf = (t: TeamRecord): number => {
    const g = teams.get(t.team) as TeamLoad & { lingerers: number }
    const share = shares.get(t.team) ?? 0
    const demand = g.held + g.waiting
    if (demand > 0) return (share * (t.held + t.waiting)) / demand
    return g.lingerers > 0 ? share / g.lingerers : 0
  }
  const targets = new Map(mine.teams.map((t) => [t.team, partOf(t)]))
  let target = 0
  for (const part of targets.values()) target += part
  let owedElsewhere = 0
  for (const r of others) owedElsewhere += owedSeats(new Map(r.teams.map((t) => [t.team, partOf(t)])), r.teams)
  let needsMost: string | null = null
  let gap = 0
  for (const r of others) {
    if (r.need - r.lease > gap) {
      gap = r.need - r.lease
      needsMost = r.run
    }
  }
  const learner = all.reduce((best, r) => (r.answered > best.answered || (r.answered === best.answered && r.run < best.run) ? r : best), mine).run === mine.run
  return {
    targets,
    target,
    owedElsewhere,
    contended: needsMost !== null,
    elsewhere: others.reduce((sum, r) => sum + r.inFlight, 0),
    waitedElsewhere: others.some((r) => r.waited),
    learner,
    needsMost,
  }
}

/** A record as the store keeps it: `<lease>|<in flight>|<need>|<answered>|<waited>|<teams>`, each team `<name>,<weight>,<cap>,<held>,<waiting>,<lingering>,<peak>` (cap 0: none). */
export function encodeRecord(r: Omit<ReplicaRecord, 'run'>): string {
  const teams = r.teams.map((t) => `${t.team},${t.weight},${t.cap ?? 0},${t.held},${t.waiting},${t.lingering ? 1 : 0},${t.peak}`).join(';')
  return `${r.lease}|${r.inFlight}|${r.need}|${r.answered.toFixed(2)}|${r.waited ? 1 : 0}|${teams}`
}

/** A stored record, or null when it is not one (a team name never holds `,;|`). */
export function decodeRecord(run: string, text: string): ReplicaRecord | null {
  const m = /^(\d+)\|(\d+)\|(\d+)\|([\d.]+)\|([01])\|(.*)$/.exec(text)
  if (m === null) return null
  const teams: TeamRecord[] = []
  for (const part of (m[6] as string).split(';')) {
    if (part === '') continue
    const f = part.split(',')
    if (f.length !== 7) return null
    const [team, weight, cap, held, waiting, lingering, peak] = f as [string, string, string, string, string, string, string]
    teams.push({ team, weight: Math.max(1, Number(weight)), cap: Number(cap) > 0 ? Number(cap) : null, held: Number(held), waiting: Number(waiting), lingering: lingering === '1', peak: Number(peak) })
  }
  return { run, lease: Number(m[1]), inFlight: Number(m[2]), need: Number(m[3]), answered: Number(m[4]), waited: m[5] === '1', teams }
}
