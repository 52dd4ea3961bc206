// Every replica's calls in time order for the learner (docs/governor.md, "Across replicas the learner weighs every replica's calls"). Pure.

/** What the limit rule learns from one call's end: `load`, the calls in flight on every replica at its start, itself included; `window`, its serial (what `started` returned); `timed` false, an end, not evidence (docs/governor.md, "The gateway's own time"). */
export interface Answer {
  startedAt: number; at: number; team: string; kind: string; load: number; window: number
  outcome: 'ok' | 'overload' | 'other' // overload: 502/503/504 or no connection; other: says nothing of load (a call cut by its deadline)
  timed?: boolean
  /** Answered 429: the platform refused it (docs/governor.md, "Start"). */
  refused?: boolean
}

/** docs/governor.md, "Constants". */
const CALLS_KEPT = 400

/** Where the calls go, in the order they started and ended (the limit rule's evidence); `start`: a call started with `load` calls in flight, itself included, returns its serial. */
export interface EvidenceSink { start(kind: string, load: number): number; end(a: Answer): void }

/** One call as a record carries it: its start, its end (null: in flight), its kind, and its answer's outcome and timing. */
export interface CallEntry { startedAt: number; at: number | null; kind: string; outcome: Answer['outcome']; timed: boolean }

const FLAGS: Record<string, [Answer['outcome'], boolean]> = { o: ['ok', true], u: ['ok', false], v: ['overload', true], x: ['other', true] }
const flagOf = (e: CallEntry): string => (e.outcome === 'ok' ? (e.timed ? 'o' : 'u') : e.outcome === 'overload' ? 'v' : 'x')

/** The kind as records carry it (FNV-1a, base 36): the same on every replica, a few characters. */
export function kindId(kind: string): string {
  let h = 0x811c9dc5
  for (let i = 0; i < kind.length; i++) h = Math.imul(h ^ kind.charCodeAt(i), 0x01000193)
  return (h >>> 0).toString(36)
}

/** `<now>;<start>,<end>,<kind>,<flag>;…`, times in base 36, start and end as ms before now (an end empty: in flight). */
export function encodeCalls(now: number, calls: readonly CallEntry[]): string {
  // Whole ms apart from the record's moment, so that a call reads the same in every record.
  const at = Math.round(now)
  let text = at.toString(36)
  for (const c of calls) text += c.at === null ? `;${ago(at, c.startedAt)},,${c.kind},` : `;${ago(at, c.startedAt)},${ago(at, c.at)},${c.kind},${flagOf(c)}`
  return text
}

const ago = (at: number, t: number): string => Math.max(0, at - Math.round(t)).toString(36)

/** A record's calls with its moment moved by `ms`, each call with it (a call is kept as ms before the moment): from one clock to another. */
export function redated(text: string, ms: number): string {
  if (ms === 0) return text
  const cut = text.indexOf(';')
  const head = cut < 0 ? text : text.slice(0, cut)
  return !/^[0-9a-z]+$/.test(head) ? text : Math.max(0, parseInt(head, 36) + ms).toString(36) + (cut < 0 ? '' : text.slice(cut))
}

/** One call of a record: start and kind one base-36 digit or more, end none or more, and a flag exactly when there is an end. */
const CALL = /^([0-9a-z]+),([0-9a-z]*),([0-9a-z]+),([ouvx]?)$/

/** A record's calls and when it was written, or null when the text is not one. */
export function decodeCalls(text: string): { at: number; calls: CallEntry[] } | null {
  const [head, ...parts] = text.split(';')
  const at = parseInt(head as string, 36)
  if (!Number.isFinite(at)) return null
  const calls: CallEntry[] = []
  for (const part of parts) {
    const [, started, ended, kind, flag] = CALL.exec(part) ?? []
    if (started === undefined || (ended === '') !== (flag === '')) return null
    const [outcome, timed] = FLAGS[flag as string] ?? ['other', true]
    calls.push({ startedAt: at - parseInt(started, 36), at: ended === '' ? null : at - parseInt(ended as string, 36), kind: kind as string, outcome, timed })
  }
  return { at, calls }
}

type Local = { kind: string; load: number; startedAt: number; serial: number | null; answer: Answer | null }
/** Another replica's calls: as of its last record (its moment, `decoded.at`), those ended not yet given (by id), those given (by id, when they ended), those in flight, and the serials of those started here by key; its last record's text, calls and calls in flight (a record heard again is not decoded again). */
type Remote = { ended: Map<string, CallEntry>; done: Map<string, number>; inFlight: CallEntry[]; started: Map<string, number[]>; text: string; decoded: Decoded }
type Decoded = { at: number; calls: CallEntry[]; inFlight: CallEntry[] }

export class AnswerTimeline {
  readonly #sink: EvidenceSink
  readonly #keepMs: number
  #token = 0
  readonly #local = new Map<number, Local>()
  // This replica's most recent CALLS_KEPT calls ended, for its record: its memory stays bounded.
  readonly #recent: CallEntry[] = []
  readonly #remote = new Map<string, Remote>()
  // Evidence given up to this moment; calls started and not ended in it.
  #released = -Infinity
  #open = 0
  #heardAt = -Infinity

  /** `keepMs`: how far back a record's calls go (a lease's life: every record is read within it). */
  constructor(sink: EvidenceSink, keepMs: number) { [this.#sink, this.#keepMs] = [sink, keepMs] }

  /** Whether other replicas' calls are in play (this replica learns beside others). */
  get merging(): boolean { return this.#remote.size > 0 }

  started(kind: string, load: number, now: number): number {
    this.#stale(now)
    const call: Local = { kind: kindId(kind), load, startedAt: now, serial: null, answer: null }
    this.#local.set(++this.#token, call)
    if (!this.merging) this.#startLocal(call)
    return this.#token
  }

  ended(a: Answer, now: number): void {
    this.#stale(now)
    const call = this.#local.get(a.window)
    if (call === undefined) return
    call.answer = { ...a, kind: call.kind }
    this.#recent.push({ startedAt: a.startedAt, at: a.at, kind: call.kind, outcome: a.outcome, timed: a.timed !== false })
    if (this.#recent.length > CALLS_KEPT) this.#recent.shift()
    if (!this.merging) this.#endLocal(a.window, call, now)
  }

  /** This replica's calls for its record: those ended within keepMs, the most recent CALLS_KEPT, and those in flight. */
  calls(now: number): string {
    const calls: CallEntry[] = []
    for (const c of this.#recent) if ((c.at as number) > now - this.#keepMs) calls.push(c)
    for (const c of this.#local.values()) if (c.answer === null) calls.push({ startedAt: c.startedAt, at: null, kind: c.kind, outcome: 'other', timed: true })
    return encodeCalls(now, calls)
  }

  /** The other replicas' records as the learner's renewal returned them (null: it does not learn): every call is given up to the moment all reached. */
  heard(records: readonly { run: string; calls?: string | undefined }[] | null, now: number): void {
    this.#heardAt = now
    const seen = new Set<string>()
    for (const r of records ?? []) {
      const known = this.#remote.get(r.run)
      // Decoding is pure and its calls are read, never changed: a record heard again reads as its calls decoded before.
      const decoded = r.calls === undefined ? null : r.calls === known?.text ? known.decoded : withInFlight(decodeCalls(r.calls))
      if (decoded === null) continue
      seen.add(r.run)
      const remote = known ?? { ended: new Map(), done: new Map(), inFlight: [], started: new Map(), text: '', decoded }
      if (decoded.at < remote.decoded.at) continue
      ;[remote.text, remote.decoded] = [r.calls as string, decoded]
      remote.inFlight = decoded.inFlight
      // The starts of the calls started here, for a test before a key is made.
      const startedAt = new Set<number>()
      for (const k of remote.started.keys()) startedAt.add(Number(k.slice(0, k.indexOf('|'))))
      // An end not given yet: past the moment given, or of a call started here (else its moment went by without it).
      for (const c of decoded.calls) {
        if (c.at === null) continue
        // An end not past the moment given, of a call not started here, is passed over before its id is made (most of a record's).
        if (c.at <= this.#released && !(startedAt.has(c.startedAt) && remote.started.has(keyOf(c)))) continue
        const id = `${keyOf(c)}|${c.at}`
        if (!remote.done.has(id)) remote.ended.set(id, c)
      }
      for (const [id, at] of remote.done) if (at < now - 2 * this.#keepMs) remote.done.delete(id)
      this.#remote.set(r.run, remote)
    }
    let horizon = now
    // A replica absent from the answer (no seat held) has no call in flight and stays in play for keepMs (docs/governor.md, as above).
    for (const [run, remote] of this.#remote) {
      if (seen.has(run)) horizon = Math.min(horizon, remote.decoded.at)
      else if (records !== null && now - remote.decoded.at <= this.#keepMs) remote.inFlight = []
      else {
        // Out of play: its calls started here end, saying nothing; the rest go.
        for (const [k, serials] of remote.started) for (let i = serials.length; i > 0; i--) this.#endRemote(remote, k, silentEnd(this.#released))
        this.#remote.delete(run)
      }
    }
    this.#release(horizon)
  }

  /** No record heard of for keepMs (the store out): the other replicas' calls are out of play, this one's go at once. */
  #stale(now: number): void { if (this.merging && now - this.#heardAt > this.#keepMs) this.heard(null, now) }

  /** Every start and end up to `horizon`, in time order (an end before a start at the same moment: that call was not ahead). */
  #release(horizon: number): void {
    const events: { t: number; end: boolean; run: () => void }[] = []
    // An end at its own start comes after that start.
    const add = (t: number, end: boolean, run: () => void, from = -Infinity) => events.push({ t: Math.max(t, this.#released, end ? from + 1e-6 : -Infinity), end, run })
    for (const [token, call] of this.#local) {
      if (call.serial === null && call.startedAt <= horizon) add(call.startedAt, false, () => this.#startLocal(call))
      if (call.answer !== null && call.answer.at <= horizon) add(call.answer.at, true, () => this.#endLocal(token, call, horizon), call.startedAt)
    }
    for (const remote of this.#remote.values()) {
      const pending = new Map([...remote.started].map(([k, serials]) => [k, serials.length]))
      // A call started here already is not started again; returns its key. One heard after the moment given passed its start is given at that moment.
      const startOnce = (c: CallEntry): string => {
        const k = keyOf(c)
        if ((pending.get(k) ?? 0) > 0) pending.set(k, (pending.get(k) as number) - 1)
        else add(c.startedAt, false, () => remote.started.set(k, [...(remote.started.get(k) ?? []), this.#sink.start(c.kind, ++this.#open)]))
        return k
      }
      for (const [id, c] of remote.ended) {
        if (c.startedAt > horizon) continue
        const k = startOnce(c)
        if ((c.at as number) <= horizon) {
          remote.ended.delete(id)
          remote.done.set(id, c.at as number)
          add(c.at as number, true, () => this.#endRemote(remote, k, c), c.startedAt)
        }
      }
      for (const c of remote.inFlight) if (c.startedAt <= horizon) startOnce(c)
      // Calls started here that the record shows neither in flight nor ended: they ended out of its reach, saying nothing.
      for (const [k, left] of pending) for (let i = 0; i < left; i++) add(horizon, true, () => this.#endRemote(remote, k, silentEnd(horizon)))
    }
    // A stable sort: events at one moment, of one sort, run in the order they were added.
    events.sort((a, b) => a.t - b.t || Number(b.end) - Number(a.end))
    for (const e of events) e.run()
    this.#released = Math.max(this.#released, horizon)
  }

  #startLocal(call: Local): void {
    call.serial = this.#sink.start(call.kind, this.merging ? this.#open + 1 : call.load)
    this.#open++
    this.#released = Math.max(this.#released, call.startedAt)
  }

  #endLocal(token: number, call: Local, at: number): void {
    this.#local.delete(token)
    if (call.serial === null || call.answer === null) return
    this.#open--
    this.#sink.end({ ...call.answer, window: call.serial })
    this.#released = Math.max(this.#released, Math.min(at, call.answer.at))
  }

  #endRemote(remote: Remote, k: string, c: CallEntry): void {
    const serials = remote.started.get(k)
    const serial = serials?.shift()
    if (serials?.length === 0) remote.started.delete(k)
    if (serial === undefined) return
    this.#open--
    this.#sink.end({ startedAt: c.startedAt, at: c.at as number, team: '', kind: c.kind, load: 0, window: serial, outcome: c.outcome, timed: c.timed })
  }
}

const withInFlight = (d: { at: number; calls: CallEntry[] } | null): Decoded | null => (d === null ? null : { ...d, inFlight: d.calls.filter((c) => c.at === null) })
const keyOf = (c: CallEntry): string => `${c.startedAt}|${c.kind}`
/** The end, at `at`, of a call whose answer is out of reach: it says nothing. */
const silentEnd = (at: number): CallEntry => ({ startedAt: at, at, kind: '', outcome: 'other', timed: false })
