import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { AnswerTimeline, decodeCalls, encodeCalls, kindId, redated, type Answer, type CallEntry, type EvidenceSink } from '../../src/platform/governor/answer-timeline.js'

// Every replica's calls for the learner's limit rule (answer-timeline.ts): a record carries
// a replica's calls of late; the learner gives its estimator every replica's starts and ends
// in time order, each start with the calls in flight on every replica then.

const T = 1_800_000_000_000
const KEEP_MS = 5_000

/** A sink that writes down what it is given: `start <kind> <load>` and `end <serial>@<ms from T>`. */
function sink(): EvidenceSink & { log: string[] } {
  let serial = 0
  const log: string[] = []
  return {
    log,
    start(kind, load) {
      log.push(`start ${kind} ${load}`)
      return ++serial
    },
    end(a) {
      log.push(`end ${a.window}@${a.at - T}`)
    },
  }
}

const answer = (startedAt: number, at: number, window: number): Answer => ({ startedAt: T + startedAt, at: T + at, team: 't', kind: 'week', load: 0, window, outcome: 'ok' })
const call = (startedAt: number, at: number | null, kind = kindId('week')): CallEntry => ({ startedAt: T + startedAt, at: at === null ? null : T + at, kind, outcome: 'ok', timed: true })
const record = (run: string, now: number, calls: CallEntry[]) => ({ run, calls: encodeCalls(T + now, calls) })

describe('encodeCalls and decodeCalls', () => {
  it('give back the calls in whole ms, those in flight with no end', () => {
    const calls: CallEntry[] = [
      { startedAt: T - 120, at: T - 20, kind: kindId('a\nweek'), outcome: 'ok', timed: true },
      { startedAt: T - 90, at: T - 10, kind: kindId('a\nyear'), outcome: 'ok', timed: false },
      { startedAt: T - 80, at: T - 5, kind: kindId('a\nweek'), outcome: 'overload', timed: true },
      { startedAt: T - 70, at: T - 1, kind: kindId('a\nweek'), outcome: 'other', timed: true },
      { startedAt: T - 40, at: null, kind: kindId('a\nweek'), outcome: 'other', timed: true },
    ]
    expect(decodeCalls(encodeCalls(T, calls))).toEqual({ at: T, calls })
    expect(decodeCalls(encodeCalls(T + 0.6, [{ ...call(0, null), startedAt: T - 99.7 }]))).toEqual({ at: T + 1, calls: [{ ...call(-100, null), outcome: 'other' }] })
  })

  it('reads no record from text that is not one', () => {
    expect(decodeCalls('')).toBeNull()
    expect(decodeCalls('zz;1,2,abc,q')).toBeNull()
    expect(decodeCalls('zz;1,,abc,o')).toBeNull()
    for (const part of ['', ',2,ab,o', '1,2,,o', '1,2,ab', '1,2,ab,oo', '1,2,ab,o,', '1,2,AB,o', '1,2-,ab,o', '1,2,ab,']) expect(decodeCalls(`zz;${part}`), part).toBeNull()
  })

  it('reads any text as the grammar of a record says', () => {
    // The grammar, as a regular expression per call; times in base 36.
    const grammar = (text: string) => {
      const [head, ...parts] = text.split(';')
      const at = parseInt(head as string, 36)
      if (!Number.isFinite(at)) return null
      const calls = parts.map((p) => /^([0-9a-z]+),([0-9a-z]*),([0-9a-z]+),([ouvx]?)$/.exec(p))
      if (calls.some((m) => m === null || (m[2] === '') !== (m[4] === ''))) return null
      const flags: Record<string, [string, boolean]> = { '': ['other', true], o: ['ok', true], u: ['ok', false], v: ['overload', true], x: ['other', true] }
      return { at, calls: (calls as RegExpExecArray[]).map(([, s, e, kind, f]) => ({ startedAt: at - parseInt(s as string, 36), at: e === '' ? null : at - parseInt(e as string, 36), kind, outcome: (flags[f as string] as [string, boolean])[0], timed: (flags[f as string] as [string, boolean])[1] })) }
    }
    const texts = fc.array(fc.constantFrom('0', '7', 'z', 'a', 'A', 'o', 'u', 'v', 'x', 'q', ',', ',', ',', ';', '-'), { maxLength: 40 }).map((cs) => `hz9k;${cs.join('')}`)
    const records = fc.array(fc.record({ s: fc.nat(), e: fc.option(fc.nat()), kind: fc.stringMatching(/^[0-9a-z]{1,14}$/), f: fc.constantFrom('o', 'u', 'v', 'x') }), { maxLength: 5 })
      .map((calls) => ['lq2w3e', ...calls.map((c) => `${c.s.toString(36)},${c.e === null ? '' : c.e.toString(36)},${c.kind},${c.e === null ? '' : c.f}`)].join(';'))
    fc.assert(fc.property(fc.oneof(texts, records), (text) => { expect(decodeCalls(text)).toEqual(grammar(text)) }), { numRuns: 2_000 })
  })

  it('moves a record to another clock whole: its moment and every call with it', () => {
    const calls: CallEntry[] = [call(-120, -20), { ...call(-40, null), outcome: 'other' }]
    const text = encodeCalls(T, calls)
    const moved = (ms: number) => calls.map((c) => ({ ...c, startedAt: c.startedAt + ms, at: c.at === null ? null : c.at + ms }))
    expect(decodeCalls(redated(text, 10_000))).toEqual({ at: T + 10_000, calls: moved(10_000) })
    expect(decodeCalls(redated(redated(text, -10_000), 10_000))).toEqual({ at: T, calls })
    expect(redated(text, 0)).toBe(text)
    expect(redated('not a record', 5)).toBe('not a record')
  })

  it('names a kind alike on every replica, in a few characters', () => {
    expect(kindId('team\nweek')).toBe(kindId('team\nweek'))
    expect(kindId('team\nweek')).not.toBe(kindId('team\nyear'))
    expect(kindId('team\n'.repeat(50))).toMatch(/^[0-9a-z]{1,7}$/)
  })
})

describe('AnswerTimeline', () => {
  it('with no other replica in play, gives each start and end at once, with the load the seats said', () => {
    const s = sink()
    const tl = new AnswerTimeline(s, KEEP_MS)
    const a = tl.started('week', 3, T)
    expect(s.log).toEqual([`start ${kindId('week')} 3`])
    tl.ended(answer(0, 100, a), T + 100)
    expect(s.log.at(-1)).toBe('end 1@100')
    expect(tl.merging).toBe(false)
  })

  it('on the learner, weaves every replica\'s calls in time order, each start counting the calls in flight on all of them, up to the moment every record reached', () => {
    const s = sink()
    const tl = new AnswerTimeline(s, KEEP_MS)
    tl.heard([record('r2', 0, [])], T)
    const mine = tl.started('week', 1, T + 30)
    tl.ended(answer(30, 140, mine), T + 140)
    // Nothing is given before every record reached it: r2's reached 0 ms.
    expect(s.log).toEqual([])
    // r2 ran calls from 10 to 50 and from 20 to 160, and one from 150 in flight at 170; r3's record reached 120.
    tl.heard([record('r2', 170, [call(10, 50), call(20, 160), call(150, null)]), record('r3', 120, [call(40, 100)])], T + 170)
    const k = kindId('week')
    expect(s.log).toEqual([`start ${k} 1`, `start ${k} 2`, `start ${k} 3`, `start ${k} 4`, 'end 1@50', 'end 4@100'])
    // r3's next record reaches 200: the rest, the learner's own call among them, in time order.
    tl.heard([record('r2', 210, [call(20, 160), call(150, 190)]), record('r3', 200, [call(40, 100)])], T + 210)
    expect(s.log.slice(6)).toEqual(['end 3@140', `start ${k} 2`, 'end 2@160', 'end 5@190'])
  })

  it('gives a call once that several records carry, two calls alike with the same start among them, and a call seen in flight then ended under one serial', () => {
    const s = sink()
    const tl = new AnswerTimeline(s, KEEP_MS)
    tl.heard([record('r2', 0, [])], T)
    tl.heard([record('r2', 100, [call(10, 60), call(10, null), call(20, null)])], T + 100)
    tl.heard([record('r2', 200, [call(10, 60), call(10, 180), call(20, 150)])], T + 200)
    tl.heard([record('r2', 300, [call(10, 60), call(10, 180), call(20, 150)])], T + 300)
    expect(s.log.filter((l) => l.startsWith('start'))).toHaveLength(3)
    expect(s.log.filter((l) => l.startsWith('end'))).toEqual(['end 1@60', 'end 3@150', 'end 2@180'])
  })

  it('with no record heard of for keepMs (the store out), gives its own calls at once again, holding none back', () => {
    const s = sink()
    const tl = new AnswerTimeline(s, KEEP_MS)
    tl.heard([record('r2', 0, [call(0, null)])], T)
    const held = tl.started('week', 2, T + 100)
    expect(s.log).toEqual([`start ${kindId('week')} 1`])
    tl.ended(answer(100, 200, held), T + 200)
    tl.started('week', 2, T + KEEP_MS + 1)
    expect(tl.merging).toBe(false)
    expect(s.log.slice(1)).toEqual(['end 1@0', `start ${kindId('week')} 2`, 'end 2@200', `start ${kindId('week')} 2`])
  })

  it('carries in its record this replica\'s calls ended within keepMs and those in flight', () => {
    const tl = new AnswerTimeline(sink(), KEEP_MS)
    const old = tl.started('week', 1, T)
    tl.ended(answer(0, 100, old), T + 100)
    const recent = tl.started('week', 1, T + 6_000)
    tl.ended(answer(6_000, 6_100, recent), T + 6_100)
    tl.started('week', 1, T + 6_150)
    expect(decodeCalls(tl.calls(T + 6_200))?.calls).toEqual([call(6_000, 6_100), { ...call(6_150, null), outcome: 'other' }])
  })

  it('on the learner, keeps a replica in play for keepMs while it has no record (it holds no seat between its calls), and gives its calls when it comes back', () => {
    const s = sink()
    const tl = new AnswerTimeline(s, KEEP_MS)
    tl.heard([record('r2', 0, [call(0, 40)])], T)
    tl.heard([record('r2', 100, [call(0, 40)])], T + 100)
    // r2 gave its seats back: the learner's renewal answers no other record.
    tl.heard([], T + 1_000)
    expect(tl.merging).toBe(true)
    const mine = tl.started('week', 1, T + 1_100)
    tl.ended(answer(1_100, 1_300, mine), T + 1_300)
    tl.heard([record('r2', 1_400, [call(1_200, null)])], T + 1_400)
    const k = kindId('week')
    // The learner's call is weighed beside r2's, started while it was in flight.
    expect(s.log).toEqual([`start ${k} 1`, 'end 1@40', `start ${k} 1`, `start ${k} 2`, 'end 2@1300'])
    tl.heard([], T + 1_400 + KEEP_MS + 1)
    expect(tl.merging).toBe(false)
  })

  it('once it no longer learns, ends the other replicas\' calls it started and gives its own at once again', () => {
    const s = sink()
    const tl = new AnswerTimeline(s, KEEP_MS)
    tl.heard([record('r2', 0, [])], T)
    tl.heard([record('r2', 100, [call(50, null)])], T + 100)
    const mine = tl.started('week', 5, T + 120)
    tl.heard(null, T + 130)
    expect(tl.merging).toBe(false)
    // r2's call ends where the evidence had reached; the learner's own starts with the load its seats said.
    expect(s.log).toEqual([`start ${kindId('week')} 1`, 'end 1@100', `start ${kindId('week')} 5`])
    tl.ended(answer(120, 200, mine), T + 200)
    expect(s.log.at(-1)).toBe('end 2@200')
  })
})
