import type { Clock } from '../../src/clock.js'
import { decodeRecord, type ReplicaRecord } from '../../src/platform/governor/lease-plan.js'
import type { LeaseAnswer, LeaseAsk, LeaseStore } from '../../src/platform/governor/lease-store.js'

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

  /** The runs whose lease as last granted holds a seat, live or lapsed. */
  get leasing(): number { return [...this.#records.values()].filter((r) => r.lease > 0).length }

  async renew(ask: LeaseAsk): Promise<LeaseAnswer> {
    await this.#delay()
    const now = this.#clock.now()
    const { granted, free, known } = grant(this.#records, ask, now)
    if (ask.limitRecord !== null) this.#limitRecord = ask.limitRecord
    const others = [...this.#records].flatMap(([run, r]) => (run === ask.run || r.expiry < now ? [] : (read(run, r, ask.learns) ?? [])))
    return { granted, free, known, others, limitRecord: this.#limitRecord, now }
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

/** A run's record as a store keeps it: live until `expiry`, its calls in flight counted one lease past it; as read, whole and without its calls (`read`). */
export type Stored = { expiry: number; lease: number; inFlight: number; text: string; whole?: ReplicaRecord | null; head?: ReplicaRecord | null }

/** A stored record as a renewal reads it (its calls to the learner alone), decoded once for every renewal that reads it until it is written again: a reader only reads it. */
function read(run: string, r: Stored, learns: boolean): ReplicaRecord | null {
  return learns ? (r.whole ??= decodeRecord(run, r.text)) : (r.head ??= decodeRecord(run, r.text.split('#')[0] as string))
}

/** One grant, on the store's clock: the rule the Redis script follows (redis-lease-store.ts), for this store. */
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
