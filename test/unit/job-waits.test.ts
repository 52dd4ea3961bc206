import { describe, expect, it } from 'vitest'
import { JobWaits } from '../../src/jobs/job-waits.js'

// The waits of status calls (`?wait`) a replica holds: per team, then in all.

describe('JobWaits', () => {
  it('takes a team\'s waits up to its bound, then every team\'s up to the replica\'s, and gives each back once', () => {
    const told: [string, number][] = []
    const waits = new JobWaits({ maxWaitsPerTeam: 2, maxWaits: 3 }, (team, n) => told.push([team, n]))
    const a1 = waits.take('a')
    const a2 = waits.take('a')
    expect(waits.take('a')).toEqual({ full: 'team' })
    const b1 = waits.take('b')
    expect(waits.take('b')).toEqual({ full: 'replica' })
    expect([waits.waiting('a'), waits.waiting('b'), waits.waiting()]).toEqual([2, 1, 3])
    if (!('release' in a1) || !('release' in a2) || !('release' in b1)) throw new Error('a wait within the bounds was refused')
    a1.release()
    a1.release()
    expect([waits.waiting('a'), waits.waiting()]).toEqual([1, 2])
    expect('release' in waits.take('b')).toBe(true)
    a2.release()
    b1.release()
    expect(told).toEqual([['a', 1], ['a', 2], ['b', 1], ['a', 1], ['b', 2], ['a', 0], ['b', 1]])
  })
})
