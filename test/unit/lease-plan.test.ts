import { describe, expect, it } from 'vitest'
import { ElsewhereCharges, LEARNER_MARGIN, decodeRecord, encodeRecord, leasePlan, type ReplicaRecord, type TeamRecord } from '../../src/platform/governor/lease-plan.js'

// What one replica makes of every replica's lease record (docs/governor.md, "Across replicas").

function team(name: string, t: Partial<TeamRecord> = {}): TeamRecord {
  return { team: name, weight: 1, held: 0, waiting: 0, cap: null, peak: 0, lingering: false, ...t }
}

function replica(run: string, teams: TeamRecord[], r: Partial<Omit<ReplicaRecord, 'run' | 'teams'>> = {}): ReplicaRecord {
  const inFlight = teams.reduce((n, t) => n + t.held, 0)
  return { run, lease: inFlight, inFlight, need: inFlight + teams.reduce((n, t) => n + t.waiting, 0), answered: 0, waited: false, teams, ...r }
}

describe('leasePlan: targets', () => {
  it('gives a replica alone the nominal shares of its teams, summed', () => {
    const mine = replica('r1', [team('a', { held: 2, waiting: 5 }), team('b', { weight: 3, held: 1, waiting: 9 })])
    const plan = leasePlan(mine, [], 8)
    expect(plan.targets).toEqual(new Map([['a', 2], ['b', 6]]))
    expect(plan.target).toBe(8)
    expect([plan.contended, plan.elsewhere, plan.owedElsewhere, plan.waitedElsewhere, plan.needsMost]).toEqual([false, 0, 0, false, null])
  })

  it('shares each team over every replica\'s teams, and splits its share between the replicas by their demand for it', () => {
    // Team a: 6 on r1 (3 held, 3 waiting), 2 on r2; team b: 8 on r2. 8 seats: a 4, b 4.
    const r1 = replica('r1', [team('a', { held: 3, waiting: 3 })])
    const r2 = replica('r2', [team('a', { held: 2 }), team('b', { held: 4, waiting: 4 })])
    const one = leasePlan(r1, [r2], 8)
    const two = leasePlan(r2, [r1], 8)
    expect(one.targets.get('a')).toBeCloseTo(3)
    expect(one.target).toBeCloseTo(3)
    expect(two.targets.get('a')).toBeCloseTo(1)
    expect(two.targets.get('b')).toBeCloseTo(4)
    expect(two.target).toBeCloseTo(5)
    // Both replicas work it out alike: the targets add up to the seats shared.
    expect(one.target + two.target).toBeCloseTo(8)
    expect([one.elsewhere, two.elsewhere]).toEqual([6, 3])
  })

  it('splits a team that only lingers between the replicas it lingers on', () => {
    const r1 = replica('r1', [team('idle', { lingering: true, peak: 2 }), team('busy', { held: 2, waiting: 2 })])
    const r2 = replica('r2', [team('idle', { lingering: true, peak: 1 })])
    const plan = leasePlan(r1, [r2], 8)
    // idle wants its peaks (3 in all), busy what it holds and waits for (4).
    expect(plan.targets.get('idle')).toBeCloseTo(1.5)
    expect(plan.targets.get('busy')).toBeCloseTo(4)
    expect(leasePlan(r2, [r1], 8).target).toBeCloseTo(1.5)
  })

  it('holds a team to the lowest ceiling any replica carries, and weighs it by the highest weight', () => {
    const r1 = replica('r1', [team('a', { held: 4, waiting: 4, cap: 3 }), team('b', { held: 4, waiting: 4 })])
    const r2 = replica('r2', [team('a', { held: 1, cap: 5, weight: 3 })])
    const plan = leasePlan(r1, [r2], 12)
    // a: within 3 (of its weighted 9 of 12); b what it holds and waits for, 8.
    expect(plan.targets.get('a')! + leasePlan(r2, [r1], 12).targets.get('a')!).toBeCloseTo(3)
    expect(plan.targets.get('b')).toBeCloseTo(8)
  })

  it('gives the seats of a due that its replica\'s calls do not want to the replicas that want more, by need past target', () => {
    // Shares of 12: idle (lingering, peak 4) 11/3, x 1, b 11/3, c 11/3. r1 is due what its one call wants,
    // and the 11/3 seats its lingering team leaves are split between r2 and r3 by need past target (19/3 and 1/3).
    const r1 = replica('r1', [team('idle', { lingering: true, peak: 4 }), team('x', { held: 1 })])
    const r2 = replica('r2', [team('b', { held: 4, waiting: 6 })])
    const r3 = replica('r3', [team('c', { held: 2, waiting: 2 })])
    const dues = [leasePlan(r1, [r2, r3], 12), leasePlan(r2, [r1, r3], 12), leasePlan(r3, [r1, r2], 12)].map((p) => p.due)
    expect(leasePlan(r1, [r2, r3], 12).target).toBeCloseTo(14 / 3)
    expect(dues[0]).toBeCloseTo(1)
    expect(dues[1]).toBeCloseTo(11 / 3 + (11 / 3) * (19 / 20))
    expect(dues[2]).toBeCloseTo(11 / 3 + (11 / 3) * (1 / 20))
    expect(dues[0]! + dues[1]! + dues[2]!).toBeCloseTo(12)
  })

  it('dues every replica what its calls want where each wants less than its parts: the parts past them are no replica\'s', () => {
    // Shares of 4: x 1, idle (lingering, peak 2) 1.5, y (peak 3) 1.5. r1's parts 2.5, its calls 1; r2's 1.5, its calls 1.
    const r1 = replica('r1', [team('idle', { lingering: true, peak: 2 }), team('x', { held: 1 })])
    const r2 = replica('r2', [team('y', { held: 1, peak: 3 })])
    expect([leasePlan(r1, [r2], 4).target, leasePlan(r2, [r1], 4).target]).toEqual([2.5, 1.5])
    expect([leasePlan(r1, [r2], 4).due, leasePlan(r2, [r1], 4).due]).toEqual([1, 1])
  })

  it('lends a waiting team\'s parts past its calls to the teams that want more, wherever their calls wait', () => {
    // Shares of 9 (each team wants 3 or more): quick 3 (its peak 6, its calls 1 now), wide 3, one 3. quick waits,
    // so its 2 seats past its call are owed to no one: lent by weight to wide and one (1 each), each placed where
    // its calls wait past its parts. Kept on r1 beside quick, they went to wide alone there.
    const r1 = replica('r1', [team('quick', { waiting: 1, peak: 6 }), team('wide', { held: 1, waiting: 4 })])
    const r2 = replica('r2', [team('wide', { held: 1, waiting: 4 })])
    const r3 = replica('r3', [team('one', { held: 3, waiting: 8 })])
    const dues = [leasePlan(r1, [r2, r3], 9), leasePlan(r2, [r1, r3], 9), leasePlan(r3, [r1, r2], 9)].map((p) => p.due)
    // r1: quick's 1, wide's 1.5 and half its 1 lent; r2: wide's 1.5 and the other half; r3: one's 3 and its 1.
    expect(dues[0]).toBeCloseTo(3)
    expect(dues[1]).toBeCloseTo(2)
    expect(dues[2]).toBeCloseTo(4)
    // A team that waits for nothing keeps its parts: owed to it.
    const idle = replica('r1', [team('quick', { lingering: true, peak: 6 }), team('wide', { held: 1, waiting: 4 })])
    expect(leasePlan(idle, [r2, r3], 9).due).toBeCloseTo(1.5 + 3)
  })

  it('shares the limit in force between the teams', () => {
    const plan = leasePlan(replica('r1', [team('a', { held: 1, waiting: 9 }), team('b', { held: 1, waiting: 9 })]), [], 6)
    expect(plan.target).toBe(6)
  })
})

describe('leasePlan: what a replica knows of the others', () => {
  it('counts as owed elsewhere the seats of the other replicas\' teams that wait for nothing, up to their peaks', () => {
    const mine = replica('r1', [team('a', { held: 6, waiting: 4 })])
    const other = replica('r2', [team('dash', { lingering: true, peak: 3 }), team('busy', { held: 1, waiting: 5, peak: 6 })])
    const plan = leasePlan(mine, [other], 12)
    // dash's share is 4 (12 over three teams); it came back for 3 within the linger. busy waits: owed nothing.
    expect(plan.owedElsewhere).toBeCloseTo(3)
    // This replica's own teams are not owed elsewhere.
    expect(leasePlan(mine, [], 12).owedElsewhere).toBe(0)
  })

  it('is contended when another replica needs more than its lease, and names the one that needs most', () => {
    const mine = replica('r1', [team('a', { held: 4 })])
    const fed = replica('r2', [team('b', { held: 2 })], { lease: 2, need: 2 })
    const short = replica('r3', [team('c', { held: 1, waiting: 1 })], { lease: 1, need: 2 })
    const shorter = replica('r4', [team('d', { held: 1, waiting: 4 })], { lease: 1, need: 5, waited: true })
    expect(leasePlan(mine, [fed], 8)).toMatchObject({ contended: false, needsMost: null, waitedElsewhere: false })
    expect(leasePlan(mine, [fed, short, shorter], 8)).toMatchObject({ contended: true, needsMost: 'r4', waitedElsewhere: true, elsewhere: 4 })
  })

  // Five replicas of one team on a limit of 2, each with calls waiting or in flight: each is due less than a seat, and
  // the seat its due rounds to goes in turns.
  it('tells of seats given back the replica that lacks most, and among those that lack alike with less than a seat due, the one furthest behind its due', () => {
    const waiting = (run: string, behind: number, calls = 1) => replica(run, [team('a', { waiting: calls })], { lease: 0, need: calls, behind })
    const holding = (run: string) => replica(run, [team('a', { held: 1 })], { lease: 1, need: 1 })
    const [r1, r2, r3, r4] = [waiting('r1', 0.3), waiting('r2', 0.8), waiting('r3', 0.8), holding('r4')]
    const mine = holding('r5')
    expect(leasePlan(mine, [r1, r2, r3, r4], 2)).toMatchObject({ contended: true, needsMost: 'r2' })
    expect(leasePlan(mine, [r3, r2, r1, r4], 2).needsMost).toBe('r3')
    // Behind alike (none: a record of the release before), the first; lacking more, whatever it is behind.
    expect(leasePlan(mine, [waiting('r2', 0), waiting('r1', 0), r4], 2).needsMost).toBe('r2')
    expect(leasePlan(mine, [r2, waiting('r6', 0, 3), r4], 2).needsMost).toBe('r6')
  })

  it('makes the replica whose calls answered most the learner, the smallest run id on a tie, and a replica alone', () => {
    const r1 = replica('r1', [], { answered: 3 })
    const r2 = replica('r2', [], { answered: 7.5 })
    const r3 = replica('r3', [], { answered: 7.5 })
    expect(leasePlan(r1, [], 4).learner).toBe(true)
    expect(leasePlan(r1, [r2, r3], 4).learner).toBe(false)
    expect(leasePlan(r2, [r1, r3], 4).learner).toBe(true)
    expect(leasePlan(r3, [r1, r2], 4).learner).toBe(false)
    // Every replica names the same one.
    expect([r1, r2, r3].filter((r) => leasePlan(r, [r1, r2, r3].filter((o) => o !== r), 4).learner)).toEqual([r2])
  })

  it('keeps the writer of the shared limit the learner while it answers at least 1/LEARNER_MARGIN of the most; with none (no record written within a lease\'s life), the one that answered most', () => {
    const r1 = replica('r1', [], { answered: 10 })
    const r2 = replica('r2', [], { answered: 10 * LEARNER_MARGIN - 1 })
    const r3 = replica('r3', [], { answered: 10 * LEARNER_MARGIN + 1 })
    expect(leasePlan(r1, [r2], 4, 'r1')).toMatchObject({ learner: true, learnerRun: 'r1' })
    expect(leasePlan(r1, [r2], 4, null)).toMatchObject({ learner: false, learnerRun: 'r2' })
    expect(leasePlan(r1, [r3], 4, 'r1')).toMatchObject({ learner: false, learnerRun: 'r3' })
  })

  // What a start learned (the levels' answers a second, a refusal) is its learner's own: a
  // replica that took over in the start went on in cruise from the record's limit, and a closed
  // loop at the limit shows no room (closed-loop-shapes.ts seed 26: 22 to 24 of 47 workers on 4
  // replicas, the learner changed six times in the start's first 10 s).
  it('keeps the writer of the shared limit the learner through its start, however much more another answers', () => {
    const r1 = replica('r1', [], { answered: 10 })
    const r3 = replica('r3', [], { answered: 10 * LEARNER_MARGIN + 1 })
    expect(leasePlan(r1, [r3], 4, 'r1', true)).toMatchObject({ learner: true, learnerRun: 'r1' })
    expect(leasePlan(r3, [r1], 4, 'r1', true)).toMatchObject({ learner: false, learnerRun: 'r1' })
    expect(leasePlan(r3, [r1], 4, 'r1', false)).toMatchObject({ learner: true, learnerRun: 'r3' })
  })

  it('keeps the writer of the shared limit the learner while its record is away (the store drops a record with nothing in flight or needed): another replica does not learn beside it', () => {
    const r2 = replica('r2', [], { answered: 3 })
    expect(leasePlan(r2, [], 4, 'r1')).toMatchObject({ learner: false, learnerRun: 'r1' })
    expect(leasePlan(r2, [], 4, null)).toMatchObject({ learner: true, learnerRun: 'r2' })
  })
})

describe('encodeRecord and decodeRecord', () => {
  it('give back the record encoded, teams and all', () => {
    const record: ReplicaRecord = {
      run: 'AbC_12-x~r4nd0m',
      lease: 5,
      inFlight: 3,
      need: 9,
      answered: 12.25,
      waited: true,
      teams: [team('a', { weight: 3, cap: 4, held: 2, waiting: 6, lingering: true, peak: 8 }), team('(gateway)', { held: 1, peak: 1 })],
    }
    const { run, ...stored } = record
    const text = encodeRecord(stored)
    expect(text).toBe('5|3|9|12.25|1|a,3,4,2,6,1,8;(gateway),1,0,1,0,0,1')
    expect(decodeRecord(run, text)).toEqual(record)
    expect(decodeRecord('r', encodeRecord({ lease: 0, inFlight: 0, need: 0, answered: 0, waited: false, teams: [] }))).toEqual({ run: 'r', lease: 0, inFlight: 0, need: 0, answered: 0, waited: false, teams: [] })
  })

  // A record of the release before has no field for the seat-seconds behind; one of this release has it only when behind, so the release
  // before reads it unless the replica waits for its turn (then it reads no record: it misses that replica's demand,
  // never its seats, which the store's script counts).
  it('carries the seat-seconds a replica is behind its due after `waited`, only when some, and reads a record without them', () => {
    const text = encodeRecord({ lease: 0, inFlight: 0, need: 1, answered: 0, waited: true, behind: 1.234, teams: [team('a', { waiting: 1, peak: 1 })] })
    expect(text).toBe('0|0|1|0.00|1|1.23|a,1,0,0,1,0,1')
    expect(decodeRecord('r', text)).toMatchObject({ behind: 1.23, waited: true, teams: [team('a', { waiting: 1, peak: 1 })] })
    expect(encodeRecord({ lease: 0, inFlight: 0, need: 1, answered: 0, waited: false, behind: 0.001, teams: [] })).toBe('0|0|1|0.00|0|')
    expect(decodeRecord('r', '0|0|1|0.00|0|a,1,0,0,1,0,1')).not.toHaveProperty('behind')
    expect(decodeRecord('r', '0|0|1|0.00|0|1.5|')).toMatchObject({ behind: 1.5, teams: [] })
  })

  it('carries a replica\'s calls past `#` (answer-timeline.ts)', () => {
    const text = encodeRecord({ lease: 1, inFlight: 1, need: 1, answered: 1, waited: false, teams: [team('a', { held: 1, peak: 1 })], calls: 'kx;5,,abc,;9,2,abc,o' })
    expect(text).toBe('1|1|1|1.00|0|a,1,0,1,0,0,1#kx;5,,abc,;9,2,abc,o')
    expect(decodeRecord('r', text)).toMatchObject({ teams: [team('a', { held: 1, peak: 1 })], calls: 'kx;5,,abc,;9,2,abc,o' })
  })

  it('rounds the answers per second to hundredths', () => {
    const text = encodeRecord({ lease: 1, inFlight: 1, need: 1, answered: 1 / 3, waited: false, teams: [] })
    expect(decodeRecord('r', text)?.answered).toBe(0.33)
  })

  it.each([
    ['empty', ''],
    ['too few fields', '1|2|3|4|0'],
    ['a lease that is no number', 'x|0|0|0|0|'],
    ['a negative count', '-1|0|0|0|0|'],
    ['waited neither 0 nor 1', '1|0|0|0|2|'],
    ['a seat-time behind that is no number', '1|0|0|0|0|x|a,1,0,1,0,0,1'],
    ['a negative seat-time behind', '1|0|0|0|0|-1|a,1,0,1,0,0,1'],
    ['a seat-time behind of two points', '1|0|0|0|0|1.2.3|a,1,0,1,0,0,1'],
    ['a team of six fields', '1|0|0|0|0|a,1,0,1,0,0'],
    ['a team of nine fields', '1|0|0|0|0|a,1,0,1,0,0,1,1,1'],
    ['a team seat-time that is no number', '1|0|0|0|0|a,1,0,1,0,0,1,x'],
  ])('refuses a record with %s', (_what, text) => {
    expect(decodeRecord('r', text)).toBeNull()
  })

  // A record another writer of Redis left: its team figures must be numbers, or its NaN
  // would spread to every replica's shares (a replica reads every record).
  it.each([
    ['a team weight that is no number', '1|0|0|0|0|a,x,0,1,0,0,1'],
    ['a team\'s calls held that are no number', '1|0|0|0|0|a,1,0,x,0,0,1'],
    ['a negative team peak', '1|0|0|0|0|a,1,0,1,0,0,-5'],
  ])('refuses a record with %s', (_what, text) => {
    expect(decodeRecord('r', text)).toBeNull()
  })

  it('reads the seat-time of a team when the record has it (an older replica\'s has not)', () => {
    const text = encodeRecord({ lease: 0, inFlight: 1, need: 1, answered: 0, waited: false, teams: [team('a', { held: 1, peak: 1, seatMs: 1234 })] })
    expect(text).toBe('0|1|1|0.00|0|a,1,0,1,0,0,1,1234')
    expect(decodeRecord('r', text)?.teams).toEqual([team('a', { held: 1, peak: 1, seatMs: 1234 })])
  })

  it('takes a weight below 1 as 1 and a ceiling of 0 as none', () => {
    expect(decodeRecord('r', '1|1|1|0|0|a,0,0,1,0,0,1')?.teams).toEqual([team('a', { held: 1, peak: 1 })])
  })
})

describe('ElsewhereCharges', () => {
  it('adds up what each run\'s counter of seat-time grew by since it was first seen', () => {
    const charges = new ElsewhereCharges()
    charges.seen([replica('r2', [team('a', { seatMs: 5_000 }), team('b')])])
    expect(charges.totals.get('a')).toBe(0)
    charges.seen([replica('r2', [team('a', { seatMs: 5_600 })]), replica('r3', [team('a', { seatMs: 900 })])])
    charges.seen([replica('r2', [team('a', { seatMs: 6_000 })]), replica('r3', [team('a', { seatMs: 1_000 })])])
    expect(charges.totals.get('a')).toBe(1_100)
    expect(charges.totals.has('b')).toBe(false)
  })
})
