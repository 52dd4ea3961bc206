import { randomUUID } from 'node:crypto'
import { systemClock } from '../clock.js'
import { connectionFailure } from '../platform/client/connection-failure.js'
import { describeFailure, emptyTally, outcomeOf, retryDelayMs, type Answer, type Tally, type WarmOptions, type WarmRequest } from './warm-plan.js'

// Cache warming, the I/O: the planned report reads sent to the gateway, a bounded number
// at a time, each answer counted as it comes.

export interface WarmProgress {
  done: number
  total: number
  tally: Tally
  /** Reports asked as jobs (`--jobs`) and not ended yet. */
  open?: number
}

export interface WarmResult {
  tally: Tally
  /** One line per report that failed (warm-plan.ts describeFailure). */
  failures: string[]
}

const MAX_ATTEMPTS = 3
const ERROR_BODY_BYTES = 4096
const MAX_REDIRECTS = 5

/**
 * The gateway answered with a redirect to another origin: the run stops, since following
 * it would send the team key there.
 */
export class RedirectRefused extends Error {
  constructor(from: string, to: string) {
    super(`${from} redirected to another origin (${to}); refused, so that the team key is sent nowhere else`)
    this.name = 'RedirectRefused'
  }
}

export async function runWarm(opts: WarmOptions, requests: WarmRequest[], onProgress: (p: WarmProgress) => void = () => undefined): Promise<WarmResult> {
  const tally = emptyTally()
  const failures: string[] = []
  const jobs: { request: WarmRequest; location: string }[] = []
  let done = 0
  let ended = 0
  const progress = () => onProgress({ done, total: requests.length, tally, ...(opts.jobs ? { open: jobs.length - ended } : {}) })
  const count = (request: WarmRequest, answer: Answer | { network: string }) => {
    const outcome = 'network' in answer ? 'failed' : outcomeOf(answer)
    tally[outcome]++
    if (outcome === 'failed') failures.push(describeFailure(request, answer))
    done++
    progress()
  }
  await inTurn(requests, opts.concurrency, async (request) => {
    const answer = await ask(opts, `${opts.baseUrl}${request.path}`, opts.jobs ? ASYNC : {})
    if (!('network' in answer) && answer.status === 202 && answer.location) {
      jobs.push({ request, location: answer.location })
      progress()
    } else count(request, answer)
  })
  // The jobs, each waited for with the gateway's `wait`, at most --timeout once asked.
  await inTurn(jobs, opts.concurrency, async ({ request, location }) => {
    const answer = await jobEnd(opts, new URL(location, opts.baseUrl).href)
    ended++
    count(request, answer)
  })
  return { tally, failures }
}

/** `work` on each of `items`, at most `concurrency` at once; a refused redirect stops the run. */
async function inTurn<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let refused = false
  const worker = async () => {
    while (next < items.length && !refused) {
      await work(items[next++] as T).catch((err: unknown) => {
        if (err instanceof RedirectRefused) refused = true
        throw err
      })
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker))
}

const ASYNC = { prefer: 'respond-async' }
const JOB_WAIT_SECONDS = 30
// A status call's answer time beyond its wait.
const JOB_WAIT_MARGIN_SECONDS = 10

/**
 * How a job ended, as the answer of a report read: done is a 200 MISS (warmed), failed or
 * expired its error; still open after --timeout, a failure that says where the job is.
 */
async function jobEnd(opts: WarmOptions, url: string): Promise<Answer | { network: string }> {
  const until = systemClock.now() + opts.timeoutMs
  for (;;) {
    const wait = Math.max(0, Math.min(JOB_WAIT_SECONDS, Math.floor((until - systemClock.now()) / 1000)))
    const answer = await ask(opts, `${url}?wait=${wait}`, {}, (wait + JOB_WAIT_MARGIN_SECONDS) * 1000)
    if ('network' in answer || answer.status !== 200) return answer
    const status = answer.job as { state?: string; error?: { code?: string; message?: string } | null }
    if (status.state === 'done') return { status: 200, xCache: 'MISS' }
    if (status.state === 'failed') return { network: `the job failed: ${[status.error?.code, status.error?.message].filter(Boolean).join(': ')}` }
    if (status.state === 'expired') return { network: `the job's result expired before it was read (${url})` }
    if (systemClock.now() >= until) return { network: `job ${url} still ${status.state ?? 'open'} after ${opts.timeoutMs / 1000} s (it goes on at the gateway)` }
  }
}

// A 429 or 503 with a short retry-after is asked again (at most MAX_ATTEMPTS times):
// a warm run should not fail for its own team's rate limit.
async function ask(opts: WarmOptions, url: string, headers: Record<string, string>, timeoutMs = opts.timeoutMs): Promise<(Answer & { job?: unknown }) | { network: string }> {
  for (let attempt = 1; ; attempt++) {
    let res: Response
    try {
      res = await fetchSameOrigin(opts, url, headers, timeoutMs)
    } catch (err) {
      if (err instanceof RedirectRefused) throw err
      const e = err as Error & { cause?: { code?: string; message?: string } }
      if (e.name === 'TimeoutError') return { network: `no answer within ${timeoutMs / 1000} s` }
      // A connection's failure as a platform call's says it (a TLS handshake answered in plain HTTP in words).
      if (typeof e.cause?.code === 'string') return { network: connectionFailure(e.cause, "--url's address") }
      return { network: e.cause?.message ?? e.message }
    }
    const xCache = res.headers.get('x-cache')
    if (res.status === 202) {
      await res.arrayBuffer()
      return { status: 202, xCache, location: res.headers.get('location') }
    }
    // A job's status (`/api/v1/jobs/…`) is JSON to read; a report's body is only drained.
    if (res.status === 200 && url.includes('/api/v1/jobs/')) return { status: 200, xCache, job: await res.json() }
    if (res.status === 200) {
      await res.arrayBuffer()
      return { status: 200, xCache }
    }
    const text = (await res.text()).slice(0, ERROR_BODY_BYTES)
    const wait = retryDelayMs(res.status, res.headers.get('retry-after'), attempt, MAX_ATTEMPTS)
    if (wait === null) return { status: res.status, xCache, error: errorOf(text) }
    await new Promise((resolve) => setTimeout(resolve, wait))
  }
}

// fetch's own redirect following would send the key to any origin the answer names;
// only the gateway's own origin gets it.
async function fetchSameOrigin(opts: WarmOptions, url: string, headers: Record<string, string>, timeoutMs: number): Promise<Response> {
  const signal = AbortSignal.timeout(timeoutMs)
  const origin = new URL(url).origin
  for (let hops = 0; ; hops++) {
    const res = await fetch(url, { headers: { ...headers, 'x-api-key': opts.apiKey, 'x-request-id': `cache-warm-${randomUUID()}`, 'x-cache-warm': '1' }, redirect: 'manual', signal })
    const location = res.headers.get('location')
    if (res.status < 300 || res.status > 399 || location === null || hops === MAX_REDIRECTS) return res
    await res.arrayBuffer()
    const target = new URL(location, url)
    if (target.origin !== origin) throw new RedirectRefused(origin, target.origin)
    url = target.href
  }
}

function errorOf(text: string): Answer['error'] {
  try {
    const body = JSON.parse(text) as { code?: unknown; message?: unknown }
    return { ...(typeof body.code === 'string' ? { code: body.code } : {}), ...(typeof body.message === 'string' ? { message: body.message } : {}) }
  } catch {
    return null
  }
}
