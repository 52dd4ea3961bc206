import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../context.js'
import { BadRequestError, UnknownTeamError, UsageUnavailableError } from '../../errors.js'
import { isTeamName } from '../../config.js'
import { utcDay, type UsageRow } from '../../observe/usage.js'
import { GATEWAY_TEAM } from '../../platform/governor/gateway-team.js'

/** The longest range of days one usage call reads. */
export const MAX_USAGE_DAYS = 366

/** The answer's forms (`?format=`); JSON when none is named. */
export const USAGE_FORMATS = ['json', 'csv'] as const

/** The CSV form's columns, in order: the JSON rows' fields. */
export const USAGE_COLUMNS = ['day', 'team', 'requests', 'cacheHits', 'platformCalls', 'platformCallsSaved', 'bytes', 'rateLimited', 'errors'] as const satisfies readonly (keyof UsageRow)[]

/**
 * GET /admin/usage: daily totals per team, as JSON or as CSV for a spreadsheet.
 * Registered inside adminRoutes, behind its token check.
 */
export async function adminUsageRoutes(app: FastifyInstance, { ctx }: { ctx: GatewayContext }): Promise<void> {
  app.get('/admin/usage', async (request, reply) => {
    const q = request.query as { team?: string; from?: string; to?: string; format?: string }
    const format = q.format ?? 'json'
    if (!(USAGE_FORMATS as readonly unknown[]).includes(format)) throw new BadRequestError(`format: must be ${USAGE_FORMATS.join(' or ')}`)
    const to = q.to ?? utcDay(ctx.clock.now())
    const from = q.from ?? to
    for (const [name, value] of [['from', from], ['to', to]] as const) {
      if (!isDay(value)) throw new BadRequestError(`${name}: must be a date YYYY-MM-DD (UTC days)`)
    }
    const days = (Date.parse(to) - Date.parse(from)) / 86_400_000 + 1
    if (days < 1 || days > MAX_USAGE_DAYS) throw new BadRequestError(`from, to: from must not be after to, and the range at most ${MAX_USAGE_DAYS} days`)
    if (q.team !== undefined && q.team !== GATEWAY_TEAM && (typeof q.team !== 'string' || !isTeamName(q.team))) throw new BadRequestError(`team: not a team name (nor ${GATEWAY_TEAM})`)
    const rows = await ctx.usage.query(from, to, q.team ?? null)
    if (!rows) throw new UsageUnavailableError('Redis could not be read; try again')
    // A typo must not pass for a quiet team; a removed team's past usage still answers.
    if (q.team !== undefined && rows.length === 0 && !ctx.teams.teams.some((t) => t.name === q.team)) throw new UnknownTeamError(q.team)
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
