// Where the replicas' lease records live, a field per replica run and one for the shared limit:
// a store only stores and grants (`grant`; docs/governor.md, "Across replicas"). Redis in
// production (redis-lease-store.ts); MemoryLeaseStore, the same rule, for the simulator.
import type { Clock } from '../../clock.js'
import { decodeRecord, type ReplicaRecord } from './lease-plan.js'

export interface LeaseAsk {
  run: string
  /** The run's record without its lease (encodeRecord's text past the first `|`). */
  record: string
  inFlight: number
  need: number
  /** Seats it asks for. */
  ask: number
  /** Seats of the ask that are its own (its due while another replica waits; absent: all of them). The rest are free seats: the store grants them past what the replica the next free seat is for lacks (`nextSeatFor`), or to that replica. */
  own?: number
  /** The limit in force, as this run knows it. */
  limit: number
  /** Seats it held or uses: when the store has no record of it (a restart, a lapse), it is granted no more. */
  held: number
  leaseMs: number
  /** The shared limit record to write (the learner's), or null. */
  limitRecord: string | null
  /** Whether the run learns the limit: only then are the other records answered with their calls (past `#`). */
  learns: boolean
}

export interface LeaseAnswer {
  granted: number
  /** Seats left free after the grant. */
  free: number
  /** Whether the store had a record of this run (else it lost the seats it leased). */
  known: boolean
  others: ReplicaRecord[]
  /** The shared limit record as stored, or null. */
  limitRecord: string | null
  /** The run the seats free past this answer are held for (`nextSeatFor`), when some are: told of them. */
  seatFor?: string
}

export interface LeaseStore {
  renew(ask: LeaseAsk): Promise<LeaseAnswer>
  /** A clean stop: the run's record goes. */
  giveBack(run: string): Promise<void>
  /** `fn` runs when another run tells this one that seats came free (`everyone` false), or tells every run that the shared limit moved (true). */
  listen(run: string, fn: (everyone: boolean) => void): Promise<void>
  tell(run: string): Promise<void>
  /** Tells every other listening run at once: one message, whatever the replicas. */
  tellAll(from: string): Promise<void>
}

/** A run's record as a store keeps it: live until `expiry`, its calls in flight counted one lease past it. */
type Stored = { expiry: number; lease: number; inFlight: number; text: string }

/**
 * The run the next free seat is for: the one where a team waits that holds, on every live
 * record, fewest seats for its weight (the team a fair share gives the next seat to), below
 * its cap; of the replicas where that team waits, the one where it holds the least part of
 * its calls there (a team spread over replicas takes the seats in turn); then the first run
 * in order. Null when no team waits.
 */
export function nextSeatFor(records: readonly ReplicaRecord[]): ReplicaRecord | null {
  const teams = new Map<string, { held: number; weight: number; cap: number | null }>()
  for (const r of records) {
    for (const t of r.teams) {
      const g = teams.get(t.team) ?? { held: 0, weight: 1, cap: null }
      teams.set(t.team, { held: g.held + t.held, weight: Math.max(g.weight, t.weight), cap: t.cap === null ? g.cap : g.cap === null ? t.cap : Math.min(g.cap, t.cap) })
    }
  }
  let best: { r: ReplicaRecord; standing: number; here: number } | null = null
  for (const r of records) {
    for (const t of r.teams) {
      const g = teams.get(t.team) as { held: number; weight: number; cap: number | null }
      if (t.waiting === 0 || (g.cap !== null && g.held >= g.cap)) continue
      const [standing, here] = [g.held / g.weight, t.held / (t.held + t.waiting)]
      if (best === null || standing < best.standing || (standing === best.standing && (here < best.here || (here === best.here && r.run < best.r.run)))) best = { r, standing, here }
    }
  }
  return best?.r ?? null
}

/** One grant, on the store's clock: the rule both stores follow. */
export function grant(stored: Map<string, Stored>, ask: LeaseAsk, now: number): { granted: number; free: number; known: boolean; seatFor?: string } {
  let occupied = 0
  let known = false
  const live: ReplicaRecord[] = []
  for (const [run, r] of stored) {
    if (r.expiry + ask.leaseMs < now) stored.delete(run)
    else if (r.expiry < now) occupied += run === ask.run ? 0 : r.inFlight
    else if (run === ask.run) known = true
    else {
      occupied += Math.max(r.lease, r.inFlight)
      const record = decodeRecord(run, r.text)
      if (record !== null) live.push(record)
    }
  }
  const free = ask.limit - occupied
  let granted = Math.max(0, Math.min(ask.ask, free))
  if (!known && ask.held > 0) granted = Math.min(granted, ask.held)
  // Free seats past its own, to another run than the one the next free seat is for: only past what that one lacks (it sees them taken).
  const mine = decodeRecord(ask.run, `0|${ask.record}`)
  const next = nextSeatFor(mine === null ? live : [mine, ...live])
  const kept = next === null || next.run === ask.run ? 0 : Math.max(0, next.need - Math.max(next.lease, next.inFlight))
  if (kept > 0) granted = Math.min(granted, Math.max(ask.own ?? ask.ask, free - kept))
  if (granted === 0 && ask.inFlight === 0 && ask.need === 0) stored.delete(ask.run)
  else stored.set(ask.run, { expiry: now + ask.leaseMs, lease: granted, inFlight: ask.inFlight, text: `${granted}|${ask.record}` })
  const left = free - Math.max(granted, ask.inFlight)
  const held = Math.min(kept, Math.max(0, left))
  return { granted, free: left - held, known, ...(held > 0 && next !== null ? { seatFor: next.run } : {}) }
}

/**
 * The lease store in this process's memory, for replicas that share one process (the
 * simulator's): each call answers after `latencyMs` on `clock`; while `stall` lasts, a
 * call fails after `timeoutMs`, as a command to a stalled Redis times out.
 */
export class MemoryLeaseStore implements LeaseStore {
  readonly #clock: Clock
  readonly #latencyMs: number
  readonly #timeoutMs: number
  readonly #records = new Map<string, Stored>()
  readonly #listeners = new Map<string, (everyone: boolean) => void>()
  #limitRecord: string | null = null
  #stalledUntil = 0

  constructor(clock: Clock, latencyMs = 1, timeoutMs = 250) {
    this.#clock = clock
    this.#latencyMs = latencyMs
    this.#timeoutMs = timeoutMs
  }

  /** Nothing answers until `until` (epoch ms). */
  stall(until: number): void { this.#stalledUntil = until }

  async renew(ask: LeaseAsk): Promise<LeaseAnswer> {
    await this.#delay()
    const now = this.#clock.now()
    const { granted, free, known, seatFor } = grant(this.#records, ask, now)
    if (ask.limitRecord !== null) this.#limitRecord = ask.limitRecord
    const others = [...this.#records].flatMap(([run, r]) => (run === ask.run || r.expiry < now ? [] : (decodeRecord(run, ask.learns ? r.text : (r.text.split('#')[0] as string)) ?? [])))
    return { granted, free, known, others, limitRecord: this.#limitRecord, ...(seatFor === undefined ? {} : { seatFor }) }
  }

  async giveBack(run: string): Promise<void> {
    await this.#delay()
    this.#records.delete(run)
  }

  async listen(run: string, fn: (everyone: boolean) => void): Promise<void> { this.#listeners.set(run, fn) }

  async tell(run: string): Promise<void> {
    await this.#delay()
    this.#listeners.get(run)?.(false)
  }

  async tellAll(from: string): Promise<void> {
    await this.#delay()
    for (const [run, fn] of this.#listeners) if (run !== from) fn(true)
  }

  #delay(): Promise<void> {
    const stalled = this.#stalledUntil - this.#clock.now()
    if (stalled > this.#timeoutMs) return new Promise((_, reject) => this.#clock.setTimeout(() => reject(new Error('the lease store timed out')), this.#timeoutMs))
    return new Promise((resolve) => this.#clock.setTimeout(resolve, Math.max(this.#latencyMs, stalled)))
  }
}
