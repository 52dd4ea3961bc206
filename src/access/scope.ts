import type { TeamConfig } from '../config.js'
import type { AccountField } from '../config/normalize.js'
import { REPORT_CAMPAIGNS, REPORT_READ } from '../config/report-read.js'
import { BadRequestError, ForbiddenError } from '../errors.js'
import type { CheckedBody } from './request-body.js'
import { phpVariable, type Pair, type RequestTarget } from './request-target.js'
import { advertiserRefusal, assertMayUseAccount } from './team-auth.js'
import { shownAccount, shownPath } from '../observe/caller-text.js'

// The platform reads accounts from `advertiserId` and `userId`, and (Laravel) merges
// query, JSON and form input; any of them anywhere in a call can name an account, so
// all are checked, nested ones and arrays included. Campaign and creative set ids
// likewise. A query or form parameter names the variable PHP stores it under (`userId[]x`
// is `userId[0]`) and each bracketed key below it (`filter[campaignIds][]`); a JSON key is
// read as itself, and as an array name too.
const ACCOUNT_VARIABLES = new Set(['advertiserId', 'userId'])
const CAMPAIGN_VARIABLES = new Set(['campaignIds', 'campaignId'])
const CREATIVE_SET_VARIABLES = new Set(['creativeSetIds', 'creativeSetId'])
const ACCOUNT_FIELD = /^(advertiserId|userId)(\[.*\])?$/
const CAMPAIGN_FIELD = /^(campaignIds|campaignId)(\[.*\])?$/
const CREATIVE_SET_FIELD = /^(creativeSetIds|creativeSetId)(\[.*\])?$/
const ID = /^\d{1,15}$/
// A segment a database could read as a number: MySQL compares `102001abc` or `+102001`
// with an integer id as 102001.
const NUMERIC_SEGMENT = /\/[+-]?\d/

/** What a call names, and where. */
export interface NamedInCall {
  /** Every account value, wherever it stands. */
  accounts: unknown[]
  /** Campaign ids, wherever they stand (query, body, path). */
  campaigns: number[]
  /** Creative set ids (`creativeSetIds`, as banner/create takes them), wherever they stand. */
  creativeSets: number[]
  /** Whether the call names an account where the platform reads it (see `namedInCall`). */
  placed: boolean
  /** Where the platform reads the call's account, as a refusal of an unplaced call names it: `userId at the top of the body`. */
  placeBy: string
  /** The call's path when the gateway does not know where its route reads the account; else null. */
  unknownRoute: string | null
  /** The first key that spells an account, campaign or creative set field otherwise than the platform reads it (see `fieldSpelling`); else null. */
  respelled: Respelled | null
}

/** A key that names a checked field in another spelling: `user_id`, read by the platform as `userId`. */
export interface Respelled extends Spelling {
  /** The key as the call sent it (`filter[user_id]`). */
  field: string
}

/** The platform's spelling of a checked field, and what the field names. */
export interface Spelling {
  /** The field's spelling the platform reads (`userId`). */
  reads: string
  /** What it names, as a refusal says it: `the account`, `campaigns`, `creative sets`. */
  what: string
}

// The platform documents `userId` and `advertiserId` for accounts, `campaignIds` and
// `creativeSetIds` (`campaignId`, `creativeSetId`) for the objects a scoped team's call may
// name; a controller may read another spelling of them (Laravel apps often read
// `$request->user_id` or `$request->campaign_ids`), which the checks here do not look at.
// A name that is one of them compared without case and without anything but letters and
// digits (`user_id`, `UserId`, `campaign-ids`, `creative.set.id`, which PHP stores as
// `creative_set_id`) and is not spelled as the platform reads it is such a spelling.
const SPELLINGS = new Map<string, Spelling>(
  ([['the account', ACCOUNT_VARIABLES], ['campaigns', CAMPAIGN_VARIABLES], ['creative sets', CREATIVE_SET_VARIABLES]] as const).flatMap(([what, names]) =>
    [...names].map((reads) => [spellingKey(reads), { reads, what }] as const),
  ),
)

/** A name without case and without anything but letters and digits: `user_id`, `UserId` and `userId` are one spelling key. */
export function spellingKey(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '')
}

/** The platform's spelling of the checked field `name` spells otherwise (`user_id`: `userId`, the account); null for any other name, and for the platform's own spelling. */
export function fieldSpelling(name: string): Spelling | null {
  const spelling = SPELLINGS.get(spellingKey(name))
  return spelling === undefined || spelling.reads === name ? null : spelling
}

/** The first of `keys` (query, form or JSON keys) naming a checked field in another spelling, in its variable or a bracketed key below it. */
function respelledIn(keys: Iterable<string>): Respelled | null {
  for (const field of keys) {
    for (const name of keyNames(field)) {
      const spelling = fieldSpelling(name)
      if (spelling !== null) return { field, ...spelling }
    }
  }
  return null
}

// The names a key holds for PHP: its variable, and each bracketed key below it
// (`filter[user_id][]`: `filter`, `user_id`, ``), as Laravel's nested input reads them:
// from each `[`, the text up to the first `]` after it. Found by indexOf, once over the
// key: a JSON key is of any length, and a pattern (`/\[([^\]]*)\]/g`) tried at each of a
// 60,000-character key's `[` with no `]` behind it read on to its end from each, 12 s of
// one replica's CPU for one call.
function keyNames(key: string): string[] {
  const names = [phpVariable(key)]
  for (let open = key.indexOf('['); open !== -1; ) {
    const close = key.indexOf(']', open + 1)
    if (close === -1) break
    names.push(key.slice(open + 1, close))
    open = key.indexOf('[', close + 1)
  }
  return names
}

/** Where the gateway knows routes to read their accounts (config `ownership`), compiled. */
export interface Placements {
  /** `ownership.campaignPaths`: each matches a path and captures its campaign id. */
  campaignPaths: RegExp[]
  /** `ownership.accountRoutes`: each route's account field, by its path. */
  accountRoutes: ReadonlyMap<string, AccountField>
}

export function placementsOf(ownership: { campaignPaths: readonly string[]; accountRoutes: readonly { path: string; field: AccountField }[] }): Placements {
  return {
    campaignPaths: ownership.campaignPaths.map((p) => new RegExp(`^${p.split('{id}').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('(\\d+)')}/?$`)),
    accountRoutes: new Map(ownership.accountRoutes.map((r) => [r.path, r.field])),
  }
}

// Where the platform reads the account: a body-less call's query (`advertiserId` or
// `userId`, as plain names), a body call's top-level `userId`; the POST report form reads
// its top-level `campaignIds` instead, and no account field (a report without campaigns
// may be one of every campaign of the parent's token). Anywhere else (a nested `userId`,
// `advertiserId` in a campaign list's body, `userId[]`, a plain one followed by `userId[]`,
// which PHP keeps as the list, a JSON list), the platform falls back to the
// parent account. So do the routes of `ownership.accountRoutes` that name the other field
// of the two: each is placed by its own field only. A route that is none of these (not a
// report, a campaign path or a listed route) may read either name, or none, and is placed
// by nothing.
const QUERY_ACCOUNT = new Set(['advertiserId', 'userId'])
const BODY_ACCOUNT = 'userId'

/** A scoped team reads reports at `/api/v1/report/{split}/get` only (403 otherwise); `path`: the report's canonical path. */
export function assertReportRead(team: TeamConfig, path: string): void {
  if (team.advertisers === null || REPORT_READ.test(path)) return
  throw new ForbiddenError(`team ${team.name} is limited to some advertisers: a report is read at /api/v1/report/{split}/get; the gateway cannot tell which account ${shownPath(path)} acts on`)
}

/**
 * The accounts and campaigns a call names, wherever they stand, and whether
 * it names its account where the platform reads it (`placed`): a call that does not
 * would act on the parent account.
 */
export function namedInCall(method: string, target: RequestTarget, body: CheckedBody | null, placements: Placements): NamedInCall {
  const queryAccounts = namedValues(target.params, ACCOUNT_VARIABLES)
  const inBody: Collected = { accounts: [], campaigns: [], creativeSets: [], respelled: null }
  if (body?.kind === 'json') collectJson(body.value, inBody)
  else if (body?.kind === 'form') {
    inBody.respelled = respelledIn(body.params.map(([key]) => key))
    inBody.accounts.push(...namedValues(body.params, ACCOUNT_VARIABLES))
    inBody.campaigns.push(...namedValues(body.params, CAMPAIGN_VARIABLES))
    inBody.creativeSets.push(...namedValues(body.params, CREATIVE_SET_VARIABLES))
  }
  const campaigns = [...namedValues(target.params, CAMPAIGN_VARIABLES), ...inBody.campaigns].map(campaignId)
  const inPath = pathCampaign(target.path, placements.campaignPaths)
  if (inPath !== null) campaigns.push(inPath, ...routeIdInputs(target, body).map(campaignId))
  const bodyless = method === 'GET' || method === 'HEAD' || method === 'DELETE'
  const listed = placements.accountRoutes.get(target.path.length > 1 && target.path.endsWith('/') ? target.path.slice(0, -1) : target.path)
  const known = listed !== undefined || inPath !== null || REPORT_READ.test(target.path)
  const fields = listed === undefined ? QUERY_ACCOUNT : new Set([listed])
  return {
    accounts: [...queryAccounts, ...inBody.accounts],
    campaigns,
    creativeSets: [...namedValues(target.params, CREATIVE_SET_VARIABLES), ...inBody.creativeSets].map(creativeSetId),
    placed: known && (bodyless ? [...fields].some((field) => plainLast(target.params, field)) : placedInBody(target.path, body, listed ?? BODY_ACCOUNT)),
    placeBy: bodyless ? `${[...fields].join(' or ')} in the query` : `${REPORT_READ.test(target.path) ? `the report's campaigns in ${REPORT_CAMPAIGNS}` : (listed ?? BODY_ACCOUNT)} at the top of the body`,
    unknownRoute: known ? null : target.path,
    respelled: respelledIn(target.params.map(([key]) => key)) ?? inBody.respelled,
  }
}

// A campaign path's route parameter (`{id}` of ownership.campaignPaths). A controller's
// `$request->id` reads an input of that name before the route's (Laravel's Request::__get
// looks in the query and body first), so beside a campaign's path such an input names a
// campaign too: the query's, the form's, or the JSON body's top-level one. It is one id:
// a list there (`id[]`, `id[x]`, a JSON list) is read as 1 by `(int)` and
// `$request->integer()`, as many by `find()`, as its first item by `where()`, so 400.
const ROUTE_ID = 'id'
const ROUTE_ID_VARIABLES = new Set([ROUTE_ID])

function routeIdInputs(target: RequestTarget, body: CheckedBody | null): unknown[] {
  const params = body?.kind === 'form' ? [...target.params, ...body.params] : target.params
  const listed = params.find(([name]) => name !== ROUTE_ID && phpVariable(name) === ROUTE_ID)
  if (listed !== undefined) throw routeIdList(listed[0])
  const found: unknown[] = fieldValues(params, ROUTE_ID_VARIABLES)
  if (body?.kind === 'json' && typeof body.value === 'object' && body.value !== null && !Array.isArray(body.value) && Object.hasOwn(body.value, ROUTE_ID)) {
    const value = (body.value as Record<string, unknown>)[ROUTE_ID]
    if (Array.isArray(value)) throw routeIdList(JSON.stringify(value).slice(0, 64))
    found.push(value)
  }
  return found
}

function routeIdList(spelt: string): InstanceType<typeof BadRequestError> {
  return new BadRequestError(`${ROUTE_ID}: one campaign id beside the campaign's path, not a list (${spelt})`)
}

// Whether PHP ends with `field` a plain value: the last parameter of its variable names it
// plainly. A later `field[]` or `field[x]` makes it a list (PHP keeps the last), which names
// no account where the platform reads one.
function plainLast(params: readonly Pair[], field: string): boolean {
  return params.findLast(([name]) => phpVariable(name) === field)?.[0] === field
}

function placedInBody(path: string, body: CheckedBody | null, field: string): boolean {
  const report = REPORT_READ.test(path)
  if (body?.kind === 'form') return !report && plainLast(body.params, field)
  if (body?.kind !== 'json' || typeof body.value !== 'object' || body.value === null || Array.isArray(body.value)) return false
  const top = body.value as Record<string, unknown>
  if (report) return Array.isArray(top[REPORT_CAMPAIGNS]) && top[REPORT_CAMPAIGNS].length > 0
  // One id, a number or a string. A list is none to PHP, as `userId[]` of a form is: the
  // integer rule refuses it, `(int)` and `$request->integer()` read it as 1, a where() takes its first item.
  const value = Object.hasOwn(top, field) ? top[field] : undefined
  return typeof value === 'number' || typeof value === 'string'
}

/** Every named account must be a positive integer the team may use; returns them. */
export function assertAccounts(team: TeamConfig, values: unknown[]): number[] {
  const ids: number[] = []
  if (team.advertisers === null) return ids
  for (const value of values) {
    const id = toAccountId(value)
    if (id === null) throw advertiserRefusal(team, shownAccount(value))
    assertMayUseAccount(team, id)
    ids.push(id)
  }
  return ids
}

/**
 * A call admitted through `credential` (a read under way, a report job) is the team's while
 * the team reads through it still: a reload that moved the team to another credential,
 * whose token reads other accounts, leaves it nothing the old one fetches or fetched (403).
 */
export function assertReadsThrough(team: TeamConfig, credential: string): void {
  if (team.credential !== credential) throw new ForbiddenError(`team ${team.name} reads through credential ${team.credential} now, not through ${credential}`)
}

/**
 * Why `team` (as the teams run now; undefined once a reload removed it, `name` naming it)
 * may not read a report of `advertiserIds` asked through `credential`, in the words a read
 * of it is refused with; null when it may.
 */
export function scopeRefusal(team: TeamConfig | undefined, name: string, credential: string, advertiserIds: readonly number[]): string | null {
  if (team === undefined) return `team ${name} is no longer configured`
  try {
    assertReadsThrough(team, credential)
    assertAccounts(team, [...advertiserIds])
    return null
  } catch (err) {
    if (err instanceof ForbiddenError) return err.message
    throw err
  }
}

// A path with a number the campaign table does not explain names an object the gateway
// cannot place (a creative, a campaign under an unlisted route, an id with a suffix):
// refused for scoped teams.
function pathCampaign(path: string, patterns: readonly RegExp[]): number | null {
  for (const pattern of patterns) {
    const match = pattern.exec(path)
    if (match) return campaignId(match[1])
  }
  if (NUMERIC_SEGMENT.test(path)) throw new ForbiddenError(`the gateway cannot tell whose object ${shownPath(path)} names; ask for its path to be listed in ownership.campaignPaths`)
  return null
}

// A query or form key names an account, a campaign or a creative set by its variable
// (`userId[]`, `campaignIds[]`) or by a bracketed key below it (`filter[userId]`,
// `filter[campaignIds][]`, which Laravel reads as `filter.campaignIds` and a query-builder
// filter takes for its campaigns), as a nested JSON key does.
function namedValues(params: readonly Pair[], variables: ReadonlySet<string>): string[] {
  const found: string[] = []
  for (const [key, value] of params) if (keyNames(key).some((name) => variables.has(name))) found.push(value)
  return found
}

// The values of a variable itself (`id`, `id[]`), not of bracketed keys below it.
function fieldValues(params: readonly Pair[], variables: ReadonlySet<string>): string[] {
  const found: string[] = []
  for (const [key, value] of params) if (variables.has(phpVariable(key))) found.push(value)
  return found
}

/** The values of a body's fields that name accounts, campaigns and creative sets. */
interface Collected {
  accounts: unknown[]
  campaigns: unknown[]
  creativeSets: unknown[]
  respelled: Respelled | null
}

// Only objects and arrays are walked into: a string, number or literal outside a field
// that names something names nothing, so it is looked at and not pushed (a body of half a
// million numbers costs a test of each, not a push and a pop of each).
const isContainer = (value: unknown): value is object => typeof value === 'object' && value !== null

function collectJson(root: unknown, found: Collected): void {
  const pending: unknown[] = [root]
  while (pending.length > 0) {
    const node = pending.pop()
    if (Array.isArray(node)) {
      for (const item of node) if (isContainer(item)) pending.push(item)
    } else if (isContainer(node)) {
      for (const [key, value] of Object.entries(node)) {
        found.respelled ??= respelledIn([key])
        const into = ACCOUNT_FIELD.test(key) ? found.accounts : CAMPAIGN_FIELD.test(key) ? found.campaigns : CREATIVE_SET_FIELD.test(key) ? found.creativeSets : null
        if (into === null) {
          if (isContainer(value)) pending.push(value)
        } else if (Array.isArray(value) && (value.length > 0 || into !== found.accounts)) {
          // An empty list names no account, and Laravel reads it as blank (`filled()`, `?:`):
          // kept whole, as a value that is no account, so that it is refused and places nothing.
          // Pushed one by one: a list as long as a body holds is no call's arguments.
          for (const item of value as unknown[]) into.push(item)
        } else into.push(value)
      }
    }
  }
}

function campaignId(value: unknown): number {
  return objectId('campaign id', value)
}

function creativeSetId(value: unknown): number {
  return objectId('creative set id', value)
}

function objectId(what: string, value: unknown): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value
  if (typeof value === 'string' && ID.test(value) && Number(value) > 0) return Number(value)
  throw new BadRequestError(`${what}: must be a positive integer (${JSON.stringify(value)?.slice(0, 64)})`)
}

function toAccountId(value: unknown): number | null {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value
  if (typeof value === 'string' && ID.test(value)) {
    const n = Number(value)
    return n > 0 ? n : null
  }
  return null
}
