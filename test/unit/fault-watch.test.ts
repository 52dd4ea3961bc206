import { describe, expect, it } from 'vitest'
import type { Answer } from '../../src/platform/governor/answer-timeline.js'
import { FAULT_MS, FaultWatch } from '../../src/platform/governor/fault-watch.js'

const answer = (team: string, at: number, outcome: Answer['outcome'] = 'ok', startedAt = at - 100): Answer => ({ startedAt, at, team, kind: 'week', load: 1, window: 1, outcome })

describe('FaultWatch', () => {
  it('shows overload from two teams in a second, not from one team beside another answering well, as the moment of its last overload answer', () => {
    const one = new FaultWatch()
    one.shows(0, null)
    one.answered(answer('a', 100, 'overload'))
    for (let i = 0; i < 30; i++) one.answered(answer('b', 100 + i))
    expect(one.shows(FAULT_MS, null)).toBeNull()
    const two = new FaultWatch()
    two.shows(0, null)
    two.answered(answer('a', 100, 'overload'))
    two.answered(answer('b', 200, 'overload'))
    for (let i = 0; i < 30; i++) two.answered(answer('c', 100 + i))
    expect(two.shows(FAULT_MS, null)).toBe(200)
  })

  it('shows silence only while a call is overdue, after SILENCE_GAPS usual gaps, as the moment it is seen', () => {
    const watch = new FaultWatch()
    for (let at = 0; at <= 10_000; at += 100) watch.answered(answer('a', at))
    watch.shows(10_000, null)
    // The usual gap is 100 ms by now, so the silence is the FAULT_MS floor or a little past it.
    expect(watch.shows(11_500, null)).toBeNull()
    expect(watch.shows(11_000, 9000)).toBeNull()
    expect(watch.shows(11_500, 9000)).toBe(11_500)
  })

  it('cuts at most once a FAULT_MS; a cut is over once an answer came after it and a FAULT_MS passed', () => {
    const watch = new FaultWatch()
    expect(watch.cut(1000)).toBe(true)
    expect(watch.cut(1500)).toBe(false)
    expect(watch.over(2500)).toBe(false)
    watch.answered(answer('a', 1200))
    expect(watch.over(1900)).toBe(false)
    expect(watch.over(2000)).toBe(true)
  })

  // An outage's last second holds its last refusals and the first answers after it (seed 6 of
  // test/sim/fault-end.test.ts: the cut for those refusals came after two answers of 300 ms,
  // and then every seat held a call of 22 s): the answers after the last refusal end it.
  it('ends a cut for overload once an answer came after the last overload answer, though before the cut', () => {
    const watch = new FaultWatch()
    watch.shows(0, null)
    watch.answered(answer('a', 300, 'overload'))
    watch.answered(answer('b', 400, 'overload'))
    watch.answered(answer('a', 800))
    const at = watch.shows(FAULT_MS, null)
    expect(at).toBe(400)
    expect(watch.cut(FAULT_MS, at as number)).toBe(true)
    expect(watch.over(2 * FAULT_MS)).toBe(true)
    const again = new FaultWatch()
    again.shows(0, null)
    again.answered(answer('a', 800))
    again.answered(answer('a', 300, 'overload'))
    again.answered(answer('b', 900, 'overload'))
    again.cut(FAULT_MS, again.shows(FAULT_MS, null) as number)
    expect(again.over(2 * FAULT_MS), 'an answer before the last overload answer').toBe(false)
    again.heard(1_500, true)
    expect(again.over(2 * FAULT_MS), "another replica's answer after it").toBe(true)
  })

  it('marks the calls that met a fault, from the FAULT_MS it was judged over to its end, until forgotten', () => {
    const watch = new FaultWatch()
    watch.begin(5000)
    expect(watch.met(3000, 3900)).toBe(false)
    expect(watch.met(3000, 4100)).toBe(true)
    watch.end(6000)
    expect(watch.met(6100, 7000)).toBe(false)
    expect(watch.met(5500, 7000)).toBe(true)
    watch.forget(6001)
    expect(watch.met(5500, 7000)).toBe(false)
  })
})
