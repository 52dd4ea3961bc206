// Where the lease records live: a store only stores and grants (`grant`; docs/governor.md, "Across replicas"). Redis in
// production (redis-lease-store.ts); test/helpers/memory-lease-store.ts, the same rule, for the simulator.
import type { ReplicaRecord } from './lease-plan.js'

/** `record`: the run's record past its lease (encodeRecord's text past the first `|`); `held`: what it holds or uses, all it is granted when the store has no record of it (a restart, a lapse); `limitRecord`: the shared limit to write (the learner's); `learns`: only then are the others' records answered with their calls. */
export interface LeaseAsk {
  run: string
  record: string
  inFlight: number
  need: number
  ask: number
  limit: number
  held: number
  leaseMs: number
  limitRecord: string | null
  learns: boolean
}

/** `free`: seats left after the grant; `known`: the store had a record of the run (else it lost the seats leased). */
export interface LeaseAnswer { granted: number; free: number; known: boolean; others: ReplicaRecord[]; limitRecord: string | null }

/** `giveBack`: a clean stop; `listen`: `fn` runs when told that seats came free (`everyone` false) or that the shared limit moved (true); `tellAll`: one message every other run hears. */
export interface LeaseStore {
  renew(ask: LeaseAsk): Promise<LeaseAnswer>
  giveBack(run: string): Promise<void>
  listen(run: string, fn: (everyone: boolean) => void): Promise<void>
  tell(run: string): Promise<void>
  tellAll(from: string): Promise<void>
}

/** A run's record as a store keeps it: live until `expiry`, its calls in flight counted one lease past it. */
export type Stored = { expiry: number; lease: number; inFlight: number; text: string }

/** One grant, on the store's clock: the rule both stores follow. */
export function grant(stored: Map<string, Stored>, ask: LeaseAsk, now: number): { granted: number; free: number; known: boolean } {
  let [occupied, known] = [0, false]
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
