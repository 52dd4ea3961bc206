import type { TeamConfig } from '../config.js'
import { BadRequestError, ForbiddenError } from '../errors.js'
import type { CheckedBody } from '../routes/request-body.js'
import type { Pair, RequestTarget } from '../routes/request-target.js'
import { assertMayUseAccount } from './team-auth.js'

// The platform reads accounts from `advertiserId` and `userId`, and (Laravel) merges
// query, JSON and form input; any of them anywhere in a call can name an account, so
// all are checked, nested ones and arrays included. Campaign ids likewise.
const ACCOUNT_FIELD = /^(advertiserId|userId)(\[.*\])?$/
const CAMPAIGN_FIELD = /^(campaignIds|campaignId)(\[.*\])?$/
const ID = /^\d{1,15}$/
const DIGITS_SEGMENT = /\/\d+(\/|$)/

/** What a call names, and where. */
export interface NamedInCall {
  /** Every account value, wherever it stands. */
  accounts: unknown[]
  /** Campaign ids, wherever they stand (query, body, path). */
  campaigns: number[]
  /** Whether the call names an account where the platform reads it (see `namedInCall`). */
  placed: boolean
}

/** Compiled `ownership.campaignPaths`: each matches a path and captures its campaign id. */
export function campaignPathPatterns(paths: readonly string[]): RegExp[] {
  return paths.map((p) => new RegExp(`^${p.split('{id}').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('(\\d+)')}/?$`))
}

/**
 * The accounts and campaigns a call names (issue #5). The platform reads the account of
 * GET, HEAD and DELETE from the query and that of calls with a body from the body (a
 * campaign id there names its owner): a call naming it only elsewhere is not `placed`,
 * for the platform would fall back to the parent account.
 */
export function namedInCall(method: string, target: RequestTarget, body: CheckedBody | null, campaignPaths: readonly RegExp[]): NamedInCall {
  const queryAccounts = fieldValues(target.params, ACCOUNT_FIELD)
  const bodyAccounts: unknown[] = []
  const bodyCampaigns: unknown[] = []
  if (body?.kind === 'json') collectJson(body.value, bodyAccounts, bodyCampaigns)
  else if (body?.kind === 'form') {
    bodyAccounts.push(...fieldValues(body.params, ACCOUNT_FIELD))
    bodyCampaigns.push(...fieldValues(body.params, CAMPAIGN_FIELD))
  }
  const campaigns = [...fieldValues(target.params, CAMPAIGN_FIELD), ...bodyCampaigns].map(campaignId)
  const inPath = pathCampaign(target.path, campaignPaths)
  if (inPath !== null) campaigns.push(inPath)
  const bodyless = method === 'GET' || method === 'HEAD' || method === 'DELETE'
  return {
    accounts: [...queryAccounts, ...bodyAccounts],
    campaigns,
    placed: bodyless ? queryAccounts.length > 0 : bodyAccounts.length > 0 || bodyCampaigns.length > 0,
  }
}

/** Every named account must be a positive integer the team may use; returns them. */
export function assertAccounts(team: TeamConfig, values: unknown[]): number[] {
  const ids: number[] = []
  if (team.advertisers === null) return ids
  for (const value of values) {
    const id = toAccountId(value)
    if (id === null) throw new ForbiddenError(`team ${team.name} may not use advertiser ${JSON.stringify(value)}`)
    assertMayUseAccount(team, id)
    ids.push(id)
  }
  return ids
}

// A path with a number the campaign table does not explain names an object the gateway
// cannot place (a creative, a campaign under an unlisted route): refused for scoped teams.
function pathCampaign(path: string, patterns: readonly RegExp[]): number | null {
  for (const pattern of patterns) {
    const match = pattern.exec(path)
    if (match) return campaignId(match[1])
  }
  if (DIGITS_SEGMENT.test(path)) throw new ForbiddenError(`the gateway cannot tell whose object ${path} names; ask for its path to be listed in ownership.campaignPaths`)
  return null
}

function fieldValues(params: readonly Pair[], field: RegExp): string[] {
  const found: string[] = []
  for (const [key, value] of params) if (field.test(key)) found.push(value)
  return found
}

function collectJson(root: unknown, accounts: unknown[], campaigns: unknown[]): void {
  const pending: unknown[] = [root]
  while (pending.length > 0) {
    const node = pending.pop()
    if (Array.isArray(node)) {
      for (const item of node) pending.push(item)
    } else if (typeof node === 'object' && node !== null) {
      for (const [key, value] of Object.entries(node)) {
        const into = ACCOUNT_FIELD.test(key) ? accounts : CAMPAIGN_FIELD.test(key) ? campaigns : null
        if (into === null) pending.push(value)
        else if (Array.isArray(value)) into.push(...(value as unknown[]))
        else into.push(value)
      }
    }
  }
}

function campaignId(value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value
  if (typeof value === 'string' && ID.test(value) && Number(value) > 0) return Number(value)
  throw new BadRequestError(`campaign id: must be a positive integer (${JSON.stringify(value)?.slice(0, 64)})`)
}

function toAccountId(value: unknown): number | null {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value
  if (typeof value === 'string' && ID.test(value)) {
    const n = Number(value)
    return n > 0 ? n : null
  }
  return null
}
