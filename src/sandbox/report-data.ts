import { formatIsoDay, weekday } from './dates.js'
import { between, hash32 } from './hash.js'

// Report rows, made up but consistent: pure functions of the seed and the names of
// what is counted (advertiser, campaign, creative or position, day).

export const REPORT_SPLITS = ['campaigns', 'creatives', 'adPlacementPositions'] as const
export type ReportSplit = (typeof REPORT_SPLITS)[number]

/** The currency that `spent` is reported in, and its units per US dollar. */
export interface SpendCurrency { code: string; perUsd: number }

export interface ReportCampaign {
  id: number
  advertiserId: number
  name: string
  currency: SpendCurrency
}

export interface ReportRequest {
  split: ReportSplit
  campaigns: readonly ReportCampaign[]
  fromDay: number
  toDay: number
  byDate: boolean
  byCampaign: boolean
}

export interface ReportRow {
  date?: string
  campaignId?: number
  campaignName?: string
  creativeId?: number
  creativeName?: string
  position?: string
  impressions: number
  clicks: number
  ctr: number
  spent: number
  reach: number
  currency: string
}

/**
 * Reach is unique users, and users come back on other days and see other
 * campaigns: a row that merges cells counts its largest cell in full and only
 * this share of the others. So a period's reach stays below the sum of its days.
 */
const REACH_OVERLAP_SHARE = 0.4

const POSITIONS = [
  { name: 'Above the fold', weight: 0.45 },
  { name: 'Below the fold', weight: 0.3 },
  { name: 'Full screen', weight: 0.15 },
  { name: 'Unknown', weight: 0.1 },
] as const
const CREATIVE_SIZES = ['300x250', '320x50', '320x480', '728x90', '300x600', '1200x627'] as const
const WEEKEND_FACTOR = 0.8
const SALT = { scale: 11, day: 12, ctr: 13, cpm: 14, reach: 15, creatives: 16, weight: 17, size: 18 } as const

/** A campaign's subdivision in a split: the campaign itself, one creative, or one position. */
interface Leaf {
  key: number
  weight: number
  creativeId?: number
  creativeName?: string
  position?: string
}

interface Group {
  date: string | undefined
  campaign: ReportCampaign | undefined
  leaf: Leaf
  currency: SpendCurrency
  impressions: number
  clicks: number
  spentUsdCents: number
  reachMax: number
  reachSum: number
}

/** Rows ordered by date, then campaign, then creative or position; a label a row does not have is undefined. */
export function buildReport(seed: number, request: ReportRequest): ReportRow[] {
  const groups = new Map<string, Group>()
  const plans = request.campaigns.map((campaign) => ({
    campaign,
    leaves: leavesOf(seed, request.split, campaign),
    dailyImpressions: between(2_000, 24_000, seed, SALT.scale, campaign.advertiserId, campaign.id),
    cpmUsd: between(0.4, 2.2, seed, SALT.cpm, campaign.advertiserId, campaign.id),
  }))
  for (let day = request.fromDay; day <= request.toDay; day++) {
    const date = request.byDate ? formatIsoDay(day) : undefined
    for (const { campaign, leaves, dailyImpressions, cpmUsd } of plans) {
      const dayImpressions = dailyImpressions * dayFactor(seed, campaign, day)
      for (const leaf of leaves) {
        const key = `${date ?? ''}|${request.byCampaign ? campaign.id : ''}|${leaf.key}|${campaign.currency.code}`
        let group = groups.get(key)
        if (group === undefined) {
          group = newGroup(date, request.byCampaign ? campaign : undefined, leaf, campaign.currency)
          groups.set(key, group)
        }
        addCell(group, seed, campaign, leaf, day, Math.round(dayImpressions * leaf.weight), cpmUsd)
      }
    }
  }
  return [...groups.values()].map(toRow)
}

function leavesOf(seed: number, split: ReportSplit, campaign: ReportCampaign): Leaf[] {
  switch (split) {
    case 'campaigns':
      return [{ key: 0, weight: 1 }]
    case 'creatives':
      return creativesOf(seed, campaign)
    case 'adPlacementPositions':
      return POSITIONS.map((position, index) => ({ key: index, weight: position.weight, position: position.name }))
  }
}

/** 2-3 creatives per campaign, ids `campaignId * 10 + k`, sharing its impressions. */
function creativesOf(seed: number, campaign: ReportCampaign): Leaf[] {
  const count = 2 + (hash32(seed, SALT.creatives, campaign.id) % 2)
  const ids = Array.from({ length: count }, (_, i) => campaign.id * 10 + i + 1)
  const raw = ids.map((id) => between(0.5, 1.5, seed, SALT.weight, id))
  const total = raw.reduce((sum, w) => sum + w, 0)
  return ids.map((id, i) => {
    const size = CREATIVE_SIZES[hash32(seed, SALT.size, id) % CREATIVE_SIZES.length] ?? CREATIVE_SIZES[0]
    return { key: id, weight: (raw[i] ?? 0) / total, creativeId: id, creativeName: `${size} banner #${i + 1}` }
  })
}

function dayFactor(seed: number, campaign: ReportCampaign, day: number): number {
  const weekend = weekday(day) === 0 || weekday(day) === 6
  return between(0.7, 1.3, seed, SALT.day, campaign.advertiserId, campaign.id, day) * (weekend ? WEEKEND_FACTOR : 1)
}

function newGroup(date: string | undefined, campaign: ReportCampaign | undefined, leaf: Leaf, currency: SpendCurrency): Group {
  return { date, campaign, leaf, currency, impressions: 0, clicks: 0, spentUsdCents: 0, reachMax: 0, reachSum: 0 }
}

function addCell(group: Group, seed: number, campaign: ReportCampaign, leaf: Leaf, day: number, impressions: number, cpmUsd: number): void {
  const ctr = between(0.002, 0.015, seed, SALT.ctr, campaign.advertiserId, campaign.id, leaf.key, day)
  const reach = Math.floor(impressions * between(0.62, 0.9, seed, SALT.reach, campaign.advertiserId, campaign.id, leaf.key, day))
  group.impressions += impressions
  group.clicks += Math.round(impressions * ctr)
  group.spentUsdCents += Math.round((impressions * cpmUsd) / 10)
  group.reachMax = Math.max(group.reachMax, reach)
  group.reachSum += reach
}

/**
 * Every row has every key, in one order; JSON leaves out the undefined ones. One
 * object shape for all rows keeps this fast (spreading optional parts is not).
 */
function toRow(group: Group): ReportRow {
  const { date, campaign, leaf, impressions, clicks } = group
  return {
    date,
    campaignId: campaign?.id,
    campaignName: campaign?.name,
    creativeId: leaf.creativeId,
    creativeName: leaf.creativeName,
    position: leaf.position,
    impressions,
    clicks,
    ctr: impressions === 0 ? 0 : Math.round((clicks * 10_000) / impressions) / 100,
    spent: Math.round(group.spentUsdCents * group.currency.perUsd) / 100,
    reach: Math.floor(group.reachMax + REACH_OVERLAP_SHARE * (group.reachSum - group.reachMax)),
    currency: group.currency.code,
  }
}
