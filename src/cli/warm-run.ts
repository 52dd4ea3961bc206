import { randomUUID } from 'node:crypto'
import { describeFailure, emptyTally, outcomeOf, retryDelayMs, type Answer, type Tally, type WarmOptions, type WarmRequest } from './warm-plan.js'

// Cache warming, the I/O: the planned report reads sent to the gateway, a bounded number
// at a time, each answer counted as it comes.

export interface WarmProgress {
  done: number
  total: number
  tally: Tally
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
  let next = 0
  let done = 0
  let refused = false
  const worker = async () => {
    while (next < requests.length && !refused) {
      const request = requests[next++] as WarmRequest
      const answer = await ask(opts, request).catch((err: unknown) => {
        if (err instanceof RedirectRefused) refused = true
        throw err
      })
      const outcome = 'network' in answer ? 'failed' : outcomeOf(answer)
      tally[outcome]++
      if (outcome === 'failed') failures.push(describeFailure(request, answer))
      done++
      onProgress({ done, total: requests.length, tally })
    }
  }
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, requests.length) }, worker))
  return { tally, failures }
}

// A 429 or 503 with a short retry-after is asked again (at most MAX_ATTEMPTS times):
// a warm run should not fail for its own team's rate limit.
async function ask(opts: WarmOptions, request: WarmRequest): Promise<Answer | { network: string }> {
  for (let attempt = 1; ; attempt++) {
    let res: Response
    try {
      res = await fetchSameOrigin(opts, `${opts.baseUrl}${request.path}`)
    } catch (err) {
      if (err instanceof RedirectRefused) throw err
      const e = err as Error & { cause?: { code?: string; message?: string } }
      if (e.name === 'TimeoutError') return { network: `no answer within ${opts.timeoutMs / 1000} s` }
      return { network: e.cause?.code ?? e.cause?.message ?? e.message }
    }
    const xCache = res.headers.get('x-cache')
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
async function fetchSameOrigin(opts: WarmOptions, url: string): Promise<Response> {
  const signal = AbortSignal.timeout(opts.timeoutMs)
  const origin = new URL(url).origin
  for (let hops = 0; ; hops++) {
    const res = await fetch(url, { headers: { 'x-api-key': opts.apiKey, 'x-request-id': `cache-warm-${randomUUID()}`, 'x-cache-warm': '1' }, redirect: 'manual', signal })
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
