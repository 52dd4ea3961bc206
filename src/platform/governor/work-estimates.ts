// The work estimator: a kind's expected seat-time, from its team's answers, else the same work's over every team
// (docs/governor.md, "Words"; dispatch rules 1 and 4). Pure. Constants: docs/governor.md, "Constants".
export const ESTIMATE_GAIN = 0.2
export const CUT_GROWTH = 1.5
export const CUT_MEMORY_MS = 5 * 60_000
export const CUT_TRIAL_MS = 30_000
export const CUT_CONFIRMS = 2
export const MAX_KINDS = 512

/** A kind's seat-time (ms; null: unknown); at least `cutMs` until `until` (epoch ms): `cuts` cuts said so; a call sent to see from `trialAt`; the answered call sent latest: when (`lastSentAt`) and what it took (`lastMs`). */
type Estimate = { ms: number | null; cutMs: number; until: number; cuts: number; trialAt: number; lastSentAt: number; lastMs: number }

export class WorkEstimates {
  // By kind, and by work alone (any team's), in least recently seen order.
  readonly #own = new Map<string, Estimate>()
  readonly #shared = new Map<string, Estimate>()

  /** The kinds (team × work) with an estimate of their own. */
  get kinds(): number { return this.#own.size }

  /** The seat-time (ms) a call of `work` by `team` is expected to take at `now`: its team's answers' estimate, else any team's, and at least what a recent cut said; null when unknown. */
  expectedMs(team: string, work: string, now: number): number | null {
    const own = this.#own.get(kindOf(team, work))
    const shared = this.#shared.get(work)
    return atLeastCut(own?.ms ?? shared?.ms ?? null, Math.max(cutOf(own, now), cutOf(shared, now)))
  }

  /** What a team is told (a job's `expectedSeconds`): the seat-time (ms) its own answers of `work` lead it to expect, at least what a cut of its own said; null while none ended (the others' answers and cuts would tell it their work). */
  ownMs(team: string, work: string, now: number): number | null {
    const own = this.#own.get(kindOf(team, work))
    return own === undefined || own.ms === null ? null : Math.max(own.ms, cutOf(own, now))
  }

  /** The time a call of `work` by `team` needs (ms), to be sent at all: what its kind's answers took, at least what its team's own cuts said once CUT_CONFIRMS of them stand (the kind slowed, not one call hung); else what a cut said; null when unknown. */
  neededMs(team: string, work: string, now: number): number | null {
    const e = this.#own.get(kindOf(team, work))
    const ms = e?.ms ?? this.#shared.get(work)?.ms ?? null
    return atLeastCut(ms, ms === null || (e?.cuts ?? 0) >= CUT_CONFIRMS ? cutOf(e, now) : 0)
  }

  /** Whether a call of a kind that needs more than its budget is sent all the same, to see: one each CUT_TRIAL_MS from the first found too long. */
  trial(team: string, work: string, now: number): boolean {
    const e = take(this.#own, kindOf(team, work), unknown)
    const due = e.trialAt > 0 && now >= e.trialAt
    if (due || e.trialAt === 0) e.trialAt = now + CUT_TRIAL_MS
    return due
  }

  /** A call sent at `sentAt` (none: before any cut call) answered after `ms` at the platform: a cut that said its kind takes longer no longer stands. */
  answered(team: string, work: string, ms: number, sentAt = -Infinity): void {
    for (const [map, k] of this.#keys(team, work)) {
      const e = take(map, k, unknown)
      e.ms = e.ms === null ? ms : e.ms + ESTIMATE_GAIN * (ms - e.ms)
      if (ms < e.cutMs) e.until = 0
      if (sentAt >= e.lastSentAt) [e.lastSentAt, e.lastMs] = [sentAt, ms]
    }
  }

  /**
   * A call sent at `sentAt` that got no answer after `ms` at `now`: its kind takes at least CUT_GROWTH times that, for
   * CUT_MEMORY_MS (counted in `cuts`); unless a call of the kind sent after it was answered within that (the hang was
   * this call's: calls that hung together, as a stopped platform's, are not the kind's slowing).
   */
  cut(team: string, work: string, ms: number, now: number, sentAt = now - ms): void {
    for (const [map, k] of this.#keys(team, work)) {
      const e = take(map, k, unknown)
      if (e.lastSentAt > sentAt && e.lastMs < CUT_GROWTH * ms) continue
      e.cuts = now < e.until ? e.cuts + 1 : 1
      e.cutMs = Math.max(e.cuts > 1 ? e.cutMs : 0, CUT_GROWTH * ms)
      e.until = now + CUT_MEMORY_MS
    }
  }

  /** Drops `team`'s own estimates; those of the work alone (any team's) stay. */
  forget(team: string): void { for (const k of this.#own.keys()) if (k.startsWith(kindOf(team, ''))) this.#own.delete(k) }

  #keys(team: string, work: string): [Map<string, Estimate>, string][] { return [[this.#own, kindOf(team, work)], [this.#shared, work]] }
}

const cutOf = (e: Estimate | undefined, now: number): number => (e !== undefined && now < e.until ? e.cutMs : 0)
/** `ms`, at least `cut`; `cut` alone where `ms` is unknown (0: no cut stands). */
const atLeastCut = (ms: number | null, cut: number): number | null => (ms === null ? (cut > 0 ? cut : null) : Math.max(ms, cut))

/** The entry of kind `k` (made by `make` where there is none), made most recently seen; past MAX_KINDS a kind is forgotten (`roomFor`) (here and in the limit rule's kinds). */
export function take<V>(map: Map<string, V>, k: string, make: () => V): V {
  const e = map.get(k) ?? make()
  if (!map.delete(k) && map.size >= MAX_KINDS) map.delete(roomFor(map.keys(), k))
  map.set(k, e)
  return e
}

/** The kind forgotten to make room for new kind `k` among `kinds` (least recently seen first): the least recently seen of the team holding the most kinds, `k`'s team counted with it (docs/governor.md, "Constants", MAX_KINDS). */
export function roomFor(kinds: Iterable<string>, k: string): string {
  const held = new Map<string, number>([[teamOf(k), 1]])
  const order = [...kinds]
  for (const kind of order) held.set(teamOf(kind), (held.get(teamOf(kind)) ?? 0) + 1)
  const most = Math.max(...held.values())
  return order.find((kind) => held.get(teamOf(kind)) === most)!
}

/** The team of a kind (`kindOf`); '' for work alone. */
const teamOf = (kind: string): string => kind.slice(0, Math.max(0, kind.indexOf('\n')))
const unknown = (): Estimate => ({ ms: null, cutMs: 0, until: 0, cuts: 0, trialAt: 0, lastSentAt: -Infinity, lastMs: 0 })

export const kindOf = (team: string, work: string): string => `${team}\n${work}`
