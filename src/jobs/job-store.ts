import { gunzipSync } from 'node:zlib'
import type { CacheEntry } from '../cache/cache-entry.js'
import { ownBytes } from '../observe/own-bytes.js'
import { dropAt, dueAt, ended, heldResultBytes, type Job } from './job.js'
import type { Delivery } from './delivery.js'
import type { MemoryDeliveryStore } from './delivery-store.js'

/**
 * Where jobs live: in Redis, shared by the replicas (redis-job-store.ts), or in this
 * process's memory in demo mode without Redis (MemoryJobStore below). Both keep the same
 * promises, proved by one shared test suite: a job changes only by `swap`, which replaces
 * it only if it is still as its caller read it, so two replicas never both start, end or
 * cancel one job. A job's end and its webhook delivery are one step: the swap that ends it
 * adds the delivery to the outbox it was given, so no replica stops between the two.
 */
export interface JobStore {
  /**
   * Adds a new job unless its team has `maxOpen` jobs open (queued or running) already, or
   * keeps `maxKept` jobs at `now` (those keptOfTeam counts): false then. The counts and the
   * add are one step, so that asks made at once are counted with each other.
   */
  add(job: Job, maxOpen: number, now: number, maxKept?: number): Promise<boolean>
  get(id: string): Promise<Job | null>
  /**
   * Replaces `current` by `next` if the job stored is still `current`; false when it changed
   * (or went) meanwhile. With `push` (an end's webhook delivery), adds it to the store's
   * outbox in the same step, unless one of its id is kept already: the end is never stored
   * without it. With `result` (the report an end keeps, or the body of the platform's answer
   * it ended with), keeps it beside the job until `next.expiresAt`, in the same step too:
   * only the end of the run that still holds the job stores a result, so a run that lost
   * its job (its lease ran out, another run took it over) never replaces the result the
   * job's record describes. With `mark` (HeldResults.mark, read before the team's bound was
   * checked), a result is kept only if no other result of the team was kept since: the
   * check and the keep are one step, so that ends of one team at once on several replicas
   * never pass its bound.
   */
  swap(current: Job, next: Job, now: number, push?: Delivery | null, result?: CacheEntry | null, mark?: string | null): Promise<boolean>
  /** Removes `current` (a cancel) if the job stored is still `current`. */
  remove(current: Job): Promise<boolean>
  /**
   * The jobs a runner may start at `now` (queued and due, or running with their lease run
   * out), the earliest due first (then by id), at most `limit`: jobs running under a live
   * lease are not read at all.
   */
  due(now: number, limit: number): Promise<Job[]>
  /** A team's jobs still kept: open, ended, expired not yet dropped. */
  ofTeam(team: string, now: number): Promise<Job[]>
  /** The bytes of results a team's ended jobs keep at `now` (heldResultBytes), and the mark a swap keeping a result is given so that it is refused once another result of the team was kept since. */
  heldResults(team: string, now: number): Promise<HeldResults>
  /** A team's open jobs (queued, running): at most jobs.maxOpenPerTeam. */
  openOfTeam(team: string): Promise<Job[]>
  /** How many jobs of a team are kept at `now` (those ofTeam reads), without reading them: at most jobs.maxKeptPerTeam. */
  keptOfTeam(team: string, now: number): Promise<number>
  /** The report job `id` ended with, while it is kept. */
  result(id: string, now: number): Promise<CacheEntry | null>
}

/** What a team's ended jobs keep, as read for a check of its bound. */
export interface HeldResults {
  bytes: number
  /** The count of the team's results kept, read before `bytes`: a swap given it keeps its result only at that count. */
  mark: string
}

/** Until when a job's record is kept: its drop time once ended; an open job's until a runner ends it. */
function keptUntil(job: Job): number {
  return dropAt(job) ?? Number.POSITIVE_INFINITY
}

/** The error of a swap given a delivery by a store given no outbox: a wiring mistake, not a state. */
export const NO_OUTBOX = 'this job store has no outbox: it records no webhook delivery'

/** The jobs of demo mode: one replica, its memory; the same promises as Redis's. */
export class MemoryJobStore implements JobStore {
  // Each job as its text: a swap compares the text it was read as.
  readonly #jobs = new Map<string, { text: string; until: number }>()
  readonly #results = new Map<string, { entry: CacheEntry; until: number }>()
  /** Each team's count of results kept (HeldResults.mark). */
  readonly #resultEnds = new Map<string, number>()
  readonly #outbox: MemoryDeliveryStore | null

  /** `outbox`: where an end's delivery is added, in the same turn of the event loop as the end. */
  constructor(outbox: MemoryDeliveryStore | null = null) {
    this.#outbox = outbox
  }

  async add(job: Job, maxOpen: number, now: number, maxKept: number = Number.MAX_SAFE_INTEGER): Promise<boolean> {
    this.#prune(now)
    const kept = [...this.#all()].filter((j) => j.team === job.team)
    if (kept.length >= maxKept || kept.filter((j) => !ended(j)).length >= maxOpen) return false
    this.#jobs.set(job.id, { text: JSON.stringify(job), until: keptUntil(job) })
    return true
  }

  async get(id: string): Promise<Job | null> {
    const kept = this.#jobs.get(id)
    return kept ? (JSON.parse(kept.text) as Job) : null
  }

  async swap(current: Job, next: Job, now: number, push: Delivery | null = null, result: CacheEntry | null = null, mark: string | null = null): Promise<boolean> {
    if (push && !this.#outbox) throw new Error(NO_OUTBOX)
    const kept = this.#jobs.get(current.id)
    if (!kept || kept.text !== JSON.stringify(current)) return false
    if (result && mark !== null && mark !== this.#markOf(current.team)) return false
    this.#jobs.set(current.id, { text: JSON.stringify(next), until: keptUntil(next) })
    if (push) this.#outbox?.addNow(push, now)
    if (result) {
      this.#keepResult(current.id, result, next.expiresAt ?? now, now)
      this.#resultEnds.set(current.team, (this.#resultEnds.get(current.team) ?? 0) + 1)
    }
    return true
  }

  async heldResults(team: string, now: number): Promise<HeldResults> {
    return { mark: this.#markOf(team), bytes: heldResultBytes(await this.ofTeam(team, now), now) }
  }

  #markOf(team: string): string {
    return String(this.#resultEnds.get(team) ?? 0)
  }

  async remove(current: Job): Promise<boolean> {
    const kept = this.#jobs.get(current.id)
    if (!kept || kept.text !== JSON.stringify(current)) return false
    this.#jobs.delete(current.id)
    return true
  }

  async due(now: number, limit: number): Promise<Job[]> {
    const due = [...this.#all()].filter((j) => (dueAt(j) ?? Infinity) <= now)
    return due.sort((a, b) => (dueAt(a) as number) - (dueAt(b) as number) || (a.id < b.id ? -1 : 1)).slice(0, limit)
  }

  async openOfTeam(team: string): Promise<Job[]> {
    return [...this.#all()].filter((j) => j.team === team && !ended(j))
  }

  async ofTeam(team: string, now: number): Promise<Job[]> {
    this.#prune(now)
    return [...this.#all()].filter((j) => j.team === team)
  }

  async keptOfTeam(team: string, now: number): Promise<number> {
    return (await this.ofTeam(team, now)).length
  }

  // A result is held as its gzip bytes alone, what its team's bound (jobs.resultBytesPerTeam)
  // counts, as Redis holds it: its plain body, often ten times as large, is made again
  // when the result is read.
  #keepResult(id: string, entry: CacheEntry, until: number, now: number): void {
    this.#prune(now)
    this.#results.set(id, { entry: { ...entry, gzip: ownBytes(entry.gzip), identity: null }, until })
  }

  async result(id: string, now: number): Promise<CacheEntry | null> {
    const kept = this.#results.get(id)
    return kept && now < kept.until ? { ...kept.entry, identity: gunzipSync(kept.entry.gzip) } : null
  }

  *#all(): Iterable<Job> {
    for (const { text } of this.#jobs.values()) yield JSON.parse(text) as Job
  }

  #prune(now: number): void {
    for (const [id, kept] of this.#jobs) if (now >= kept.until) this.#jobs.delete(id)
    for (const [id, kept] of this.#results) if (now >= kept.until) this.#results.delete(id)
  }
}
