import type { FastifyInstance } from 'fastify'
import type { GatewayContext } from '../context.js'
import { BadRequestError, NotCachedError, NotFoundError } from '../../errors.js'
import type { Config } from '../../config.js'
import { checkTarget } from '../../access/request-target.js'
import { canonicalGetReport, type CanonicalReport } from '../../reports/report-query.js'
import { inflate, type CacheEntry } from '../../cache/cache-entry.js'
import { adminSchema, answer, DRY_RUN, flagOn, purgeSchema } from './admin-schemas.js'
import { counted } from './admin-cache.js'

const REPORT_PREFIX = '/api/v1/report/'

const instant = { type: 'string', format: 'date-time' } as const

const entrySchema = {
  type: 'object',
  required: ['report', 'redis', 'entries'],
  properties: {
    report: { type: 'string', description: 'The report as the gateway spells it (its canonical path and query): every spelling of it is this one entry.' },
    redis: { type: 'string', enum: ['ok', 'down', 'not configured'], description: 'Redis as this replica found it: `down`, the `l2` tier could not be read.' },
    entries: {
      type: 'array',
      description: 'Its entry under each credential that holds one (a key is per credential), the newest copy described.',
      items: {
        type: 'object',
        required: ['credential', 'key', 'tiers', 'state', 'fetchedAt', 'ageSeconds', 'freshUntil', 'ttlSeconds', 'staleUntil', 'errorUntil', 'etag', 'contentType', 'gzipBytes', 'bodyBytes', 'advertiserIds', 'filledBy'],
        properties: {
          credential: { type: 'string' },
          key: { type: 'string', description: 'The cache key (Redis key of the L2 copy): a hash, never the query.' },
          tiers: {
            type: 'array',
            description: 'The copies: `l1` this replica\'s memory, `l2` Redis, each with its fill time and ETag.',
            items: { type: 'object', required: ['tier', 'fetchedAt', 'etag'], properties: { tier: { type: 'string', enum: ['l1', 'l2'] }, fetchedAt: instant, etag: { type: 'string' } } },
          },
          state: { type: 'string', enum: ['fresh', 'stale', 'stale-if-error', 'expired'], description: '`fresh` (HIT), `stale` (served while refreshed), `stale-if-error` (served only when the platform fails), `expired`.' },
          fetchedAt: { ...instant, description: 'When the platform answered it.' },
          ageSeconds: { type: 'integer', minimum: 0 },
          freshUntil: instant,
          ttlSeconds: { type: 'integer', minimum: 0, description: 'Seconds of freshness left.' },
          staleUntil: { ...instant, description: 'The end of its stale-while-revalidate window.' },
          errorUntil: { ...instant, description: 'The end of its stale-if-error window, when it leaves the cache.' },
          etag: { type: 'string', description: 'Its ETag, as answers carry it (quoted).' },
          contentType: { type: 'string' },
          gzipBytes: { type: 'integer', minimum: 0, description: 'Bytes stored (the body, gzip-compressed).' },
          bodyBytes: { type: ['integer', 'null'], minimum: 0, description: 'Bytes of the body as the platform sent it.' },
          advertiserIds: { type: 'array', items: { type: 'integer' }, description: "The advertisers a purge by advertiser reaches it under; 0: a report whose campaigns' owners are not known (an unrestricted team's POST report, or its GET report naming campaigns), which every advertiser's purge reaches." },
          filledBy: {
            type: ['object', 'null'],
            required: ['team', 'replica'],
            properties: { team: { type: 'string' }, replica: { type: 'string' } },
            description: 'The team whose read made the platform call that filled it, and the replica that made it; null for a copy of an older gateway.',
          },
        },
      },
    },
  },
} as const

const URL_PARAM = {
  type: 'string',
  minLength: 1,
  maxLength: 16384,
  description: 'a report read\'s URL, `/api/v1/report/…?…` or `http(s)://host/api/v1/report/…` (any spelling: parameter order, `true` or `1`, `007`)',
}
const NOT_A_REPORT = 'The URL is not a report read the gateway would cache (a path outside `/api/v1/report/`, an invalid parameter: the message names it).'

const lookup = adminSchema({
  tag: 'cache',
  operationId: 'getCacheEntry',
  summary: 'Look at one cached report',
  description: 'The entry of one report, found by its URL in any spelling the gateway takes for the same report: key, tiers, age, freshness, stale windows, size, ETag, who filled it and when. Reads only: nothing is refreshed or moved between tiers.',
  query: { url: URL_PARAM },
  requiredQuery: ['url'],
  response: { 200: answer(entrySchema, 'The report\'s entries.') },
  errors: { GW_BAD_REQUEST: NOT_A_REPORT, GW_NOT_FOUND: 'No copy of the report is cached, under any credential.' },
})

const drop = adminSchema({
  tag: 'cache',
  operationId: 'purgeCacheEntry',
  summary: 'Drop one cached report on every replica',
  description: 'Its entry under every credential, in Redis and in each replica\'s memory; final like every purge (a copy filled before it is never served again). Audited with the operator. `dryRun=1` drops nothing and answers what it would drop.',
  query: { url: URL_PARAM, dryRun: DRY_RUN },
  requiredQuery: ['url'],
  response: { 200: answer(purgeSchema, 'What was dropped, or with `dryRun` what would be.') },
  errors: { GW_BAD_REQUEST: NOT_A_REPORT, GW_REDIS_UNAVAILABLE: 'This replica dropped its copy in memory, but Redis could not be reached, or is out of memory and refused the purge\'s record (the message says whether its copy in Redis was dropped); repeat the call once Redis is back or has room. (A dry run: Redis could not be read.)' },
})

/**
 * The report a URL reads, as the report route reads it (access/request-target.ts,
 * reports/report-query.ts); 400 naming what is wrong. A URL holding a team key (`holdsKey`)
 * is no report the gateway caches, as its reads refuse such a target: 400 without the value.
 */
export function reportOf(url: string, config: Config, holdsKey: (text: string) => boolean): CanonicalReport {
  // An absolute URL's origin is the operator's way to it, not part of the report.
  const target = url.replace(/^https?:\/\/[^/?#]*/i, '')
  if (holdsKey(target)) throw new BadRequestError('url: holds a team key; no report the gateway caches holds one (the value is not shown)')
  try {
    const checked = checkTarget(target, config.limits.params)
    if (!checked.path.startsWith(REPORT_PREFIX)) throw new NotFoundError()
    return canonicalGetReport(checked.path, checked.search, { maxRangeDays: config.cache.maxRangeDays })
  } catch (err) {
    const { code, message } = err as { code?: string; message: string }
    if (code === 'GW_NOT_FOUND') throw new BadRequestError(`url: not a report read (GET ${REPORT_PREFIX}…) the gateway serves`)
    if (code === 'GW_BAD_QUERY' || code === 'GW_BAD_REQUEST') throw new BadRequestError(`url: ${withoutShownValue(message)}`)
    throw err
  }
}

/**
 * A report read's refusal as the look-up repeats it: its words up to the value it shows of
 * what it read (`advertiserId: must be a positive integer (<value>)`), which the answer's
 * scrub would write `[REDACTED]` where it held a secret of the gateway's: a viewer's guess
 * at it answered. The words before it name the parameter and what it must be.
 */
export function withoutShownValue(message: string): string {
  const shown = message.indexOf(' (')
  return shown === -1 ? message : message.slice(0, shown)
}

const iso = (ms: number) => new Date(ms).toISOString()

function describe(credential: string, key: string, copies: { tier: 'l1' | 'l2'; entry: CacheEntry }[], now: number, maxEntryBytes: number) {
  const { entry } = copies.reduce((a, b) => (b.entry.fetchedAt > a.entry.fetchedAt ? b : a))
  const state = now < entry.freshUntil ? 'fresh' : now < entry.staleUntil ? 'stale' : now < entry.errorUntil ? 'stale-if-error' : 'expired'
  return {
    credential,
    key,
    tiers: copies.map((c) => ({ tier: c.tier, fetchedAt: iso(c.entry.fetchedAt), etag: `"${c.entry.etag}"` })),
    state,
    fetchedAt: iso(entry.fetchedAt),
    ageSeconds: Math.max(0, Math.floor((now - entry.fetchedAt) / 1000)),
    freshUntil: iso(entry.freshUntil),
    ttlSeconds: Math.max(0, Math.floor((entry.freshUntil - now) / 1000)),
    staleUntil: iso(entry.staleUntil),
    errorUntil: iso(entry.errorUntil),
    etag: `"${entry.etag}"`,
    contentType: entry.contentType,
    gzipBytes: entry.gzip.length,
    bodyBytes: (entry.identity ?? inflate(entry.gzip, maxEntryBytes))?.length ?? null,
    advertiserIds: entry.advertiserIds,
    filledBy: entry.filledBy ?? null,
  }
}

/**
 * One cached report, found by its URL: looked at, or dropped on every replica.
 * Registered inside adminRoutes, behind its token check.
 */
export async function cacheEntryRoutes(
  app: FastifyInstance,
  { config, teams, tokens, reports, breaker, clock, auditLog }: Pick<GatewayContext, 'config' | 'teams' | 'tokens' | 'reports' | 'breaker' | 'clock' | 'auditLog'>,
): Promise<void> {
  const keysOf = (url: string) => {
    const report = reportOf(url, config, (text) => teams.holdsKey(text))
    return { report: report.query ? `${report.path}?${report.query}` : report.path, keys: tokens.all().map((p) => ({ credential: p.name, key: reports.keyFor(p.name, report) })) }
  }

  app.get('/admin/cache/entry', { schema: lookup }, async (request) => {
    const { report, keys } = keysOf((request.query as { url: string }).url)
    const now = clock.now()
    const entries = []
    for (const { credential, key } of keys) {
      const { l1, l2 } = await reports.inspect(key)
      const copies = [...(l1 ? [{ tier: 'l1' as const, entry: l1 }] : []), ...(l2 ? [{ tier: 'l2' as const, entry: l2 }] : [])]
      if (copies.length > 0) entries.push(describe(credential, key, copies, now, config.cache.maxEntryBytes))
    }
    if (entries.length === 0) throw new NotCachedError()
    return { report, redis: breaker === null ? 'not configured' : breaker.state === 'closed' ? 'ok' : 'down', entries }
  })

  app.delete('/admin/cache/entry', { schema: drop }, async (request) => {
    const q = request.query as { url: string; dryRun?: string }
    const { report, keys } = keysOf(q.url)
    const scope = { purged: 'report' as const, report }
    if (flagOn(q.dryRun)) {
      let wouldDrop = 0
      for (const { key } of keys) wouldDrop += await counted(reports.wouldPurgeKey(key))
      auditLog.info({ action: 'purge', outcome: 'dry-run', scope: 'report', report, wouldDrop, actor: request.adminActor }, 'report cache purge, dry run: nothing dropped')
      return { ...scope, dryRun: true, wouldDrop }
    }
    let dropped = 0
    for (const { key } of keys) dropped += await reports.purgeKey(key)
    auditLog.info({ action: 'purge', scope: 'report', report, dropped, actor: request.adminActor }, 'report cache purged')
    return { ...scope, dryRun: false, dropped }
  })
}
