import type { Logger } from 'pino'
import type { RedisSeal } from '../../redis/seal.js'
import { systemClock, type Clock, type Timer } from '../../clock.js'
import type { KneeEstimator, Move, Step } from './knee-estimator.js'
import { movedEvidence } from './knee-verdicts.js'
import type { CredentialSeats } from './seats.js'
import type { LeasedSeats } from './leased-seats.js'
import type { LeaseAnswer } from './lease-store.js'
import type { LeasePlan, SharedLimit } from './lease-plan.js'

// docs/governor.md, "Constants" (a record dated ahead by more than a tenth of RECORD_MAX_AGE is not taken either).
export const TICK_MS = 100
export const RECORD_MAX_AGE_MS = 5 * 60_000
export const ADOPT_MAX_FACTOR = 4
export const REWRITE_MS = 1000

/** `lease` null: this replica alone learns its own limit; `seal` (GATEWAY_SECRET) seals the shared record, bound to `key`; `onLimit` after every move, `onMove` after this replica's own (from = to when only the knee moved). */
export interface LearnedLimitOptions {
  credential: string
  estimator: KneeEstimator
  seats: CredentialSeats
  lease: LeasedSeats | null
  seal: RedisSeal | null
  key: string
  log: Pick<Logger, 'info' | 'warn'>
  onLimit: (limit: number, knee: number) => void
  onMove?: (move: Move, from: number, to: number) => void
  clock?: Clock
}

/** The limit rule run on a clock, its moves applied to the seats; across replicas the learner's written with its renewals, the others' taken from theirs (docs/governor.md, "Across replicas", the learner). */
export class LearnedLimit {
  readonly #o: LearnedLimitOptions
  readonly #clock: Clock
  #timer: Timer | null = null
  #learning = true
  // What this replica last wrote, to write again when the store lost it (a Redis restart).
  #written: string | null = null
  #forgedSeen = false
  #rewroteAt = -Infinity
  // The record's text last opened, and its fields (null: not one).
  #opened: { sealed: string | null; stored: SharedLimit | null } = { sealed: null, stored: null }

  constructor(opts: LearnedLimitOptions) {
    this.#o = opts
    this.#clock = opts.clock ?? systemClock
    this.#apply({ limit: opts.estimator.limit, knee: opts.estimator.knee, move: 'adopted' })
    if (opts.lease) {
      opts.estimator.shareAnswers(opts.lease.leaseMs, () => this.#clock.now())
      opts.lease.reportCalls(() => opts.estimator.calls())
      opts.lease.readLimitWith((text) => this.#open(text))
    }
  }

  start(): void { this.#timer = this.#clock.setInterval(() => this.tick(), TICK_MS).unref() }

  stop(): void { this.#clock.clearInterval(this.#timer); this.#timer = null }

  /** Looks at the window now (also after an answer, so that a window is judged as its last call ends). */
  tick(): void {
    const { estimator, seats, lease } = this.#o
    if (!this.#learning) return estimator.follows(this.#clock.now())
    if (lease?.waitedElsewhere()) estimator.waited()
    else if (seats.waitingAtLimit()) estimator.waited(seats.longWaitBesideShort(), seats.newcomerBesideLong(), seats.heldBackNow(), seats.longBesideOthersShort())
    // Under the model the calls past the knee wait at the platform: only the first knee of them can be the platform's silence.
    const now = this.#clock.now()
    this.#moved(estimator.tick(now, seats.overdueSince(now, estimator.knee)))
  }

  /** The platform paused the whole credential (here or on another replica): a fault, on the replica that learns. */
  paused(): void { if (this.#learning) this.#moved(this.#o.estimator.pause(this.#clock.now())) }

  /** A lease renewal's answer: whether this replica learns, and the shared limit the others follow. */
  renewed(answer: LeaseAnswer, plan: LeasePlan): void {
    const wasLearning = this.#learning
    this.#learning = plan.learner
    this.#o.estimator.heard(plan.learner ? answer.others : null)
    const record = answer.limitRecord === null ? null : this.#open(answer.limitRecord)
    // A replica that follows takes the shared limit; one that starts learning starts from it, on the evidence the record carries and what it weighs from then on (knee-estimator.ts), and says it learns.
    if (record !== null && !(wasLearning && this.#learning)) this.#adopt(record)
    if (!this.#learning) return
    const now = this.#clock.now()
    if (!wasLearning) this.#o.estimator.startLearning(now, record?.evidence ?? null)
    // Redis lost the record (a restart, a flush): the learner writes the limit in force again, dated now (its last
    // record may be older than RECORD_MAX_AGE_MS, which the others refuse as stale).
    if (answer.limitRecord === null && this.#written !== null) {
      this.#write()
    } else if (!wasLearning ? record?.run !== this.#o.lease?.run : record !== null && record.run !== this.#o.lease?.run && now - this.#rewroteAt >= REWRITE_MS) {
      this.#rewroteAt = now
      this.#write()
    } else if (record !== null && record.run === this.#o.lease?.run && now - record.at >= (this.#o.lease?.leaseMs ?? 0) / 3) {
      // The learner writes the record again every third of a lease, with a renewal, telling no one: it learns while it writes (lease-plan.ts).
      this.#write(false)
    }
  }

  #moved(step: Step | null): void {
    if (step === null) return
    const from = this.#o.seats.limit
    this.#apply(step)
    this.#o.onMove?.(step.move, from, step.limit)
    this.#write()
  }

  /** The shared record of the limit and knee in force, with this replica's run as its writer. */
  #write(tell = true): void {
    const { lease, seal, key, estimator } = this.#o
    if (lease === null) return
    const now = this.#clock.now()
    const evidence = estimator.evidence(now)
    // Dated on the store's clock (docs/governor.md, "The clock"), as every replica reads it.
    const text = JSON.stringify({ limit: estimator.limit, knee: estimator.knee, at: now + lease.offsetMs, run: lease.run, ...(estimator.phase === 'start' ? { starting: true } : {}), ...(evidence === null ? {} : { evidence: movedEvidence(evidence, lease.offsetMs) }) } satisfies SharedLimit)
    this.#written = seal ? seal.sealText(key, text) : text
    lease.writeLimit(this.#written, tell)
  }

  #apply(step: Step): void {
    this.#o.seats.setLimit(step.limit, step.move === 'again')
    this.#o.onLimit(step.limit, step.knee)
  }

  #adopt(record: SharedLimit): void {
    const { estimator } = this.#o
    const bound = (n: number, own: number) => Math.min(own * ADOPT_MAX_FACTOR, Math.max(own / ADOPT_MAX_FACTOR, n))
    const step = estimator.adopt(bound(record.limit, estimator.limit), bound(record.knee, estimator.knee), this.#clock.now())
    if (step !== null) this.#apply(step)
  }

  #open(sealed: string): SharedLimit | null {
    const { seal, key, log, credential, lease } = this.#o
    // Its moments moved from the store's clock to this replica's. The text read last is opened once: a renewal reads it two or three times.
    if (sealed !== this.#opened.sealed) this.#opened = { sealed, stored: parseRecord(seal ? seal.openText(key, sealed) : sealed) }
    const [stored, ms] = [this.#opened.stored, -(lease?.offsetMs ?? 0)]
    const record = stored === null || ms === 0 ? stored : { ...stored, at: stored.at + ms, ...(stored.evidence === undefined ? {} : { evidence: movedEvidence(stored.evidence, ms) }) }
    const now = this.#clock.now()
    const forged = record === null || now - record.at > RECORD_MAX_AGE_MS || record.at - now > RECORD_MAX_AGE_MS / 10
    if (forged && !this.#forgedSeen) log.warn({ credential, key }, 'ignoring a shared platform limit that does not carry this gateway\'s seal (GATEWAY_SECRET), or is stale or dated ahead: this replica keeps its own')
    this.#forgedSeen = forged
    return forged ? null : record
  }
}

/** The record's fields, or null where it is not one (no text, not JSON, a field missing or out of range). */
function parseRecord(text: string | null): SharedLimit | null {
  try {
    const { limit, knee, at, run, evidence, starting } = JSON.parse(text ?? '') as Partial<SharedLimit>
    if (!(Number.isInteger(limit) && (limit as number) > 0 && Number.isInteger(knee) && (knee as number) > 0 && Number.isFinite(at))) return null
    return { limit: limit as number, knee: knee as number, at: at as number, ...(typeof run === 'string' ? { run } : {}), ...(starting === true ? { starting } : {}), ...(typeof evidence === 'string' ? { evidence } : {}) }
  } catch {
    return null
  }
}
