import type { Clock } from '../../src/clock.js'
import { decodeRecord } from '../../src/platform/governor/lease-plan.js'
import { grant, type LeaseAnswer, type LeaseAsk, type LeaseStore, type Stored } from '../../src/platform/governor/lease-store.js'

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
    const { granted, free, known } = grant(this.#records, ask, now)
    if (ask.limitRecord !== null) this.#limitRecord = ask.limitRecord
    const others = [...this.#records].flatMap(([run, r]) => (run === ask.run || r.expiry < now ? [] : (decodeRecord(run, ask.learns ? r.text : (r.text.split('#')[0] as string)) ?? [])))
    return { granted, free, known, others, limitRecord: this.#limitRecord }
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
