import { describe, expect, it } from 'vitest'
import { SANDBOX_ACCOUNTS } from '../../src/sandbox/accounts.js'
import { CampaignCatalog, type NewCampaign } from '../../src/sandbox/catalog.js'
import { newCampaign } from '../helpers/sandbox-gateway.js'

// The sandbox stands in for a platform whose campaign ids are unique: a long soak's writes
// to one account must never replace another account's campaigns.

const campaign = (userId: number, n: number): NewCampaign =>
  newCampaign(userId, { name: `soak ${n}`, clickUrl: 'https://example.com', autoStart: true, dates: { from: '2026-01-01', to: '2026-01-31' }, country: 'LT', bid: 1, creativeSetIds: [] })

describe('the sandbox campaign catalog', () => {
  it('gives account 100 its 1,200 new campaigns without taking an id of account 101', () => {
    const catalog = new CampaignCatalog(1, SANDBOX_ACCOUNTS)
    const before = catalog.listOf(101).map((c) => c.id)
    expect(before.length).toBeGreaterThan(0)
    const ids = Array.from({ length: 1200 }, (_, n) => catalog.create(campaign(100, n)).id)
    expect(new Set(ids).size).toBe(1200)
    expect(catalog.listOf(101).map((c) => c.id)).toEqual(before)
    expect(ids.filter((id) => before.includes(id))).toEqual([])
  })
})
