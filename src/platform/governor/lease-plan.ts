// Every replica's lease records as each replica reads them, alike: the one place seats are shared across replicas
// (docs/governor.md, "Across replicas"). Pure.
import { fairShares, owedSeats, type TeamLoad } from './shares.js'

/** docs/governor.md, "Constants". */
const SEAT_HEADROOM = 0.25
export const LEARNER_MARGIN = 1.5

/** The seats that fit a demand of `need` calls: room to grow past it, SEAT_HEADROOM more and one seat at least, within the limit. */
export function fitting(need: number, limit: number): number {
  return need === 0 ? 0 : Math.min(limit, Math.max(need + 1, Math.ceil(need * (1 + SEAT_HEADROOM))))
}

/** The seats a replica holds at most while another waits, its due being `due` whole seats: its calls in flight and waiting within its due, or its calls in flight if more. */
export const heldWhileContended = (inFlight: number, need: number, due: number): number => Math.max(inFlight, Math.min(need, due))

/** A team on one replica, as its record carries it. */
export interface TeamRecord extends TeamLoad {
  lingering: boolean
  seatMs?: number // the seat-time its calls on that replica held: it only grows (none from an older replica)
}

/** A team on this replica (its record's, with the seat-time its calls here held, those in flight included). */
export type LocalTeam = TeamRecord & { seatMs: number }

/** What this replica's calls of a credential hold and wait for: `limit`, the limit in force (the teams' shares are of it); `heldBack`, seats free here that the dispatch holds back from the calls waiting (owed: 2.3; none: 0). */
export interface ReplicaDemand { limit: number; inFlight: number; waiting: number; heldBack?: number; teams: LocalTeam[] }

/** The seats a replica's calls want: in flight, waiting, and the free seats held back from those waiting (they wait past them). */
export const needOf = (d: ReplicaDemand): number => d.inFlight + d.waiting + (d.heldBack ?? 0)

/** The teams' shares as this replica sees them: each local team's target here, the seats of its lease owed to teams on other replicas, each team's share across every replica, what it holds on the others and the seat-time (ms) its calls held there since this one first saw them. */
export interface LeaseShares { targets: ReadonlyMap<string, number>; lent: number; shares: ReadonlyMap<string, number>; heldElsewhere: ReadonlyMap<string, number>; charged: ReadonlyMap<string, number> }

/** One replica's record in the lease store: `need`, its calls in flight and waiting; `answered`, its answers a second, smoothed (the learner's measure); `waited`, calls waited at the limit since its last renewal; `behind`, the seat-seconds it held short of its due while another replica waited (none: 0); `calls`, its calls of late (answer-timeline.ts), answered only to the learner. */
export interface ReplicaRecord {
  run: string
  lease: number
  inFlight: number
  need: number
  answered: number
  waited: boolean
  behind?: number
  teams: TeamRecord[]
  calls?: string
}

/** This replica's part of the shares, and what it knows of the others (the fields: leasePlan's answer). */
export type LeasePlan = ReturnType<typeof leasePlan>

/** The plan of replica `mine` among `others` over the `limit` in force: targets and dues ("Across replicas", first point). */
export function leasePlan(mine: ReplicaRecord, others: readonly ReplicaRecord[], limit: number, learnerBefore: string | null = null, starting = false) {
  const all = [mine, ...others]
  const teams = new Map<string, TeamLoad & { lingerers: number }>()
  for (const r of all) {
    for (const t of r.teams) {
      const g = teams.get(t.team) ?? { team: t.team, weight: 1, held: 0, waiting: 0, cap: null, peak: 0, lingerers: 0 }
      g.weight = Math.max(g.weight, t.weight)
      ;[g.held, g.waiting, g.peak] = [g.held + t.held, g.waiting + t.waiting, g.peak + t.peak]
      g.cap = t.cap === null ? g.cap : g.cap === null ? t.cap : Math.min(g.cap, t.cap)
      if (t.held + t.waiting === 0) g.lingerers += 1
      teams.set(t.team, g)
    }
  }
  const shares = fairShares(limit, [...teams.values()])
  const partOf = (t: TeamRecord): number => {
    const g = teams.get(t.team) as TeamLoad & { lingerers: number }
    const share = shares.get(t.team) ?? 0
    const demand = g.held + g.waiting
    return demand > 0 ? (share * (t.held + t.waiting)) / demand : share / g.lingerers
  }
  const targets = new Map(mine.teams.map((t) => [t.team, partOf(t)]))
  // A replica is due its parts (a waiting team's within its calls, and those lent to it) up to what its calls want, and the seats
  // past the parts water-filled by its need past them, up to its calls: the seats its calls do not want go to the replicas that want more.
  const wants = (r: ReplicaRecord) => r.teams.reduce((sum, t) => sum + t.held + t.waiting, 0)
  const placed = placedParts(all, teams, partOf, limit)
  const parts = (r: ReplicaRecord) => placed.get(r) as number
  const base = (r: ReplicaRecord) => Math.min(wants(r), parts(r))
  const past = all.filter((r) => r.need > parts(r)).map((r) => ({ team: r.run, weight: r.need - parts(r), held: wants(r) - base(r), waiting: 0, cap: null, peak: 0 }))
  const extra = fairShares(all.reduce((seats, r) => seats - base(r), limit), past)
  const dues = new Map(all.map((r) => [r, base(r) + (extra.get(r.run) ?? 0)]))
  const dueOf = (r: ReplicaRecord) => dues.get(r) as number
  const shortOf = (r: ReplicaRecord) => Math.min(r.need, Math.floor(dueOf(r) + 1e-9)) - Math.max(r.lease, r.inFlight)
  const short = others.filter((r) => shortOf(r) > 0).sort((a, b) => shortOf(b) - shortOf(a)).map((r) => r.run)
  const shortElsewhere = others.reduce((sum, r) => sum + Math.max(0, shortOf(r)), 0)
  const over = others.filter((r) => r.lease > heldWhileContended(r.inFlight, r.need, Math.ceil(dueOf(r) - 1e-9))).map((r) => r.run)
  const owedElsewhere = others.reduce((sum, r) => sum + owedSeats(new Map(r.teams.map((t) => [t.team, partOf(t)])), r.teams), 0)
  const heldElsewhere = new Map<string, number>()
  // wantedElsewhere: each team's calls held and waiting on each other replica where it has some (its ceiling's parts, ceilingPart).
  const wantedElsewhere = new Map<string, { run: string; calls: number }[]>()
  for (const r of others) {
    for (const t of r.teams) {
      heldElsewhere.set(t.team, (heldElsewhere.get(t.team) ?? 0) + t.held)
      if (t.held + t.waiting > 0) wantedElsewhere.set(t.team, [...(wantedElsewhere.get(t.team) ?? []), { run: r.run, calls: t.held + t.waiting }])
    }
  }
  // Seats given back go to the replica that lacks most; among those that lack alike with less than a seat due (a turn
  // at the seat their due rounds to is all they get), to the one furthest behind its due.
  const behind = (r: ReplicaRecord) => r.behind ?? 0
  const needsMost = others.filter((r) => r.need > r.lease).reduce<ReplicaRecord | null>((most, r) => (most === null || r.need - r.lease > most.need - most.lease || (r.need - r.lease === most.need - most.lease && dueOf(r) < 1 && behind(r) > behind(most)) ? r : most), null)?.run ?? null
  // The writer of the shared limit goes on learning while its record is away (the store drops one with nothing in flight or needed).
  const most = all.reduce((best, r) => (r.answered > best.answered || (r.answered === best.answered && r.run < best.run) ? r : best), mine)
  const before = all.find((r) => r.run === learnerBefore)
  // In its start the learner keeps learning: what the start learned (the levels' answers a second, a refusal) is its own.
  const learnerRun = before === undefined ? (learnerBefore ?? most.run) : starting || before.answered * LEARNER_MARGIN >= most.answered ? before.run : most.run
  return {
    // owedElsewhere: seats owed to the other replicas' teams that wait for nothing (lent only to short calls).
    targets, target: mine.teams.reduce((sum, t) => sum + partOf(t), 0), due: dueOf(mine), owedElsewhere, heldElsewhere, wantedElsewhere, shares,
    // shortElsewhere: what the replicas short of their due lack (that many free seats are theirs); short: those, most short
    // first; over: those holding seats they neither use nor are due; needsMost: the one to tell of seats given back.
    contended: needsMost !== null, shortElsewhere, short, over, needsMost,
    elsewhere: others.reduce((sum, r) => sum + r.inFlight, 0),
    occupiedElsewhere: others.reduce((sum, r) => sum + Math.max(r.lease, r.inFlight), 0),
    waitedElsewhere: others.some((r) => r.waited),
    learner: learnerRun === mine.run,
    learnerRun,
  }
}

/** A team's ceiling `cap` as replica `mine` may fill it, `here` its calls held and waiting there, `elsewhere` on the others: its `whole` part, and whether turn `turn` gives it a seat `left` over (docs/governor.md, "A team's ceiling across replicas"). */
export function ceilingPart(cap: number, mine: string, here: number, elsewhere: readonly { run: string; calls: number }[], turn: number): { whole: number; left: boolean } {
  const all = [...elsewhere.filter((r) => r.run !== mine), { run: mine, calls: here }].filter((r) => r.calls > 0).sort((a, b) => (a.run < b.run ? -1 : 1))
  const calls = all.reduce((sum, r) => sum + r.calls, 0)
  if (calls <= cap) return { whole: here, left: false }
  const whole = all.map((r) => Math.min(r.calls, Math.floor((cap * r.calls) / calls + 1e-9)))
  const left = new Set<number>()
  let spare = cap - whole.reduce((sum, n) => sum + n, 0)
  for (let k = 0; k < all.length && spare > 0; k++) {
    const i = (turn + k) % all.length
    if ((whole[i] as number) < (all[i] as { calls: number }).calls) [spare] = [spare - 1, left.add(i)]
  }
  const at = all.findIndex((r) => r.run === mine)
  return { whole: whole[at] ?? 0, left: left.has(at) }
}

/** The shared limit record as learned-limit.ts opens it: written `at` (epoch ms) by `run`, the learner every replica goes on with; `starting`, its start goes on (it stays the learner until it ends); `evidence`, what its limit rule weighed (KneeEstimator.evidence: a replica that takes over starts from it). */
export type SharedLimit = { limit: number; knee: number; at: number; run?: string; starting?: boolean; evidence?: string }

/** A record as the store keeps it: `<lease>|<in flight>|<need>|<answered>|<waited>|[<behind>|]<teams>[#<calls>]` (behind only when some), each team `<name>,<weight>,<cap>,<held>,<waiting>,<lingering>,<peak>[,<seat ms>]` (cap 0: none). */
export function encodeRecord(r: Omit<ReplicaRecord, 'run'>): string {
  const teams = r.teams.map((t) => `${t.team},${t.weight},${t.cap ?? 0},${t.held},${t.waiting},${t.lingering ? 1 : 0},${t.peak}${t.seatMs === undefined ? '' : `,${t.seatMs}`}`).join(';')
  const behind = (r.behind ?? 0) >= 0.005 ? `${(r.behind as number).toFixed(2)}|` : ''
  return `${r.lease}|${r.inFlight}|${r.need}|${r.answered.toFixed(2)}|${r.waited ? 1 : 0}|${behind}${teams}${r.calls === undefined ? '' : `#${r.calls}`}`
}

/** A stored record, or null when it is not one (a team name never holds `,;|#`). */
export function decodeRecord(run: string, text: string): ReplicaRecord | null {
  // A team holds no '|': a number and a '|' after `waited` are the seat-seconds behind.
  const m = /^(\d+)\|(\d+)\|(\d+)\|([\d.]+)\|([01])\|(?:(\d+(?:\.\d+)?)\|)?([^#|]*)(?:#(.*))?$/.exec(text)
  if (m === null) return null
  const teams: TeamRecord[] = []
  for (const part of (m[7] as string).split(';')) {
    if (part === '') continue
    const f = /^([^,]+),(\d+),(\d+),(\d+),(\d+),([01]),(\d+)(?:,(\d+))?$/.exec(part)
    if (f === null) return null
    const [, team, weight, cap, held, waiting, lingering, peak, seatMs] = f as unknown as [string, string, string, string, string, string, string, string, string | undefined]
    teams.push({ team, weight: Math.max(1, Number(weight)), cap: Number(cap) > 0 ? Number(cap) : null, held: Number(held), waiting: Number(waiting), lingering: lingering === '1', peak: Number(peak), ...(seatMs === undefined ? {} : { seatMs: Number(seatMs) }) })
  }
  return { run, lease: Number(m[1]), inFlight: Number(m[2]), need: Number(m[3]), answered: Number(m[4]), waited: m[5] === '1', ...(m[6] === undefined ? {} : { behind: Number(m[6]) }), teams, ...(m[8] === undefined ? {} : { calls: m[8] }) }
}

/** The seat-time each team's calls held on the other replicas: the growth of each run's counter since first seen (it only grows); of the teams `keep` keeps alone. */
export class ElsewhereCharges {
  readonly totals = new Map<string, number>()
  #last = new Map<string, Map<string, number>>()
  #keep: (team: string) => boolean = () => true

  /** Keeps the teams `keep` keeps from now on (a reload removed the others): a removed team's counts go, and another replica that still tells of it adds none back; kept again, its counts start anew. */
  keep(keep: (team: string) => boolean): void {
    this.#keep = keep
    for (const counts of [this.totals, ...this.#last.values()]) for (const team of counts.keys()) if (!keep(team)) counts.delete(team)
  }

  /** The team names it keeps (in its totals or a run's last counters). */
  get teams(): number { return new Set([this.totals, ...this.#last.values()].flatMap((counts) => [...counts.keys()])).size }

  /** The other replicas' records of an answer. */
  seen(others: readonly ReplicaRecord[]): void {
    this.#last = new Map(others.map((r) => {
      const before = this.#last.get(r.run)
      const now = new Map(before)
      for (const t of r.teams) {
        if (t.seatMs === undefined || !this.#keep(t.team)) continue
        const was = before?.get(t.team) ?? t.seatMs
        this.totals.set(t.team, (this.totals.get(t.team) ?? 0) + Math.max(0, t.seatMs - was))
        now.set(t.team, Math.max(t.seatMs, was))
      }
      return [r.run, now]
    }))
  }
}

/** Each replica's parts of the teams' shares as its lease holds them, a waiting team's parts past its calls lent (docs/governor.md, "Across replicas"). */
function placedParts(all: readonly ReplicaRecord[], teams: ReadonlyMap<string, TeamLoad>, partOf: (t: TeamRecord) => number, limit: number): Map<ReplicaRecord, number> {
  // Each record's part kept, worked out once: it is read at every step below.
  const keptBy = new Map<TeamRecord, number>()
  const keptOf = (t: TeamRecord) => keptBy.get(t) as number
  const kept = new Map<string, number>()
  const past = new Map<string, number>()
  for (const r of all) {
    for (const t of r.teams) {
      keptBy.set(t, (teams.get(t.team) as TeamLoad).waiting === 0 ? partOf(t) : Math.min(partOf(t), t.held + t.waiting))
      kept.set(t.team, (kept.get(t.team) ?? 0) + keptOf(t))
      past.set(t.team, (past.get(t.team) ?? 0) + Math.max(0, t.held + t.waiting - keptOf(t)))
    }
  }
  const lent = limit - [...kept.values()].reduce((sum, n) => sum + n, 0)
  let open = [...past].filter(([, p]) => p > 1e-9).map(([team]) => team)
  let totals = new Map<string, number>()
  // A team past the level already keeps its parts and borrows nothing; the level is found again without it.
  while (lent > 1e-9 && open.length > 0) {
    const seats = lent + open.reduce((sum, team) => sum + (kept.get(team) as number), 0)
    totals = fairShares(seats, open.map((team) => ({ team, weight: (teams.get(team) as TeamLoad).weight, held: (kept.get(team) as number) + (past.get(team) as number), waiting: 0, cap: null, peak: 0 })))
    const above = open.filter((team) => (totals.get(team) as number) < (kept.get(team) as number) - 1e-9)
    if (above.length === 0) break
    open = open.filter((team) => !above.includes(team))
  }
  const borrowed = (team: string) => (open.includes(team) ? Math.max(0, (totals.get(team) ?? 0) - (kept.get(team) as number)) : 0)
  return new Map(all.map((r) => [r, r.teams.reduce((sum, t) => {
    const more = Math.max(0, t.held + t.waiting - keptOf(t))
    return sum + keptOf(t) + (more > 0 ? (borrowed(t.team) * more) / (past.get(t.team) as number) : 0)
  }, 0)]))
}
