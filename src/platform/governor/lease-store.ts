// Where the lease records live: a store only stores and grants (docs/governor.md, "Across replicas"). Redis in
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

/** `free`: seats left after the grant; `known`: the store had a record of the run (else it lost the seats leased); `now`: the store's clock at the grant (epoch ms), which dates what the replicas share. */
export interface LeaseAnswer { granted: number; free: number; known: boolean; others: ReplicaRecord[]; limitRecord: string | null; now: number }

/** `giveBack`: a clean stop; `listen`: `fn` runs when told that seats came free (`everyone` false) or that the shared limit moved (true); `tellAll`: one message every other run hears. */
export interface LeaseStore {
  renew(ask: LeaseAsk): Promise<LeaseAnswer>
  giveBack(run: string): Promise<void>
  listen(run: string, fn: (everyone: boolean) => void): Promise<void>
  tell(run: string): Promise<void>
  tellAll(from: string): Promise<void>
}
