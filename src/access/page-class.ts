import { routeTemplate } from '../platform/route-template.js'
import type { CheckedBody } from './request-body.js'
import { phpVariable, type Pair, type RequestTarget } from './request-target.js'

// The page a call asks of the platform, as the work estimate tells calls apart by it
// (docs/governor.md, "Words": kind). A page of 500 rows holds a worker far longer than a
// page of one, or than a page past the last (no rows), on the same route: a class that
// ignored them let a team keep its route's estimate short with cheap pages and then be
// lent the seats owed to another team for costly ones (dispatch rule 2.2). Read where
// Laravel's paginate() reads them: `$request->input()`, a JSON or form body's over the
// query's, of PHP's variable (`per.page` is `per_page`), the last of a name.

const PER_PAGE = 'per_page'
const PAGE = 'page'
// The largest class of a size: 2^64 rows and more (PHP's integers end there).
const MAX_BUCKET = 64
// PHP's reading of a string as a number: leading whitespace, a sign, digits, a fraction, an
// exponent; what follows is dropped (`(int) "500abc"` is 500, `(int) "5e2"` 500).
const NUMERIC_PREFIX = /^[ \t\n\r\v\f]*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/
// A name PHP stores as a list: a `[` that a `]` follows (request-target.ts phpVariable).
const LIST_NAME = /\[.*\]/
// filter_var(FILTER_VALIDATE_INT), which Paginator::resolveCurrentPage reads a page by: any other is page 1.
const PLAIN_INT = /^[ \t\n\r\v\f]*[+-]?(?:0|[1-9]\d*)[ \t\n\r\v\f]*$/

/** What the platform reads a call's input from: its query, and its JSON (top-level object) or form body. */
export interface CallInput {
  query: readonly Pair[]
  json?: unknown
  form?: readonly Pair[]
}

/** A proxied call's work class: its route, and the page it asks (`pageClass`). */
export function proxiedWorkClass(target: RequestTarget, body: CheckedBody | null): string {
  const input: CallInput = body?.kind === 'json' ? { query: target.params, json: body.value } : body?.kind === 'form' ? { query: target.params, form: body.params } : { query: target.params }
  return `${routeTemplate(target.path)}${pageClass(input)}`
}

/**
 * The page a call asks, as a part of its work class: `|p` the page size's class
 * (⌈log2(n + 1)⌉ of n rows; `-` below 0, which Laravel's limit() takes as no limit: every
 * row; `x` a list), `|g` the page's (⌈log2(page)⌉); '' where the platform's defaults
 * hold (no size, or 0: the model's own; page 1).
 */
export function pageClass(input: CallInput): string {
  const page = pageNumber(inputOf(input, PAGE))
  return `${sizeClass(phpNumber(inputOf(input, PER_PAGE)))}${page > 1 ? `|g${bucket(page)}` : ''}`
}

function sizeClass(size: number | null | undefined): string {
  if (size === null) return '|px'
  const rows = Math.trunc(size ?? 0)
  return rows === 0 ? '' : rows < 0 ? '|p-' : `|p${bucket(rows + 1)}`
}

const bucket = (n: number): number => Math.min(MAX_BUCKET, Math.ceil(Math.log2(n)))

/** `name`'s value as Laravel's input() reads it: the JSON body's top-level key, else the form's, else the query's (undefined: none). */
function inputOf({ query, json, form }: CallInput, name: string): unknown {
  if (typeof json === 'object' && json !== null && !Array.isArray(json) && Object.hasOwn(json, name)) return (json as Record<string, unknown>)[name]
  return paramOf(form ?? [], name) ?? paramOf(query, name)
}

/** The value PHP keeps of variable `name` in `params`: the last one's, a list where that one is spelled as one (`name[]`, `name[x]`). */
function paramOf(params: readonly Pair[], name: string): unknown {
  const last = params.findLast(([key]) => phpVariable(key) === name)
  if (last === undefined) return undefined
  return LIST_NAME.test(last[0]) ? [last[1]] : last[1]
}

/** A value as PHP casts it to a number (undefined: none given; null: a list or an object, which no page size is). */
function phpNumber(value: unknown): number | null | undefined {
  if (value === undefined || typeof value === 'number') return value
  if (typeof value === 'boolean') return value ? 1 : 0
  if (typeof value === 'string') return Number(NUMERIC_PREFIX.exec(value)?.[0] ?? 0)
  return value === null ? 0 : null
}

/** The page Laravel's paginator reads: a plain integer of 1 or more, else 1. */
function pageNumber(value: unknown): number {
  const n = typeof value === 'number' && Number.isInteger(value) ? value : typeof value === 'string' && PLAIN_INT.test(value) ? Number(value) : 1
  return n >= 1 ? n : 1
}
