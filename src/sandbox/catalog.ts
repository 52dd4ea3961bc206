import { HOME_COUNTRY } from './accounts.js'
import { formatIsoDay, parseIsoDay } from './dates.js'
import { between, hash32, pick } from './hash.js'
import type { SandboxAccount } from './types.js'

// Campaign ids past an account's 999th: above every account's own range.
const OVERFLOW_IDS = 900_000_000

export interface SandboxCampaign {
  id: number
  userId: number
  name: string
  status: 'active' | 'paused'
  adDomain: string
  clickUrl: string
  autoStart: boolean
  dates: { from: string; to: string }
  country: string
  bid: number
  budget: { daily: number; total: number }
  creativeSetIds: number[]
}

/** A creative set: the creatives a campaign shows, made in one account. */
export interface SandboxCreativeSet {
  id: number
  userId: number
  name: string
}

/** What a `banner/create` call supplies; the catalog adds the id and status. */
export type NewCampaign = Omit<SandboxCampaign, 'id' | 'status'>

const THEMES = [
  'Back to School', 'Summer Sale', 'Brand Awareness', 'App Installs', 'Holiday Promo',
  'Retargeting', 'Product Launch', 'Weekend Deals', 'Loyalty Push', 'Payday Offers',
] as const
const FORMATS = ['Display', 'Native', 'Rich Media', 'Mobile Banner'] as const
const FIRST_START_DAY = parseIsoDay('2025-09-01') ?? 0
const SALT = { count: 1, theme: 2, format: 3, start: 4, length: 5, bid: 6, budget: 7 } as const

/**
 * Campaigns by id. It starts with 3-6 generated campaigns per account, ids
 * `accountId * 1000 + n`, and then follows creates and deletes, so a sandbox
 * behaves like a live platform while two sandboxes of one seed start identical.
 * Each generated campaign shows a creative set of its account, id `campaignId * 10 + 1`
 * (101001's is 1010011); the sets stay as they are.
 */
export class CampaignCatalog {
  readonly #campaigns = new Map<number, SandboxCampaign>()
  readonly #creativeSets = new Map<number, SandboxCreativeSet>()
  // Numbers are never reused after a delete, as database ids are not.
  readonly #lastNumber = new Map<number, number>()

  constructor(seed: number, accounts: readonly SandboxAccount[]) {
    for (const account of accounts) {
      const count = 3 + (hash32(seed, SALT.count, account.id) % 4)
      for (let n = 1; n <= count; n++) {
        const campaign = generateCampaign(seed, account, n)
        this.#add(campaign)
        for (const id of campaign.creativeSetIds) this.#creativeSets.set(id, { id, userId: account.id, name: `${campaign.name} creatives` })
      }
      this.#lastNumber.set(account.id, count)
    }
  }

  creativeSet(id: number): SandboxCreativeSet | undefined {
    return this.#creativeSets.get(id)
  }

  creativeSetsOf(userId: number): SandboxCreativeSet[] {
    return [...this.#creativeSets.values()].filter((set) => set.userId === userId)
  }

  get(id: number): SandboxCampaign | undefined {
    return this.#campaigns.get(id)
  }

  listOf(userId: number): SandboxCampaign[] {
    return [...this.#campaigns.values()].filter((c) => c.userId === userId)
  }

  #overflow = 0

  create(input: NewCampaign): SandboxCampaign {
    const n = (this.#lastNumber.get(input.userId) ?? 0) + 1
    this.#lastNumber.set(input.userId, n)
    // An account's first 999 campaigns are numbered after it (101001…); past them, ids come
    // from a range of their own, so that account 100's thousandth campaign never takes the id
    // of account 101's first (ids are unique on the platform).
    const id = n < 1000 ? input.userId * 1000 + n : OVERFLOW_IDS + this.#overflow++
    const campaign = campaignRecord(id, input.autoStart ? 'active' : 'paused', input)
    this.#add(campaign)
    return campaign
  }

  delete(id: number): boolean {
    return this.#campaigns.delete(id)
  }

  #add(campaign: SandboxCampaign): void {
    this.#campaigns.set(campaign.id, campaign)
  }
}

function generateCampaign(seed: number, account: SandboxAccount, n: number): SandboxCampaign {
  const id = account.id * 1000 + n
  const themeStart = hash32(seed, SALT.theme, account.id)
  const theme = THEMES[(themeStart + n) % THEMES.length] ?? THEMES[0]
  const from = FIRST_START_DAY + (hash32(seed, SALT.start, id) % 120)
  const daily = Math.round(between(20, 200, seed, SALT.budget, id))
  const adDomain = `${account.name.toLowerCase().replaceAll(' ', '-')}.example`
  return campaignRecord(id, 'active', {
    userId: account.id,
    name: `${theme} – ${pick(FORMATS, seed, SALT.format, id)}`,
    adDomain,
    clickUrl: `https://${adDomain}/landing/${id}`,
    autoStart: true,
    dates: { from: formatIsoDay(from), to: formatIsoDay(from + 180 + (hash32(seed, SALT.length, id) % 180)) },
    country: HOME_COUNTRY[account.id] ?? 'US',
    bid: Math.round(between(0.4, 2.5, seed, SALT.bid, id) * 100) / 100,
    budget: { daily, total: daily * 60 },
    creativeSetIds: [id * 10 + 1],
  })
}

/** One place fixes the key order, so every campaign serializes alike. */
function campaignRecord(id: number, status: SandboxCampaign['status'], input: NewCampaign): SandboxCampaign {
  return {
    id,
    userId: input.userId,
    name: input.name,
    status,
    adDomain: input.adDomain,
    clickUrl: input.clickUrl,
    autoStart: input.autoStart,
    dates: { from: input.dates.from, to: input.dates.to },
    country: input.country,
    bid: input.bid,
    budget: { daily: input.budget.daily, total: input.budget.total },
    creativeSetIds: [...input.creativeSetIds],
  }
}
