import type { FastifyReply } from 'fastify'
import { mayRead, UNITS_PER_USD } from './accounts.js'
import type { SandboxCampaign } from './catalog.js'
import { sendForbidden, sendInvalid, sendJson } from './replies.js'
import { buildReport, REPORT_SPLITS } from './report-data.js'
import type { ReportCampaign, ReportRequest, ReportSplit, SpendCurrency } from './report-data.js'
import type { SandboxAccount } from './types.js'
import type { SandboxState } from './state.js'
import type { PlatformRequest, PlatformRoutes } from './platform-routes.js'
import { Validator } from './validation.js'
import { localeOf, LOCALIZED_VARY, localizeRows } from './locale.js'

// `GET /report/{split}/get?advertiserId=…` and its older form, `POST` with a JSON
// body naming campaigns. One route per known split: an unknown split is no route
// at all, so it is a 404 before authentication, as in Laravel. Both read Laravel's
// merged input; the POST form reads `campaignIds` and never looks at an account field
// (`advertiserId`, `userId`): without campaigns it is a 422, or, on a platform that takes
// the caller's campaigns then (SandboxOptions.reportAllCampaigns), every campaign of the token.
// On a platform that reads query-builder filters (SandboxOptions.reportFilter), either form
// reports on the campaigns of `filter[campaignIds]` instead.

/** Bounds the work of one request; a long range is a 422, as on real reporting APIs. */
export const MAX_REPORT_DAYS = 366

const SPENT_BASES = ['usd', 'local'] as const
type SpentBase = (typeof SPENT_BASES)[number]
const USD: SpendCurrency = { code: 'USD', perUsd: 1 }
const FORBIDDEN = Symbol('forbidden')

/** A report to build, and the accounts whose data it reads. */
type Parsed = (ReportRequest & { accounts: number[] }) | typeof FORBIDDEN | undefined

interface Period {
  fromDay: number | undefined
  toDay: number | undefined
  byDate: boolean
  byCampaign: boolean
  spentBased: SpentBase | undefined
}

export function reportRoutes(state: SandboxState): PlatformRoutes {
  const routes: PlatformRoutes = {}
  for (const split of REPORT_SPLITS) {
    routes[`/report/${split}/get`] = {
      GET: (request, reply) => {
        const validator = new Validator()
        answer(request, reply, state, validator, fromQuery(split, request.input, request.caller, state, validator))
      },
      POST: (request, reply) => {
        const validator = new Validator()
        answer(request, reply, state, validator, fromBody(split, request.input, request.caller, state, validator))
      },
    }
  }
  return routes
}

function answer(request: PlatformRequest, reply: FastifyReply, state: SandboxState, validator: Validator, parsed: Parsed): void {
  if (parsed === undefined) sendInvalid(request, reply, validator)
  else if (parsed === FORBIDDEN) sendForbidden(reply)
  else {
    for (const account of parsed.accounts) request.touch(account)
    const rows = buildReport(state.seed, parsed)
    if (!state.localized) sendJson(reply, 200, { data: rows })
    else {
      const locale = localeOf(request.headers['accept-language'])
      reply.header('content-language', locale).header('vary', LOCALIZED_VARY)
      sendJson(reply, 200, { data: localizeRows(rows, locale) })
    }
  }
}

function fromQuery(split: ReportSplit, query: Record<string, unknown>, caller: number, state: SandboxState, v: Validator): Parsed {
  const advertiserId = query.advertiserId === undefined ? caller : v.integer('advertiserId', query.advertiserId)
  const period = readPeriod(v, query)
  if (v.hasErrors() || advertiserId === undefined) return undefined
  const account = state.accounts.get(advertiserId)
  if (account === undefined || !mayRead(caller, account)) return FORBIDDEN
  const filtered = filterCampaigns(v, query, state)
  if (filtered === undefined) return undefined
  if (filtered !== null) return ofCampaigns(split, filtered, caller, state, period)
  const campaigns = state.catalog.listOf(advertiserId).map((campaign) => reportCampaign(campaign, account, period))
  return complete(split, campaigns, period, [advertiserId])
}

function fromBody(split: ReportSplit, body: Record<string, unknown>, caller: number, state: SandboxState, v: Validator): Parsed {
  const period = readPeriod(v, body)
  const filtered = filterCampaigns(v, body, state)
  const found = filtered !== null ? filtered : body.campaignIds === undefined && state.reportAllCampaigns ? readableCampaigns(caller, state) : readCampaigns(v, body.campaignIds, state)
  if (v.hasErrors() || found === undefined) return undefined
  return ofCampaigns(split, found, caller, state, period)
}

/** The report of `found`, each campaign's account one the token reads. */
function ofCampaigns(split: ReportSplit, found: SandboxCampaign[], caller: number, state: SandboxState, period: Period): Parsed {
  const campaigns: ReportCampaign[] = []
  for (const campaign of found) {
    const account = state.accounts.get(campaign.userId)
    if (account === undefined || !mayRead(caller, account)) return FORBIDDEN
    campaigns.push(reportCampaign(campaign, account, period))
  }
  return complete(split, campaigns, period, [...new Set(found.map((campaign) => campaign.userId))])
}

/** Every campaign of the accounts the token reads, sorted by id. */
function readableCampaigns(caller: number, state: SandboxState): SandboxCampaign[] {
  return [...state.accounts.values()].filter((account) => mayRead(caller, account)).flatMap((account) => state.catalog.listOf(account.id)).sort((a, b) => a.id - b.id)
}

// spatie/laravel-query-builder's filter: `filter` of the merged input, each value split at
// commas (AllowedFilter::splitFilterValue), lists included.
const FILTER = 'filter'
const FILTER_CAMPAIGNS = 'campaignIds'
const FILTER_DELIMITER = ','

/** The campaigns of `filter[campaignIds]` when the platform reads it (SandboxOptions.reportFilter); null: none named; undefined: invalid. */
function filterCampaigns(v: Validator, input: Record<string, unknown>, state: SandboxState): SandboxCampaign[] | null | undefined {
  if (!state.reportFilter) return null
  const filter = input[FILTER]
  if (typeof filter !== 'object' || filter === null) return null
  const named = (filter as Record<string, unknown>)[FILTER_CAMPAIGNS]
  if (named === undefined) return null
  const split = (value: unknown): unknown[] => (typeof value === 'string' ? value.split(FILTER_DELIMITER) : Array.isArray(value) ? value.flatMap(split) : typeof value === 'object' && value !== null ? Object.values(value).flatMap(split) : [value])
  return readCampaigns(v, split(named), state)
}

/** Campaigns named in a body, sorted and unique, so that spelling does not change the bytes. */
function readCampaigns(v: Validator, value: unknown, state: SandboxState): SandboxCampaign[] | undefined {
  const ids = v.integers('campaignIds', value)
  if (ids === undefined) return undefined
  const campaigns = ids.map((id, i) => state.catalog.get(id) ?? v.fail(`campaignIds.${i}`, `The selected campaign ids.${i} is invalid.`))
  if (!campaigns.every((campaign) => campaign !== undefined)) return undefined
  return [...new Map(campaigns.map((campaign) => [campaign.id, campaign])).values()].sort((a, b) => a.id - b.id)
}

function readPeriod(v: Validator, source: Record<string, unknown>): Period {
  const fromDay = v.date('dateFrom', source.dateFrom)
  const toDay = v.date('dateTo', source.dateTo)
  v.ordered('dateTo', 'dateFrom', fromDay, toDay)
  if (fromDay !== undefined && toDay !== undefined && toDay - fromDay + 1 > MAX_REPORT_DAYS) {
    v.fail('dateTo', `The date range may not be longer than ${MAX_REPORT_DAYS} days.`)
  }
  return {
    fromDay,
    toDay,
    byDate: v.flag('byDate', source.byDate),
    byCampaign: v.flag('byCampaign', source.byCampaign),
    spentBased: source.spentBased === undefined ? 'usd' : v.oneOf('spentBased', source.spentBased, SPENT_BASES),
  }
}

function reportCampaign(campaign: SandboxCampaign, account: SandboxAccount, period: Period): ReportCampaign {
  const currency = period.spentBased === 'local' ? { code: account.currency, perUsd: UNITS_PER_USD[account.currency] ?? 1 } : USD
  return { id: campaign.id, advertiserId: campaign.userId, name: campaign.name, currency }
}

function complete(split: ReportSplit, campaigns: ReportCampaign[], period: Period, accounts: number[]): Parsed {
  const { fromDay, toDay, byDate, byCampaign } = period
  if (fromDay === undefined || toDay === undefined) return undefined
  return { split, campaigns, fromDay, toDay, byDate, byCampaign, accounts }
}
