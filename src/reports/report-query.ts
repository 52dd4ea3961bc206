import { BadQueryError } from '../errors.js'
import { shownValue } from '../observe/caller-text.js'
import { stableStringify } from './stable-stringify.js'
import { canonicalPath } from '../platform/canonical-path.js'
import { phpName, phpVariable } from '../access/request-target.js'
import { spellingKey } from '../access/scope.js'

// Validation and normalization of report requests (contract, "Report requests").
// The canonical form is both what the platform receives and what the cache key is
// made of, so a cache entry always answers exactly the request that filled it.

export interface ReportQueryOptions {
  maxRangeDays: number
}

export interface CanonicalReport {
  method: 'GET' | 'POST'
  /** The path in its one spelling (canonical-path.ts), without query string: what the platform is asked. */
  path: string
  /** The account the report names: GET the query's; POST the body's, else the query's, else null. */
  advertiserId: number | null
  /** POST: the campaign ids the body names (the platform reads these, not advertiserId). */
  campaignIds: number[]
  /** The accounts its cache entry is indexed under, for a purge by advertiser. */
  advertiserIds: number[]
  dateFrom: string
  dateTo: string
  /** The splits the platform is asked for (rows by date, by campaign), wherever they were named. */
  byDate: boolean
  byCampaign: boolean
  /** Canonical query string to send upstream, '' when none. */
  query: string
  /** POST: canonical JSON body to send upstream; GET: null. */
  body: string | null
  /** Plain description of the canonical request, for the cache key. */
  keyMaterial: Record<string, unknown>
}

type Pair = [string, string]

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const DIGITS = /^\d+$/

// Exactly the contract's spellings: `TRUE`, `yes`, `on` are 400. The platform's own
// (Laravel) boolean validation is case-sensitive too, and a Map keeps user input
// from reaching Object.prototype members such as `constructor`.
const QUERY_FLAGS = new Map<string, boolean>([
  ['1', true],
  ['true', true],
  ['0', false],
  ['false', false],
])
const BODY_FLAGS = new Map<unknown, boolean>([
  [true, true],
  [1, true],
  ['1', true],
  ['true', true],
  [false, false],
  [0, false],
  ['0', false],
  ['false', false],
])

const GET_PARAMS = ['advertiserId', 'dateFrom', 'dateTo', 'byDate', 'byCampaign'] as const
// On POST .../get only advertiserId in the query is interpreted: it names an account,
// so it must be the same validated number the access check sees.
const POST_PARAMS = ['advertiserId'] as const
// What a POST report's canonical body always carries: its dates and flags. The platform
// reads the body before the query (Laravel's input()), so one of these in the query is
// never read: refused, naming it, rather than dropped. (campaignIds is in the body only
// when the caller put it there; in the query, team scoping places it, access/.)
const POST_BODY_PARAMS: ReadonlySet<string> = new Set(['dateFrom', 'dateTo', 'byDate', 'byCampaign'])

function bad(message: string): never {
  throw new BadQueryError(message)
}

// The report's dates and switches by their spelling keys. The platform's names are
// case-sensitive (PHP, Laravel): another spelling of one (`bydate`, `ByDate`, `date_from`)
// is a name it does not read, and its answer would be another report than the one asked
// (totals for `bydate=1`, not rows by date), with no word of why.
const REPORT_FIELDS = new Map(['dateFrom', 'dateTo', 'byDate', 'byCampaign'].map((name) => [spellingKey(name), name]))

/** 400 for a query parameter or body key whose variable (`phpVariable(key)`) spells a report field otherwise than the platform reads it. */
function refuseRespelledField(key: string, variable = phpVariable(key)): void {
  const reads = REPORT_FIELDS.get(spellingKey(variable))
  if (reads !== undefined && variable !== reads) bad(`${shownValue(key)}: the platform reads ${reads}; send it so`)
}

/**
 * Days since 1970-01-01 of a real calendar date `YYYY-MM-DD` (proleptic Gregorian, years
 * 0000 to 9999), or null if it is not one. Counted from its digits (the civil-to-days
 * count of the proleptic calendar), without a regular-expression match or a Date: a miss
 * asks it about ten times.
 */
export function epochDay(date: string): number | null {
  if (date.length !== 10 || date.charCodeAt(4) !== HYPHEN || date.charCodeAt(7) !== HYPHEN) return null
  const year = digitsAt(date, 0, 4)
  const month = digitsAt(date, 5, 7)
  const day = digitsAt(date, 8, 10)
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > monthDays(year, month)) return null
  // Years counted from March, so that a leap day ends its year; eras of 400 years, 146,097 days.
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yearOfEra = y - era * 400
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1
  return era * 146_097 + yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear - EPOCH_FROM_MARCH_0000
}

const HYPHEN = 0x2d
// Days from 0000-03-01 to 1970-01-01.
const EPOCH_FROM_MARCH_0000 = 719_468
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

function monthDays(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  return month === 2 && leap ? 29 : (MONTH_DAYS[month - 1] ?? 0)
}

/** The number the ASCII digits of `text` from `from` to `to` spell, or -1 if one is not a digit. */
function digitsAt(text: string, from: number, to: number): number {
  let n = 0
  for (let i = from; i < to; i++) {
    const digit = text.charCodeAt(i) - 0x30
    if (digit < 0 || digit > 9) return -1
    n = n * 10 + digit
  }
  return n
}

function calendarDate(name: string, value: unknown): { text: string; day: number } {
  if (value === undefined) bad(`${name}: required`)
  if (typeof value !== 'string' || !DATE.test(value)) bad(`${name}: must be YYYY-MM-DD (${shownValue(value)})`)
  const day = epochDay(value)
  if (day === null) bad(`${name}: not a calendar date (${value})`)
  return { text: value, day }
}

function dateRange(from: unknown, to: unknown, opts: ReportQueryOptions): { dateFrom: string; dateTo: string } {
  const start = calendarDate('dateFrom', from)
  const end = calendarDate('dateTo', to)
  if (end.day < start.day) bad(`dateTo: must not be before dateFrom (${end.text} < ${start.text})`)
  const days = end.day - start.day + 1
  if (days > opts.maxRangeDays) bad(`dateTo: range of ${days} days exceeds the maximum of ${opts.maxRangeDays} days (cache.maxRangeDays): ask it in parts of at most ${opts.maxRangeDays} days`)
  return { dateFrom: start.text, dateTo: end.text }
}

// Digits only: rejects `-1`, `1.5`, `1e3`, ` 7`, `0x7`, which Number() would accept.
function positiveInteger(name: string, value: unknown): number {
  let n: number
  if (typeof value === 'number') n = value
  else if (typeof value === 'string' && DIGITS.test(value)) n = Number(value)
  else bad(`${name}: must be a positive integer (${shownValue(value)})`)
  // Above MAX_SAFE_INTEGER two different ids would round to one number.
  if (!Number.isSafeInteger(n) || n <= 0) bad(`${name}: must be a positive integer (${shownValue(value)})`)
  return n
}

function queryFlag(name: string, value: string | undefined): boolean {
  if (value === undefined) return false
  const on = QUERY_FLAGS.get(value)
  if (on === undefined) bad(`${name}: must be 1, true, 0 or false (${shownValue(value)})`)
  return on
}

function bodyFlag(name: string, value: unknown): boolean {
  if (value === undefined) return false
  const on = BODY_FLAGS.get(value)
  if (on === undefined) bad(`${name}: must be true, false, 1, 0, "1", "0", "true" or "false" (${shownValue(value)})`)
  return on
}

function campaignIds(value: unknown): number[] {
  if (!Array.isArray(value) || value.length === 0) {
    bad(`campaignIds: must be a non-empty array of positive integers (${shownValue(value)})`)
  }
  const ids = value.map((item: unknown, i) => {
    if (typeof item === 'number' || (typeof item === 'string' && DIGITS.test(item))) {
      const n = Number(item)
      if (Number.isSafeInteger(n) && n > 0) return n
    }
    return bad(`campaignIds: element ${i} is not a positive integer (${shownValue(item)})`)
  })
  return [...new Set(ids)].sort((a, b) => a - b)
}

/**
 * Splits a query into the named parameters (each at most once) and the rest.
 * `rawQuery` is the gateway's serialization of a checked query (request-target.ts
 * checkParams, which refuses escapes that are no UTF-8), so each value reads as sent on.
 */
function splitQuery(
  rawQuery: string,
  names: readonly string[],
): { named: Map<string, string>; rest: Pair[] } {
  const named = new Map<string, string>()
  const rest: Pair[] = []
  for (const [key, value] of new URLSearchParams(rawQuery)) {
    // A known name spelled otherwise to PHP can only be its list (`name[]`, `name[x]`).
    const variable = phpVariable(key)
    refuseRespelledField(key, variable)
    if (variable !== key && names.includes(variable)) bad(`${variable}: one value, not a list (${shownValue(key)})`)
    if (!names.includes(key)) rest.push([phpName(key), value])
    else if (named.has(key)) bad(`${key}: given more than once`)
    else named.set(key, value)
  }
  return { named, rest }
}

// Sorted by the variable PHP files each parameter under, and only by it: the sort is
// stable, so the parameters of one variable keep their order (`ids[]=2&ids[]=1` is an
// ordered list to the platform, and of `a[]=1&a=2` or `a_b=1&a.b=2` it reads the last
// one; reordering would change the answer, and keeping it costs at most a separate
// cache entry).
function encodeQuery(pairs: readonly Pair[]): { query: string; sorted: Pair[] } {
  const variables = new Map(pairs.map(([key]) => [key, phpVariable(key)]))
  const sorted = pairs.toSorted(([a], [b]) => {
    const [x, y] = [variables.get(a) as string, variables.get(b) as string]
    return x < y ? -1 : x > y ? 1 : 0
  })
  const query = sorted.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')
  return { query, sorted }
}

export function canonicalGetReport(spelledPath: string, rawQuery: string, opts: ReportQueryOptions): CanonicalReport {
  const path = canonicalPath(spelledPath)
  const { named, rest } = splitQuery(rawQuery, GET_PARAMS)
  const rawAdvertiser = named.get('advertiserId')
  // The contract only says "a positive integer", but the platform needs it and the
  // team's access check has nothing to check without it.
  if (rawAdvertiser === undefined) bad('advertiserId: required')
  const advertiserId = positiveInteger('advertiserId', rawAdvertiser)
  const { dateFrom, dateTo } = dateRange(named.get('dateFrom'), named.get('dateTo'), opts)
  const pairs: Pair[] = [...rest, ['advertiserId', String(advertiserId)], ['dateFrom', dateFrom], ['dateTo', dateTo]]
  const byDate = queryFlag('byDate', named.get('byDate'))
  const byCampaign = queryFlag('byCampaign', named.get('byCampaign'))
  if (byDate) pairs.push(['byDate', '1'])
  if (byCampaign) pairs.push(['byCampaign', '1'])
  const { query, sorted } = encodeQuery(pairs)
  return {
    method: 'GET',
    path,
    advertiserId,
    campaignIds: [],
    advertiserIds: [advertiserId],
    dateFrom,
    dateTo,
    byDate,
    byCampaign,
    query,
    body: null,
    keyMaterial: { method: 'GET', path, query: sorted, body: null },
  }
}

export function canonicalPostReport(
  spelledPath: string,
  rawQuery: string,
  body: unknown,
  opts: ReportQueryOptions,
): CanonicalReport {
  const path = canonicalPath(spelledPath)
  if (typeof body !== 'object' || body === null || Array.isArray(body)) bad('body: must be a JSON object')
  const fields = body as Record<string, unknown>
  for (const key of Object.keys(fields)) refuseRespelledField(key)
  const { named, rest } = splitQuery(rawQuery, POST_PARAMS)
  const inQuery = rest.find(([key]) => POST_BODY_PARAMS.has(phpVariable(key)))
  if (inQuery !== undefined) bad(`${phpVariable(inQuery[0])}: a POST report reads it from its JSON body, not from the query (${shownValue(inQuery[0])})`)

  const rawQueryAdvertiser = named.get('advertiserId')
  const queryAdvertiser = rawQueryAdvertiser === undefined ? null : positiveInteger('advertiserId', rawQueryAdvertiser)
  const bodyAdvertiser = fields.advertiserId === undefined ? null : positiveInteger('advertiserId', fields.advertiserId)
  // Two different accounts in one call: the access check and the platform could each
  // pick a different one.
  if (queryAdvertiser !== null && bodyAdvertiser !== null && queryAdvertiser !== bodyAdvertiser) {
    bad(`advertiserId: query (${queryAdvertiser}) and body (${bodyAdvertiser}) differ`)
  }
  const { dateFrom, dateTo } = dateRange(fields.dateFrom, fields.dateTo, opts)
  const byDate = bodyFlag('byDate', fields.byDate)
  const byCampaign = bodyFlag('byCampaign', fields.byCampaign)

  // Spread (not assignment) so an own `__proto__` key stays a plain data property.
  // Both flags are always explicit booleans, as in the platform's documented body.
  const canonical: Record<string, unknown> = { ...fields, dateFrom, dateTo, byDate, byCampaign }
  const ids = fields.campaignIds === undefined ? [] : campaignIds(fields.campaignIds)
  if (fields.campaignIds !== undefined) canonical.campaignIds = ids
  if (bodyAdvertiser !== null) canonical.advertiserId = bodyAdvertiser

  // The platform reads the body's advertiserId over the query's (Laravel's input(): the body
  // wins) or the body's alone (a controller reading its JSON body): a query copy of the body's
  // is read under neither, so the report is sent, and kept, as the body alone says it.
  const pairs: Pair[] = queryAdvertiser === null || bodyAdvertiser !== null ? rest : [...rest, ['advertiserId', String(queryAdvertiser)]]
  const { query, sorted } = encodeQuery(pairs)
  return {
    method: 'POST',
    path,
    advertiserId: bodyAdvertiser ?? queryAdvertiser,
    campaignIds: ids,
    advertiserIds: bodyAdvertiser ?? queryAdvertiser ? [(bodyAdvertiser ?? queryAdvertiser) as number] : [],
    dateFrom,
    dateTo,
    byDate,
    byCampaign,
    query,
    body: stableStringify(canonical),
    keyMaterial: { method: 'POST', path, query: sorted, body: canonical },
  }
}
