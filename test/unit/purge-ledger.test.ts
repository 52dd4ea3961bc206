import { describe, expect, it } from 'vitest'
import { ANY_ADVERTISER, FILL_CLOCK_SKEW_MS } from '../../src/cache/cache-entry.js'
import { MAX_PURGE_RECORDS, PurgeLedger, type Purge } from '../../src/cache/purge-ledger.js'

// A purge is final: an entry filled before the last purge that reaches it is refused.

const T = 1_767_225_600_000
const KEEP = 3_600_000

function ledger(now = T): PurgeLedger {
  return new PurgeLedger({ keepMs: KEEP, now: () => now })
}

describe('PurgeLedger', () => {
  it.each<[string, Purge[], { fetchedAt: number; calledAt?: number; advertiserIds: number[] }, boolean]>([
    ['takes anything without a purge', [], { fetchedAt: T - 1000, advertiserIds: [101] }, false],
    ['refuses an entry filled before a purge of its advertiser', [{ at: T, advertiserId: 101 }], { fetchedAt: T - 1, advertiserIds: [101] }, true],
    ['takes an entry filled after it', [{ at: T, advertiserId: 101 }], { fetchedAt: T + 1, advertiserIds: [101] }, false],
    ['takes an entry filled at its instant (a frozen test clock)', [{ at: T, advertiserId: 101 }], { fetchedAt: T, advertiserIds: [101] }, false],
    ['takes another advertiser\'s entry', [{ at: T, advertiserId: 101 }], { fetchedAt: T - 1, advertiserIds: [102] }, false],
    ['refuses an entry of several advertisers when one was purged', [{ at: T, advertiserId: 102 }], { fetchedAt: T - 1, advertiserIds: [101, 102] }, true],
    ['refuses an entry of owners not known filled before a purge of any advertiser', [{ at: T, advertiserId: 102 }], { fetchedAt: T - 1, advertiserIds: [ANY_ADVERTISER] }, true],
    ['takes an entry of owners not known filled after the last purge of any advertiser', [{ at: T - 10, advertiserId: 101 }, { at: T - 5, advertiserId: 102 }], { fetchedAt: T - 1, advertiserIds: [ANY_ADVERTISER] }, false],
    ['refuses an entry fetched after a purge of its advertiser whose fill was asked before it', [{ at: T, advertiserId: 101 }], { fetchedAt: T + 1, calledAt: T - 1, advertiserIds: [101] }, true],
    ['takes an entry whose fill was asked after the purge', [{ at: T, advertiserId: 101 }], { fetchedAt: T + 2, calledAt: T + 1, advertiserIds: [101] }, false],
    ['refuses every entry filled before a purge of everything', [{ at: T }], { fetchedAt: T - 1, advertiserIds: [] }, true],
    ['keeps the later of two purges', [{ at: T, advertiserId: 101 }, { at: T - 5000, advertiserId: 101 }], { fetchedAt: T - 1, advertiserIds: [101] }, true],
    ['dates a purge no further ahead than clocks differ', [{ at: T + 10 * FILL_CLOCK_SKEW_MS }], { fetchedAt: T + 2 * FILL_CLOCK_SKEW_MS, advertiserIds: [] }, false],
  ])('%s', (_name, purges, entry, refused) => {
    const l = ledger()
    for (const p of purges) l.note(p)
    expect(l.refuses(entry)).toBe(refused)
  })

  it('forgets the purges older than the longest life of an entry', () => {
    let now = T
    const l = new PurgeLedger({ keepMs: KEEP, now: () => now })
    l.note({ at: T, advertiserId: 101 })
    now = T + KEEP + 1
    l.note({ at: now, advertiserId: 102 })
    expect(l.size).toBe(1)
  })

  it('stays within its bound by folding the oldest into a purge of everything: more misses, never a purged entry', () => {
    const l = ledger(T + MAX_PURGE_RECORDS + 10)
    for (let i = 0; i <= MAX_PURGE_RECORDS; i++) l.note({ at: T + i, advertiserId: i + 1 })
    expect(l.size).toBe(MAX_PURGE_RECORDS)
    // Advertiser 1, purged at T and forgotten: an entry of it from before is still refused.
    expect(l.refuses({ fetchedAt: T - 1, advertiserIds: [1] })).toBe(true)
    expect(l.refuses({ fetchedAt: T - 1, advertiserIds: [999_999] })).toBe(true)
    expect(l.refuses({ fetchedAt: T + 1, advertiserIds: [999_999] })).toBe(false)
  })
})
