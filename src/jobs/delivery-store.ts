import { deliveryDueAt, type Delivery } from './delivery.js'

/**
 * The webhook outbox: in Redis, shared by the replicas (redis-delivery-store.ts), or in
 * this process's memory in demo mode without Redis (MemoryDeliveryStore below). Both keep
 * the same promises (test/integration/delivery-stores.test.ts): a delivery changes only
 * by `swap`, which replaces it only if it is still as its caller read it, so two replicas
 * never both claim or record one attempt; it is added once per job however often its
 * end is told.
 */
export interface DeliveryStore {
  /** Adds `d` unless a delivery of its id is kept already (false then); the team's oldest beyond the bound are dropped. */
  add(d: Delivery, now: number): Promise<boolean>
  get(id: string): Promise<Delivery | null>
  /** Replaces `current` by `next` if the delivery stored is still `current`. */
  swap(current: Delivery, next: Delivery, now: number): Promise<boolean>
  /**
   * The deliveries a deliverer may claim at `now`, each id with when it is due, the earliest
   * first (by id when due at once): `count` at most, after `after` (the last of the page
   * before; null: from the first), so that deliveries claimed or dropped meanwhile move none
   * past the next page.
   */
  dueIds(now: number, after: DueMark | null, count: number): Promise<DueMark[]>
  /** The deliveries of `ids` still kept, in their order; an id whose record is gone leaves the due ones. */
  records(ids: readonly string[]): Promise<Delivery[]>
  /** When the earliest pending delivery is due (claimed: its claim's end); null: none pending. */
  nextDue(): Promise<number | null>
  /** The latest deliveries of every team, newest first, at most `limit`. */
  latest(limit: number, now: number): Promise<Delivery[]>
}

/** A due delivery's place in the order a deliverer reads them: when it is due, then its id. */
export interface DueMark {
  id: string
  at: number
}

/** Whether `a` comes after `b` in that order. */
export function dueAfter(a: DueMark, b: DueMark): boolean {
  return a.at > b.at || (a.at === b.at && a.id > b.id)
}

/** How long deliveries are kept (config `jobs.keep`, `jobs.webhook*`, `jobs.deliveriesPerTeam`). */
export interface OutboxBounds {
  /** A settled delivery's record is kept this long (jobs.keep). */
  keepMs: number
  /** The longest a delivery lives from its creation: its retries, its last attempt's claim, then keepMs. */
  lifeMs: number
  /** Deliveries kept per team: the oldest beyond are dropped, pending or not. */
  perTeam: number
}

/** How long `d`'s record is kept from `now`. */
export function deliveryRecordMs(d: Delivery, now: number, b: OutboxBounds): number {
  return Math.max(1, d.state === 'pending' ? d.createdAt + b.lifeMs - now : b.keepMs)
}

const byCreated = (a: Delivery, b: Delivery): number => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1)

/** The outbox of demo mode: one replica, its memory; the same promises as Redis's. */
export class MemoryDeliveryStore implements DeliveryStore {
  // Each delivery as its text: a swap compares the text it was read as.
  readonly #kept = new Map<string, { text: string; until: number }>()
  readonly #b: OutboxBounds

  constructor(bounds: OutboxBounds) {
    this.#b = bounds
  }

  async add(d: Delivery, now: number): Promise<boolean> {
    return this.addNow(d, now)
  }

  /** `add` in this turn of the event loop: a memory job store's end adds its delivery in the same step (job-store.ts). */
  addNow(d: Delivery, now: number): boolean {
    this.#prune(now)
    if (this.#kept.has(d.id)) return false
    this.#kept.set(d.id, { text: JSON.stringify(d), until: now + deliveryRecordMs(d, now, this.#b) })
    const team = [...this.#all()].filter((x) => x.team === d.team).sort(byCreated)
    for (const old of team.slice(this.#b.perTeam)) this.#kept.delete(old.id)
    return true
  }

  async get(id: string): Promise<Delivery | null> {
    const kept = this.#kept.get(id)
    return kept ? (JSON.parse(kept.text) as Delivery) : null
  }

  async swap(current: Delivery, next: Delivery, now: number): Promise<boolean> {
    const kept = this.#kept.get(current.id)
    if (!kept || kept.text !== JSON.stringify(current)) return false
    this.#kept.set(current.id, { text: JSON.stringify(next), until: now + deliveryRecordMs(next, now, this.#b) })
    return true
  }

  async dueIds(now: number, after: DueMark | null, count: number): Promise<DueMark[]> {
    const due: DueMark[] = []
    for (const d of this.#all()) {
      const at = deliveryDueAt(d)
      if (at !== null && at <= now) due.push({ id: d.id, at })
    }
    return due
      .filter((mark) => after === null || dueAfter(mark, after))
      .sort((a, b) => (dueAfter(a, b) ? 1 : -1))
      .slice(0, count)
  }

  async records(ids: readonly string[]): Promise<Delivery[]> {
    return (await Promise.all(ids.map((id) => this.get(id)))).filter((d): d is Delivery => d !== null)
  }

  async nextDue(): Promise<number | null> {
    const times = [...this.#all()].map(deliveryDueAt).filter((t): t is number => t !== null)
    return times.length === 0 ? null : Math.min(...times)
  }

  async latest(limit: number, now: number): Promise<Delivery[]> {
    this.#prune(now)
    return [...this.#all()].sort(byCreated).slice(0, limit)
  }

  *#all(): Iterable<Delivery> {
    for (const { text } of this.#kept.values()) yield JSON.parse(text) as Delivery
  }

  #prune(now: number): void {
    for (const [id, kept] of this.#kept) if (now >= kept.until) this.#kept.delete(id)
  }
}
