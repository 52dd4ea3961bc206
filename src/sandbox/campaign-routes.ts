import type { FastifyReply } from 'fastify'
import { mayRead } from './accounts.js'
import { formatIsoDay } from './dates.js'
import type { NewCampaign, SandboxCreativeSet } from './catalog.js'
import { sendForbidden, sendInvalid, sendJson, sendNotFound } from './replies.js'
import type { SandboxState } from './state.js'
import type { PlatformRequest, PlatformRoutes } from './platform-routes.js'
import { allDefined, asRecord, Validator } from './validation.js'

// Campaign listing (a read, despite the POST), banner campaign create/delete, and the
// listing of creative sets. Each reads its input where the platform does: a list its
// `userId` from the body only (none there: the caller's own account), a delete nothing but
// the id in its path. The platform documents no route that lists creative sets:
// `/creative-set/get` is the sandbox's own, shaped as the campaign list, for a gateway
// told to look creative sets up (ownership.creativeSets).

const DEFAULT_PER_PAGE = 15
const MAX_PER_PAGE = 500
const COUNTRY = /^[A-Za-z]{2}$/
const HTTP_URL = /^https?:\/\/[^\s/]+/i

export function campaignRoutes(state: SandboxState): PlatformRoutes {
  return {
    '/campaign/get': { POST: (request, reply) => listOf(state, request, reply, (userId) => state.catalog.listOf(userId)) },
    '/creative-set/get': { POST: (request, reply) => listOf(state, request, reply, (userId) => state.catalog.creativeSetsOf(userId)) },
    '/campaign/banner/create': { POST: (request, reply) => createCampaign(state, request, reply) },
    '/campaign/banner/delete/:id': { DELETE: (request, reply) => deleteCampaign(state, request, reply) },
  }
}

/** A page of `rowsOf(userId)`, answered once its rows are worked on (Capacity's perRowMs each). */
async function listOf(state: SandboxState, request: PlatformRequest, reply: FastifyReply, rowsOf: (userId: number) => readonly object[]): Promise<void> {
  const v = new Validator()
  const userId = readUserId(v, request.body.userId, request.caller)
  const perPage = pageNumber(v, 'per_page', request.input.per_page, DEFAULT_PER_PAGE, MAX_PER_PAGE)
  const page = pageNumber(v, 'page', request.input.page, 1, Number.MAX_SAFE_INTEGER)
  if (v.hasErrors() || userId === undefined || perPage === undefined || page === undefined) {
    sendInvalid(request, reply, v)
    return
  }
  if (!mayRead(request.caller, state.accounts.get(userId))) {
    sendForbidden(reply)
    return
  }
  request.touch(userId)
  const rows = rowsOf(userId)
  const data = rows.slice((page - 1) * perPage, page * perPage)
  if ((await state.conditions.rowsWork(data.length)) === null) {
    // The sandbox closed meanwhile: no answer, as its latency's wait ends.
    reply.hijack()
    reply.raw.socket?.destroy()
    return
  }
  sendJson(reply, 200, {
    data,
    meta: { current_page: page, last_page: Math.max(1, Math.ceil(rows.length / perPage)), per_page: perPage, total: rows.length },
  })
}

/**
 * Each creative set must exist (Laravel's `exists` rule: 422) and be one the token reads,
 * and nothing ties it to the campaign's account: a parent's token makes a campaign of one
 * child that shows another child's creatives, as a controller that validates the ids
 * against the table alone lets it.
 */
function createCampaign(state: SandboxState, request: PlatformRequest, reply: FastifyReply): void {
  const v = new Validator()
  const input = readNewCampaign(v, request.input)
  const sets = input?.creativeSetIds.map((id, i) => state.catalog.creativeSet(id) ?? v.fail(`creativeSetIds.${i}`, `The selected creativeSetIds.${i} is invalid.`))
  if (input === undefined || sets === undefined || !sets.every((set): set is SandboxCreativeSet => set !== undefined)) {
    sendInvalid(request, reply, v)
    return
  }
  const accounts = [input.userId, ...sets.map((set) => set.userId)]
  if (!accounts.every((account) => mayRead(request.caller, state.accounts.get(account)))) {
    sendForbidden(reply)
    return
  }
  request.touch(input.userId)
  sendJson(reply, 201, { data: state.catalog.create(input) })
}

/**
 * A parent's token deletes any of its children's campaigns by id: no account is named.
 * The id is read as a controller's `$request->id` reads it: Laravel's magic property takes
 * an input named `id` (query or body, Request::__get) before the route's `{id}`. It is
 * looked up as MySQL compares a string with an integer column: by its leading number, so
 * `102001abc` is campaign 102001.
 */
function deleteCampaign(state: SandboxState, request: PlatformRequest, reply: FastifyReply): void {
  const named = request.input.id ?? request.params.id
  const id = /^\s*\+?(\d+)/.exec(typeof named === 'string' || typeof named === 'number' ? String(named) : '')?.[1]
  const campaign = id === undefined ? undefined : state.catalog.get(Number(id))
  if (campaign === undefined) sendNotFound(reply)
  else if (!mayRead(request.caller, state.accounts.get(campaign.userId))) sendForbidden(reply)
  else {
    request.touch(campaign.userId)
    state.catalog.delete(campaign.id)
    sendJson(reply, 200, { message: 'Deleted' })
  }
}

/** The account a call names; without one, the caller's own. */
function readUserId(v: Validator, value: unknown, caller: number): number | undefined {
  return value === undefined ? caller : v.integer('userId', value)
}

function pageNumber(v: Validator, field: string, value: unknown, fallback: number, max: number): number | undefined {
  if (value === undefined) return fallback
  const number = v.integer(field, value)
  if (number === undefined || (number >= 1 && number <= max)) return number
  return v.fail(field, `The ${field.replace('_', ' ')} field must be between 1 and ${max}.`)
}

function readNewCampaign(v: Validator, body: Record<string, unknown>): NewCampaign | undefined {
  const dates = asRecord(body.dates)
  const budget = asRecord(body.budget)
  const fields = {
    userId: v.required('userId', body.userId) ? v.integer('userId', body.userId) : undefined,
    name: v.string('name', body.name),
    adDomain: v.string('adDomain', body.adDomain),
    clickUrl: v.string('clickUrl', body.clickUrl),
    from: v.date('dates.from', dates.from),
    to: v.date('dates.to', dates.to),
    country: v.string('country', body.country),
    bid: v.positiveNumber('bid', body.bid),
    daily: v.positiveNumber('budget.daily', budget.daily),
    total: v.positiveNumber('budget.total', budget.total),
    creativeSetIds: v.integers('creativeSetIds', body.creativeSetIds),
  }
  const autoStart = v.flag('autoStart', body.autoStart)
  v.ordered('dates.to', 'dates.from', fields.from, fields.to)
  if (fields.clickUrl !== undefined && !HTTP_URL.test(fields.clickUrl)) v.fail('clickUrl', 'The click url field must be a valid URL.')
  if (fields.country !== undefined && !COUNTRY.test(fields.country)) v.fail('country', 'The country field must be 2 characters.')
  if (v.hasErrors() || !allDefined(fields)) return undefined
  const { from, to, country, daily, total, ...rest } = fields
  return {
    ...rest,
    autoStart,
    dates: { from: formatIsoDay(from), to: formatIsoDay(to) },
    country: country.toUpperCase(),
    budget: { daily, total },
  }
}
