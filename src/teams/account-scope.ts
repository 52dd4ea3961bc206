import type { TeamConfig } from '../config.js'
import { ForbiddenError } from '../errors.js'
import { assertMayUseAccount } from './team-auth.js'

// The platform reads accounts from `advertiserId` and `userId`, and (Laravel) merges
// query, JSON and form input; any of them anywhere in a call can name an account, so
// all are checked, nested ones and arrays included.
const ACCOUNT_FIELD = /^(advertiserId|userId)(\[.*\])?$/

export function accountsInQuery(query: URLSearchParams): string[] {
  const found: string[] = []
  for (const [key, value] of query) if (ACCOUNT_FIELD.test(key)) found.push(value)
  return found
}

export function accountsInJson(body: unknown, found: unknown[] = []): unknown[] {
  if (Array.isArray(body)) {
    for (const item of body) accountsInJson(item, found)
  } else if (typeof body === 'object' && body !== null) {
    for (const [key, value] of Object.entries(body)) {
      if (ACCOUNT_FIELD.test(key)) {
        if (Array.isArray(value)) found.push(...value)
        else found.push(value)
      } else {
        accountsInJson(value, found)
      }
    }
  }
  return found
}

/** Every named account must be a positive integer the team may use. */
export function assertAccounts(team: TeamConfig, values: unknown[]): void {
  if (team.advertisers === null) return
  for (const value of values) {
    const id = toAccountId(value)
    if (id === null) throw new ForbiddenError(`team ${team.name} may not use advertiser ${JSON.stringify(value)}`)
    assertMayUseAccount(team, id)
  }
}

function toAccountId(value: unknown): number | null {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value
  if (typeof value === 'string' && /^\d{1,15}$/.test(value.trim())) {
    const n = Number(value.trim())
    return n > 0 ? n : null
  }
  return null
}
