import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../context.js'
import { BadRequestError, UnknownTeamError, UsageUnavailableError } from '../../errors.js'
import { isTeamName } from '../../config.js'
import { utcDay, type UsageRow } from '../../observe/usage.js'
import { GATEWAY_TEAM } from '../../platform/gateway-team.js'
import { adminSchema } from './admin-schemas.js'

/** The longest range of days one usage call reads. */
export const MAX_USAGE_DAYS = 366

/** The answer's forms (`?format=`); JSON when none is named. */
export const USAGE_FORMATS = ['json', 'csv'] as const

/** The CSV form's columns, in order: the JSON rows' fields. */
export const USAGE_COLUMNS = ['day', 'team', 'requests', 'cacheHits', 'platformCalls', 'platformCallsSaved', 'bytes', 'rateLimited', 'errors', 'platformSeconds'] as const satisfies readonly (keyof UsageRow)[]

const count = (description: string) => ({ type: 'integer', minimum: 0, description })

/** One team's totals of one UTC day; the CSV form has one column per field, in this order. */
export const usageRowSchema = {
  type: 'object',
  required: [...USAGE_COLUMNS],
  properties: {
    day: { type: 'string', format: 'date', description: 'The UTC day, `YYYY-MM-DD`.' },
    team: { type: 'string', description: 'The team, or `(gateway)` for the gateway\'s own platform calls.' },
    requests: count('Answers to the team\'s calls on the proxy listener, errors and 429s included.'),
    cacheHits: count('Report reads answered without a platform call of their own (from the cache, or by joining another caller\'s call).'),
    platformCalls: count('Calls the gateway made to the platform for the team.'),
    platformCallsSaved: count('`cacheHits`: each such read would have been one platform call without the cache.'),
    bytes: count('Bytes written to the team\'s connections for its answers (status line, headers, body).'),
    rateLimited: count('Answers with status 429: the team\'s rate limit (`GW_RATE_LIMITED`), or the platform\'s 429 passed through.'),
    errors: count('Answers with a 5xx status (the platform failed or timed out, the queue was full, a fault of the gateway).'),
    platformSeconds: { type: 'number', minimum: 0, description: 'The platform time the team\'s platform calls held (their seat-time: from each call\'s sending to its answer\'s headers), in seconds to the ms; what `teams.<name>.platformSecondsPerDay` bounds.' },
  },
} as const

/** GET /admin/usage (JSON). */
export const usageSchema = {
  type: 'object',
  required: ['from', 'to', 'usage'],
  properties: {
    from: { type: 'string', format: 'date' },
    to: { type: 'string', format: 'date' },
    usage: { type: 'array', items: usageRowSchema, description: `One row per day and team that has usage, by day then team; at most ${MAX_USAGE_DAYS} days.` },
  },
} as const

const USAGE_CSV =
  `One header row, then one row per day and team, CRLF line ends (RFC 4180): ${USAGE_COLUMNS.map((c) => `\`${c}\``).join(', ')}. ` +
  'A cell a spreadsheet would read as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) starts with `\'`.'

const DAY = { type: 'string', maxLength: 10 }

const usageRoute = adminSchema({
  tag: 'teams',
  operationId: 'getUsage',
  summary: 'Daily totals per team',
  description:
    'Per UTC day and team: requests, cache hits, platform calls, bytes, 429s and 5xx answers, platform-seconds. This replica\'s counts are flushed first; ' +
    'other replicas\' may lag by `usage.flush`. `?format=csv` gives the same rows as a CSV file for a spreadsheet.',
  query: {
    from: { ...DAY, description: 'a UTC day `YYYY-MM-DD`, the first of the range (default: `to`)' },
    to: { ...DAY, description: `a UTC day \`YYYY-MM-DD\`, the last of the range, included (default: today; at most ${MAX_USAGE_DAYS} days from \`from\`)` },
    team: { type: 'string', maxLength: 128, description: `a team (or \`${GATEWAY_TEAM}\`); default: every team` },
    format: { type: 'string', enum: [...USAGE_FORMATS], description: USAGE_FORMATS.join(' or ') },
  },
  response: {
    200: {
      description: `The totals (\`format=json\`), or the same rows as CSV (\`format=csv\`). ${USAGE_CSV}`,
      headers: {
        'content-disposition': { type: 'string', pattern: '^attachment; filename="usage-\\d{4}-\\d{2}-\\d{2}-\\d{4}-\\d{2}-\\d{2}\\.csv"$', description: 'With `format=csv`: `attachment; filename="usage-<from>-<to>.csv"`.' },
      },
      content: {
        'application/json': { schema: usageSchema },
        'text/csv': { schema: { type: 'string', description: USAGE_CSV } },
      },
    },
  },
  errors: {
    GW_BAD_REQUEST: 'A parameter is malformed: a date that is no date, `from` after `to`, a range over the limit, a team name no team can have, an unknown `format`.',
    GW_NOT_FOUND: '`team` names no running team, and no team of that name has usage in the range.',
    GW_REDIS_UNAVAILABLE: 'Redis could not be read; try again.',
  },
})

/**
 * GET /admin/usage: daily totals per team, as JSON or as CSV for a spreadsheet.
 * Registered inside adminRoutes, behind its token check.
 */
export async function adminUsageRoutes(app: FastifyInstance, { clock, usage, teams }: Pick<GatewayContext, 'clock' | 'usage' | 'teams'>): Promise<void> {
  app.get('/admin/usage', { schema: usageRoute }, async (request, reply) => {
    const q = request.query as { team?: string; from?: string; to?: string; format?: string }
    const format = q.format ?? 'json'
    const to = q.to ?? utcDay(clock.now())
    const from = q.from ?? to
    for (const [name, value] of [['from', from], ['to', to]] as const) {
      if (!isDay(value)) throw new BadRequestError(`${name}: must be a date YYYY-MM-DD (UTC days)`)
    }
    const days = (Date.parse(to) - Date.parse(from)) / 86_400_000 + 1
    if (days < 1 || days > MAX_USAGE_DAYS) throw new BadRequestError(`from, to: from must not be after to, and the range at most ${MAX_USAGE_DAYS} days`)
    if (q.team !== undefined && q.team !== GATEWAY_TEAM && (typeof q.team !== 'string' || !isTeamName(q.team))) throw new BadRequestError(`team: not a team name (nor ${GATEWAY_TEAM})`)
    const rows = await usage.query(from, to, q.team ?? null)
    if (!rows) throw new UsageUnavailableError()
    // A typo must not pass for a quiet team; a removed team's past usage still answers.
    if (q.team !== undefined && rows.length === 0 && !teams.teams.some((t) => t.name === q.team)) throw new UnknownTeamError()
    if (format === 'json') return { from, to, usage: rows }
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="usage-${from}-${to}.csv"`)
      .send(usageCsv(rows))
  })
}

function isDay(value: unknown): value is string {
  return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) && utcDay(Date.parse(`${value}T00:00:00Z`) || 0) === value
}

/** Usage rows as CSV (RFC 4180: a header row, CRLF line ends, quoted where a cell needs it). */
export function usageCsv(rows: readonly UsageRow[]): string {
  const lines = [USAGE_COLUMNS.join(',')]
  for (const row of rows) lines.push(USAGE_COLUMNS.map((column) => csvCell(row[column])).join(','))
  return `${lines.join('\r\n')}\r\n`
}

/**
 * One CSV cell. A text that a spreadsheet would read as a formula (starting with = + - @,
 * a tab or a carriage return) is prefixed with `'` so that it stays text (OWASP, "CSV
 * Injection"); a cell holding a quote, a comma or a line break is quoted, its quotes doubled.
 */
export function csvCell(value: string | number): string {
  if (typeof value === 'number') return String(value)
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}
