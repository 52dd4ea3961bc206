import { describe, expect, it } from 'vitest'
import { TeamPartsLru } from '../../src/cache/team-parts-lru.js'

// Values bounded in bytes, each configured team an even part once full (the watches of refresh ahead).

function lru(maxBytes: number, teams = ['a', 'b']) {
  const gone: string[] = []
  const store = new TeamPartsLru<string>({ maxBytes, teams: () => teams.length, configured: (t) => teams.includes(t), size: (v) => v.length, dispose: (v) => gone.push(v) })
  return { store, gone, keys: () => [...store.entries()].map(([k]) => k) }
}

describe('TeamPartsLru', () => {
  it('is one LRU for one team', () => {
    const { store, gone } = lru(3, ['a'])
    store.set('1', 'x', 'a')
    store.set('2', 'y', 'a')
    store.set('3', 'z', 'a')
    expect(store.get('1')).toBe('x')
    store.set('4', 'w', 'a')
    expect(gone).toEqual(['y'])
    expect(store.bytes).toBe(3)
  })

  it("makes room from the team most past its part, its least recently used first: one team's many values never push out another's within its part", () => {
    const { store, keys } = lru(4)
    store.set('b1', 'x', 'b')
    for (let i = 0; i < 10; i++) store.set(`a${i}`, 'x', 'a')
    expect(keys().sort()).toEqual(['a7', 'a8', 'a9', 'b1'])
    // b, within its part (2 of 4), its new value counted with it, takes room from a.
    store.set('b2', 'x', 'b')
    expect(keys().sort()).toEqual(['a8', 'a9', 'b1', 'b2'])
  })

  it("keeps no value of a team past its part that only values of teams within theirs would make room for; a team not configured goes first", () => {
    const { store, keys } = lru(4)
    store.set('b1', 'xx', 'b')
    store.set('a1', 'xx', 'a')
    expect(store.set('a2', 'xxx', 'a')).toBe(false)
    expect(keys().sort()).toEqual(['a1', 'b1'])
    const other = lru(4)
    other.store.set('gone', 'xx', 'removed')
    other.store.set('a1', 'x', 'a')
    other.store.set('b1', 'xx', 'b')
    expect(other.keys().sort()).toEqual(['a1', 'b1'])
  })

  it('makes a value set again as it is held only the most recently used: not disposed, no room made', () => {
    const { store, gone, keys } = lru(2, ['a'])
    store.set('1', 'x', 'a')
    store.set('2', 'y', 'a')
    expect(store.set('1', 'x', 'a')).toBe(true)
    store.set('3', 'z', 'a')
    expect(gone).toEqual(['y'])
    expect([store.peek('1'), store.size, keys().sort()]).toEqual(['x', 2, ['1', '3']])
    expect([store.delete('1'), store.delete('1')]).toEqual([true, false])
  })

  // TieredStore.shareKept stores them in Redis in this order once it is back: the newest copies first.
  it('gives its values the most recently set first, whichever team holds them', () => {
    const { store, keys } = lru(10)
    store.set('1', 'x', 'a')
    store.set('2', 'x', 'b')
    store.set('3', 'x', 'a')
    store.get('1', 'b')
    store.set('2', 'y', 'b')
    expect(keys()).toEqual(['2', '3', '1'])
  })

  it('disposes of a value replaced, deleted or cleared', () => {
    const { store, gone } = lru(10)
    store.set('1', 'x', 'a')
    store.set('1', 'y', 'b')
    store.delete('1')
    store.set('2', 'z', 'a')
    store.clear()
    expect(gone).toEqual(['x', 'y', 'z'])
    expect(store.bytes).toBe(0)
  })

  it('keeps the teams of a value set in place of another: it stays while one of them holds it', () => {
    const { store, gone, keys } = lru(2)
    store.set('1', 'x', 'a')
    store.set('1', 'y', 'b')
    store.set('2', 'z', 'b')
    // b, past its part, lets go of '1' (a still holds it: nothing freed) and of '2'.
    store.set('3', 'w', 'b')
    expect([keys().sort(), gone]).toEqual([['1', '3'], ['x', 'z']])
    // a's new value: a, past its part with it, lets go of '1', its last holder.
    store.set('4', 'v', 'a')
    expect([keys().sort(), gone]).toEqual([['3', '4'], ['x', 'z', 'y']])
  })

  it("counts a value on every team that used it: another team's flood pushes out its own, never one a team within its part holds, whoever set or used it last", () => {
    const { store, gone, keys } = lru(4)
    store.set('shared', 'x', 'a')
    expect(store.get('shared', 'b')).toBe('x')
    // a uses it last, then floods: it lets go of the value, b still holds it.
    expect(store.get('shared', 'a')).toBe('x')
    expect(gone).toEqual([])
    for (let i = 0; i < 10; i++) store.set(`a${i}`, 'x', 'a')
    expect(keys().sort()).toEqual(['a7', 'a8', 'a9', 'shared'])
    expect(gone).toHaveLength(7)
    expect([store.bytes, store.size]).toEqual([4, 4])
    expect(store.get('shared', 'b')).toBe('x')
    expect(store.get('never', 'b')).toBeUndefined()
  })

  it('counts a shared value whole on each team that holds it, and frees its bytes only when the last lets go of it', () => {
    const { store, gone, keys } = lru(6, ['a', 'b', 'c'])
    store.set('s', 'xx', 'a')
    store.get('s', 'b')
    store.set('b1', 'xx', 'b')
    store.set('a1', 'xx', 'a')
    // 6 bytes held; a and b each count 4 against a part of 2. c's new byte: a lets go of s first (b holds it: nothing
    // freed), then b does, and s leaves.
    expect([store.bytes, store.set('c1', 'x', 'c')]).toEqual([6, true])
    expect([keys().sort(), store.bytes, gone]).toEqual([['a1', 'b1', 'c1'], 5, ['xx']])
  })
})
