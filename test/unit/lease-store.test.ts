import { describe, expect, it } from 'vitest'
import type { LeaseAsk } from '../../src/platform/governor/lease-store.js'
import { grant } from '../helpers/memory-lease-store.js'

// The one rule both lease stores follow (the Redis script's, as the memory store's `grant` spells it): it drops the
// records that lapsed and grants what a run asks within the seats no other run holds or uses.

type Stored = Map<string, { expiry: number; lease: number; inFlight: number; text: string }>

const NOW = 1_000_000

function ask(run: string, a: Partial<LeaseAsk> = {}): LeaseAsk {
  return { run, record: '0|0|0.00|0|', inFlight: 0, need: 1, ask: 1, limit: 8, held: 0, leaseMs: 600, limitRecord: null, learns: false, ...a }
}

function stored(...records: [string, { lease: number; inFlight?: number; expiry?: number }][]): Stored {
  return new Map(records.map(([run, r]) => [run, { expiry: r.expiry ?? NOW + 600, lease: r.lease, inFlight: r.inFlight ?? 0, text: `${r.lease}|...` }]))
}

describe('grant', () => {
  it('grants what a run asks within the seats no other run holds or uses, and writes its record', () => {
    const s = stored(['other', { lease: 3, inFlight: 1 }], ['busy', { lease: 1, inFlight: 2 }])
    // Others hold max(lease, in flight): 3 + 2 of 8.
    expect(grant(s, ask('me', { ask: 5, need: 5, inFlight: 1, record: '1|5|0.00|0|' }), NOW)).toEqual({ granted: 3, free: 0, known: false })
    expect(s.get('me')).toEqual({ expiry: NOW + 600, lease: 3, inFlight: 1, text: '3|1|5|0.00|0|' })
    expect(grant(s, ask('me', { ask: 2 }), NOW)).toMatchObject({ granted: 2, free: 1, known: true })
  })

  it('says how many seats are left free after the grant, counting the run\'s calls in flight past its lease', () => {
    expect(grant(stored(), ask('me', { ask: 2, inFlight: 5, need: 5 }), NOW)).toEqual({ granted: 2, free: 8 - 5, known: false })
    expect(grant(stored(), ask('me', { ask: 2, inFlight: 1 }), NOW)).toEqual({ granted: 2, free: 6, known: false })
  })

  it('grants nothing, not less than nothing, when others hold the limit or more (a limit that fell)', () => {
    const s = stored(['other', { lease: 10 }])
    expect(grant(s, ask('me', { ask: 3 }), NOW)).toEqual({ granted: 0, free: -2, known: false })
  })

  it('frees the lease of a record that lapsed, counts its calls in flight for one lease more (the platform works on), then drops it; a record lives through its expiry', () => {
    const s = stored(['lapsed', { lease: 6, inFlight: 2, expiry: NOW - 1 }], ['gone', { lease: 3, inFlight: 3, expiry: NOW - 601 }], ['live', { lease: 1, expiry: NOW }])
    expect(grant(s, ask('me', { ask: 8 }), NOW)).toMatchObject({ granted: 5 })
    expect([...s.keys()].sort()).toEqual(['lapsed', 'live', 'me'])
  })

  it('grants a run it has no record of no more than it held (the store lost it: a restart, a flush)', () => {
    const s = stored()
    expect(grant(s, ask('me', { ask: 6, held: 2 }), NOW)).toEqual({ granted: 2, free: 6, known: false })
    // Known again from then on: what it asks.
    expect(grant(s, ask('me', { ask: 6, held: 2 }), NOW)).toMatchObject({ granted: 6, known: true })
    // A run that held nothing is new: what it asks.
    expect(grant(stored(), ask('new', { ask: 6, held: 0 }), NOW)).toMatchObject({ granted: 6, known: false })
  })

  it('keeps no record of a run that holds, uses and needs nothing; keeps one that still has calls in flight', () => {
    const s = stored(['me', { lease: 2 }])
    expect(grant(s, ask('me', { ask: 0, need: 0, inFlight: 0 }), NOW)).toMatchObject({ granted: 0, known: true })
    expect(s.has('me')).toBe(false)
    grant(s, ask('me', { ask: 0, need: 1, inFlight: 1 }), NOW)
    expect(s.get('me')).toMatchObject({ lease: 0, inFlight: 1 })
    // Its calls in flight are occupied seats for the others.
    expect(grant(s, ask('other', { ask: 8 }), NOW)).toMatchObject({ granted: 7 })
  })

  it('gives a run back its own seats when it asks again: its own record is not counted against it', () => {
    const s = stored(['me', { lease: 8, inFlight: 8 }])
    expect(grant(s, ask('me', { ask: 8, inFlight: 8, need: 8, held: 8 }), NOW)).toMatchObject({ granted: 8, known: true })
  })
})
