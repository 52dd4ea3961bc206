import { describe, expect, it } from 'vitest'
import { cutAtFullBound, partOfBound } from '../../src/http/connection-teams.js'

// Which answers under way a full listener cuts for a connection that came past its bound:
// of the team holding the most, its longest silent, down to no less than its part of the
// bound (an even split between the teams holding answers and the newcomer's), at most the
// room asked; none while no team holds more than its part. Connections of no team are one team.

const busy = (team: string | undefined, n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ conn: `${team ?? '-'}${i}`, team, after: from + i }))

describe('partOfBound', () => {
  it('splits the bound evenly between the teams holding answers and one more, rounded up', () => {
    expect(partOfBound(64, 1)).toBe(32)
    expect(partOfBound(64, 2)).toBe(22)
    expect(partOfBound(2, 2)).toBe(1)
    expect(partOfBound(4096, 0)).toBe(4096)
  })
})

describe('cutAtFullBound', () => {
  it('cuts the longest silent of one team holding the whole bound, at most the room', () => {
    expect(cutAtFullBound(busy('a', 64).reverse(), 64, 8)).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7'])
  })

  it('takes the team holding the most down to its part, no further', () => {
    // a: 40, b: 24 of 64; a's part with two teams holding: 22.
    expect(cutAtFullBound([...busy('b', 24), ...busy('a', 40, 100)], 64, 64)).toHaveLength(18)
    expect(cutAtFullBound([...busy('b', 24), ...busy('a', 40, 100)], 64, 64).every((c) => c.startsWith('a'))).toBe(true)
  })

  it('cuts nothing while no team holds more than its part', () => {
    expect(cutAtFullBound([...busy('a', 1), ...busy('b', 1)], 2, 1)).toEqual([])
    // Three teams evenly: a newcomer of a fourth would be owed 16 of 64, so the one holding the most gives up 6.
    expect(cutAtFullBound([...busy('b', 21), ...busy('c', 21), ...busy('a', 22, 100)], 64, 8)).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5'])
    expect(cutAtFullBound([...busy('a', 16), ...busy('b', 16), ...busy('c', 16), ...busy('d', 16)], 64, 8)).toHaveLength(3)
    expect(cutAtFullBound([...busy('a', 1), ...busy('b', 1), ...busy('c', 1), ...busy('d', 1)], 4, 1)).toEqual([])
  })

  it('counts the connections of no team as one team of their own', () => {
    expect(cutAtFullBound(busy(undefined, 64), 64, 8)).toEqual(['-0', '-1', '-2', '-3', '-4', '-5', '-6', '-7'])
    // a's 20 of 64 beside 44 of no team: those of no team are past their part (22), a is not.
    expect(cutAtFullBound([...busy('a', 20), ...busy(undefined, 44, 100)], 64, 64)).toHaveLength(22)
    expect(cutAtFullBound([...busy('a', 20), ...busy(undefined, 44, 100)], 64, 64).every((c) => c.startsWith('-'))).toBe(true)
  })
})
