import { parseArgs } from 'node:util'
import { epochDay } from '../reports/report-query.js'

// Cache warming, the parts without I/O: what the command line asks for, which
// report reads that makes, and what each answer means for the summary.

export const USAGE = `usage: npm run warm -- --advertisers 101,102 --from YYYY-MM-DD --to YYYY-MM-DD [options]
  --advertisers LIST   accounts to warm, comma-separated (the key's team must be allowed them)
  --from, --to DAY     the report range, YYYY-MM-DD, both included
  --splits LIST        report splits, comma-separated (default: campaigns)
  --by-date            one row per day (byDate=1)
  --by-campaign        one row per campaign (byCampaign=1)
  --url URL            the gateway's proxy listener (default: $WARM_URL)
  --concurrency N      reports asked at once (default: 4, at most 32)
  --timeout SECONDS    longest wait for one report (default: 120)
  --jobs               ask each report as a job of the team (prefer: respond-async), then
                       wait for the jobs, each at most --timeout once asked, showing how many are open
environment: WARM_API_KEY (required): the team key the reports are asked with; WARM_URL.
exit code: 0 when every report was read, 1 when any failed, 2 for a usage error.`

export interface WarmOptions {
  baseUrl: string
  apiKey: string
  advertisers: number[]
  splits: string[]
  from: string
  to: string
  byDate: boolean
  byCampaign: boolean
  concurrency: number
  timeoutMs: number
  /** Ask each report as a job (`prefer: respond-async`) and wait for the jobs. */
  jobs: boolean
}

export interface WarmRequest {
  advertiserId: number
  split: string
  /** Path and query, relative to the gateway's base URL. */
  path: string
}

export type Outcome = 'warmed' | 'fresh' | 'stale' | 'uncacheable' | 'failed'

export interface Answer {
  status: number
  xCache: string | null
  /** A 202's `location`: the job the report was asked as. */
  location?: string | null
  /** The `code` and `message` of a JSON error body, where there is one. */
  error?: { code?: string; message?: string } | null
}

const MAX_CONCURRENCY = 32
const SPLIT = /^[A-Za-z0-9_-]+$/
const DAY = /^\d{4}-\d{2}-\d{2}$/

export class UsageError extends Error {}

function list(name: string, value: string | undefined): string[] {
  const items = (value ?? '').split(',').map((s) => s.trim()).filter(Boolean)
  if (items.length === 0) throw new UsageError(`--${name}: a comma-separated list is required`)
  return [...new Set(items)]
}

function day(name: string, value: string | undefined): { text: string; n: number } {
  const n = value !== undefined && DAY.test(value) ? epochDay(value) : null
  if (value === undefined || n === null) throw new UsageError(`--${name}: a calendar date YYYY-MM-DD is required (${value ?? 'none given'})`)
  return { text: value, n }
}

function wholeNumber(name: string, value: string | undefined, fallback: number, max: number): number {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!/^\d+$/.test(value) || n < 1 || n > max) throw new UsageError(`--${name}: a whole number from 1 to ${max} (${value})`)
  return n
}

/** The options of a command line and environment; throws UsageError naming what is wrong. */
export function warmOptions(argv: string[], env: Record<string, string | undefined>): WarmOptions {
  let values
  try {
    ;({ values } = parseArgs({
      args: argv,
      strict: true,
      options: {
        advertisers: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        splits: { type: 'string' },
        'by-date': { type: 'boolean', default: false },
        'by-campaign': { type: 'boolean', default: false },
        url: { type: 'string' },
        concurrency: { type: 'string' },
        timeout: { type: 'string' },
        jobs: { type: 'boolean', default: false },
      },
    }))
  } catch (err) {
    // Node's own wording, first sentence only: the rest explains `--` and fits no line.
    throw new UsageError((err as Error).message.split(/\.\s|\n/)[0])
  }
  const advertisers = list('advertisers', values.advertisers).map((a) => {
    if (!/^\d+$/.test(a) || !Number.isSafeInteger(Number(a)) || Number(a) < 1) throw new UsageError(`--advertisers: ${a} is not a positive integer`)
    return Number(a)
  })
  const splits = values.splits === undefined ? ['campaigns'] : list('splits', values.splits)
  const bad = splits.find((s) => !SPLIT.test(s))
  if (bad !== undefined) throw new UsageError(`--splits: ${bad} is not a split name (letters, digits, _ -)`)
  const from = day('from', values.from)
  const to = day('to', values.to)
  if (to.n < from.n) throw new UsageError(`--to: ${to.text} is before --from ${from.text}`)
  const baseUrl = values.url ?? env.WARM_URL
  if (!baseUrl) throw new UsageError('--url or WARM_URL: the gateway\'s address is required, e.g. http://report-gateway:8080')
  let parsed: URL
  try {
    parsed = new URL(baseUrl)
  } catch {
    throw new UsageError(`--url: not a URL (${baseUrl})`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--url: http or https only (${parsed.protocol})`)
  // fetch refuses a URL holding credentials (every report would fail); the team key is WARM_API_KEY.
  if (parsed.username !== '' || parsed.password !== '') throw new UsageError('--url: a URL without a user or password (the value is not shown); the team key comes from WARM_API_KEY')
  const apiKey = env.WARM_API_KEY?.trim()
  if (!apiKey) throw new UsageError('WARM_API_KEY: the team key to call the gateway with is required')
  return {
    baseUrl: baseUrl.replace(/\/+$/, ''),
    apiKey,
    advertisers,
    splits,
    from: from.text,
    to: to.text,
    byDate: values['by-date'],
    byCampaign: values['by-campaign'],
    concurrency: wholeNumber('concurrency', values.concurrency, 4, MAX_CONCURRENCY),
    timeoutMs: wholeNumber('timeout', values.timeout, 120, 3600) * 1000,
    jobs: values.jobs,
  }
}

/**
 * One report read per advertiser and split, in the gateway's canonical spelling, so
 * that the entries it fills are the ones callers' spellings of the same report hit.
 */
export function planWarm(opts: Pick<WarmOptions, 'advertisers' | 'splits' | 'from' | 'to' | 'byDate' | 'byCampaign'>): WarmRequest[] {
  const requests: WarmRequest[] = []
  for (const advertiserId of opts.advertisers) {
    for (const split of opts.splits) {
      const query = new URLSearchParams({ advertiserId: String(advertiserId), dateFrom: opts.from, dateTo: opts.to })
      if (opts.byDate) query.set('byDate', '1')
      if (opts.byCampaign) query.set('byCampaign', '1')
      query.sort()
      requests.push({ advertiserId, split, path: `/api/v1/report/${encodeURIComponent(split)}/get?${query}` })
    }
  }
  return requests
}

/** What an answer of the gateway means for the cache (contract, "Report requests"). */
export function outcomeOf(answer: Answer): Outcome {
  if (answer.status !== 200) return 'failed'
  switch (answer.xCache) {
    case 'HIT':
      return 'fresh'
    case 'MISS':
    case 'REFRESH':
      return 'warmed'
    case 'STALE':
      return 'stale'
    default:
      // BYPASS (too large, no-store), or no x-cache at all (the gateway's cache is off).
      return 'uncacheable'
  }
}

/** How long to wait before asking again, for an answer worth one more try; else null. */
export function retryDelayMs(status: number, retryAfter: string | null, attempt: number, maxAttempts: number): number | null {
  if ((status !== 429 && status !== 503) || attempt >= maxAttempts) return null
  const seconds = retryAfter !== null && /^\d+$/.test(retryAfter) ? Number(retryAfter) : 1
  return seconds > 60 ? null : Math.max(seconds, 1) * 1000
}

export type Tally = Record<Outcome, number>

export const emptyTally = (): Tally => ({ warmed: 0, fresh: 0, stale: 0, uncacheable: 0, failed: 0 })

export function describeTally(t: Tally): string {
  return `${t.warmed} warmed, ${t.fresh} already fresh, ${t.stale} stale, ${t.uncacheable} not cacheable, ${t.failed} failed`
}

/** One line for a report that failed: which, and what the gateway said. */
export function describeFailure(request: WarmRequest, answer: Answer | { network: string }): string {
  if ('network' in answer) return `failed: GET ${request.path}: ${answer.network}`
  const said = [answer.error?.code, answer.error?.message].filter(Boolean).join(': ')
  return `failed: GET ${request.path}: ${answer.status}${said ? ` ${said}` : ''}`
}
