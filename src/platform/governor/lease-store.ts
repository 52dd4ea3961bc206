// Where the replicas' lease records live, a field per replica run and one for the shared limit:
// a store only stores and grants (`grant`; docs/governor.md, "Across replicas"). Redis in
// production (redis-lease-store.ts); test/helpers/memory-lease-store.ts, the same rule, for the simulator.
import type { ReplicaRecord } from './lease-plan.js'

export interface LeaseAsk {
  run: string
  /** The run's record without its lease (encodeRecord's text past the first `|`). */
  record: string
  inFlight: number
  need: number
  /** Seats it asks for. */
  ask: number
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
export type Stored = { expiry: number; lease: number; inFlight: number; text: string }

/** One grant, on the store's clock: the rule both stores follow. */
export function grant(stored: Map<string, Stored>, ask: LeaseAsk, now: number): { granted: number; free: number; known: boolean } {
  let occupied = 0
  let known = false
  for (const [run, r] of stored) {
    if (r.expiry + ask.leaseMs < now) stored.delete(run)
    else if (r.expiry < now) occupied += run === ask.run ? 0 : r.inFlight
    else if (run === ask.run) known = true
    else occupied += Math.max(r.lease, r.inFlight)
  }
  const free = ask.limit - occupied
  let granted = Math.max(0, Math.min(ask.ask, free))
  if (!known && ask.held > 0) granted = Math.min(granted, ask.held)
  if (granted === 0 && ask.inFlight === 0 && ask.need === 0) stored.delete(ask.run)
  else stored.set(ask.run, { expiry: now + ask.leaseMs, lease: granted, inFlight: ask.inFlight, text: `${granted}|${ask.record}` })
  return { granted, free: free - Math.max(granted, ask.inFlight), known }
}
