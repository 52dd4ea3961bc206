/**
 * The targets of the chaos soak (`npm run soak -- --chaos`) as plain functions: what an
 * answer counts as, how many errors a stretch of answers may hold at the baseline rate,
 * how long after a fault errors stayed above it, whether Redis and the replicas agree on
 * the seats and the learned limit, and whether memory grew. The soak (scripts/soak.mjs)
 * does the I/O; test/unit/soak-targets.test.ts pins these.
 */

import { readFileSync } from 'node:fs'

/**
 * Every status the proxy listener answers with itself and its GW_* codes, read from the
 * contract's error table (docs/contract.md, "Errors"), so that a code the contract gains
 * counts as documented here at once. Rows of admin calls and of a job's failure (their
 * meaning opens with a parenthesis) are left out, and so is 500 GW_INTERNAL: a fault of
 * the gateway, which the soak counts as undocumented.
 */
export function documentedCodes(contract) {
  const table = contract.slice(contract.indexOf('\n## Errors\n'), contract.indexOf('\n## Admin listener\n'))
  const codes = {}
  for (const [, status, code, meaning] of table.matchAll(/^\| (\d{3}) \| `(GW_[A-Z_]+)` \| (.*)$/gm)) {
    if (status === '500' || meaning.startsWith('(')) continue
    codes[status] = [...(codes[status] ?? []), code]
  }
  return codes
}

export const DOCUMENTED_CODES = documentedCodes(readFileSync(new URL('../docs/contract.md', import.meta.url), 'utf8'))

/**
 * What one answer counts as. `expect`: the statuses a request of its kind succeeds with
 * ([200], [201], [200, 429] for a team over its limit, [401] for a bad key…). `answer`:
 * `status` (null: no answer, the request was lost) and `code` (the GW_* code of a JSON
 * error body; null for a body without one, which is the platform's own, passed through).
 *
 * - error: lost, any 5xx, a 429 that is not the team's own rate limit (the platform's,
 *   passed through), or anything undocumented: what the error rate counts.
 * - undocumented: why the answer is outside what the contract lets this request get, or
 *   null. A 500 is a fault of the gateway (GW_INTERNAL): undocumented here.
 */
export function classify(expect, answer) {
  const { status, code } = answer
  if (status === null) return { error: true, undocumented: null }
  const codes = DOCUMENTED_CODES[status] ?? []
  let undocumented = null
  if (status === 429 && code === null) {
    // The platform's own 429, which passes through as it is (contract, "Errors"), to any
    // request: a team's that may be answered its own 429 too.
  } else if (expect.includes(status)) {
    if (status >= 400 && !codes.includes(code)) undocumented = `${status} ${code ?? 'without a GW_* code'}`
  } else if (status >= 500) {
    if (!codes.includes(code)) undocumented = `${status} ${code ?? 'without a GW_* code'}`
  } else {
    undocumented = `${status} ${code ?? ''}`.trim() + ` where ${expect.join('/')} was expected`
  }
  const throttled = status === 429 && code !== 'GW_RATE_LIMITED'
  return { error: status >= 500 || throttled || undocumented !== null, undocumented }
}

/**
 * The most errors a stretch of `n` answers may hold at the baseline error share and still
 * count as calm: the Poisson quantile whose upper tail is under `alpha`, at least one (a
 * single unlucky error in a quiet stretch is no alarm). A run judges hundreds of
 * overlapping windows (about 700 in 12 minutes): at 1e-4 a calm run misses by chance in
 * well under one run in ten, where the mean plus three standard deviations plus one
 * (a tail of about 5e-4 a window) missed in one run in four, on the platform's own 5xx.
 */
export const RECOVERY_ALPHA = 1e-4

export function allowedErrors(n, baselineShare, alpha = RECOVERY_ALPHA) {
  const mean = n * baselineShare
  // exp(-mean) underflows past about 745: the normal approximation holds there.
  if (mean > 700) return mean + 4.5 * Math.sqrt(mean)
  let k = 0
  let p = Math.exp(-mean)
  let cdf = p
  while (1 - cdf >= alpha) {
    k += 1
    p *= mean / k
    cdf += p
  }
  return Math.max(1, k)
}

/**
 * The error share of the `answers` ({ s, error }: secondsAfter) sent within `ranges`
 * ([from, to) pairs of seconds into the run), and `upper`, a bound it stays under with about 99 % confidence
 * (errors + 3√errors + 3, over n, for a Poisson count): a few calm minutes measure a rate
 * of errors of 0.5 % no better than within a factor of two, and a fault's recovery is
 * judged against what the calm stretches could have been, not their one draw.
 */
export function baselineShare(answers, ranges) {
  let n = 0
  let errors = 0
  for (const { s, error } of answers) {
    if (!ranges.some(([from, to]) => s >= from && s < to)) continue
    n += 1
    if (error !== null) errors += 1
  }
  return { n, errors, share: n > 0 ? errors / n : 0, upper: n > 0 ? Math.min(1, (errors + 3 * Math.sqrt(errors) + 3) / n) : 0 }
}

/**
 * The answers sent from a fault's end (`endS`) up to `untilS`, by whole seconds counted
 * from the end: second k holds those sent in [endS + k, endS + k + 1), each { n, errors,
 * codes }. `answers`: { s (when it was sent, seconds into the run), error (what it counts
 * as, e.g. "502 GW_UPSTREAM", or null) }. A fault ends mid-second: the answers sent before
 * its end in that second are the fault's own, not its aftermath.
 */
export function secondsAfter(answers, endS, untilS) {
  const seconds = []
  for (const { s, error } of answers) {
    if (s < endS || s >= untilS) continue
    const second = (seconds[Math.floor(s - endS)] ??= { n: 0, errors: 0, codes: {} })
    second.n += 1
    if (error !== null) {
      second.errors += 1
      second.codes[error] = (second.codes[error] ?? 0) + 1
    }
  }
  return Array.from(seconds, (second) => second ?? { n: 0, errors: 0, codes: {} })
}

/**
 * Seconds after a fault's end (`endS`) until errors were back at the baseline: windows of
 * `windowS` seconds over the seconds counted from the end (secondsAfter) up to `untilS`
 * (the next fault, or the end of the load), the last second cut short left out; the answer
 * is the end of the last second with errors in the last window holding more than
 * allowedErrors, 0 when none does. Whole seconds.
 */
export function recoveryAfter(answers, endS, untilS, share, windowS) {
  const seconds = secondsAfter(answers, endS, untilS)
  const last = Math.min(Math.floor(untilS - endS), seconds.length)
  let recovered = 0
  for (let s = 0; s + 1 <= last; s++) {
    let n = 0
    let errors = 0
    for (let t = s; t < Math.min(s + windowS, last); t++) {
      n += seconds[t].n
      errors += seconds[t].errors
    }
    if (errors <= allowedErrors(n, share)) continue
    // Errors stopped after the last second of this window that has any.
    for (let t = Math.min(s + windowS, last) - 1; t >= s; t--) {
      if (seconds[t].errors > 0) {
        recovered = Math.max(recovered, t + 1)
        break
      }
    }
  }
  return recovered
}

/**
 * What the errors sent from `fromS` up to `untilS` said: `k` lines of `<count> × <error>:
 * <message>`, commonest first (ties in the order first seen), numbers in a message read as
 * N so that one refusal with its figures counts once. `answers`: { s, error, message }.
 */
export function commonestErrors(answers, fromS, untilS, k) {
  const counts = new Map()
  for (const { s, error, message } of answers) {
    if (error === null || s < fromS || s >= untilS) continue
    const what = message ? `${error}: ${message.replace(/\d+(\.\d+)?/g, 'N')}` : error
    counts.set(what, (counts.get(what) ?? 0) + 1)
  }
  return [...counts].sort((a, b) => b[1] - a[1]).slice(0, k).map(([what, n]) => `${n} × ${what}`)
}

/**
 * The seats leased in a credential's seats hash (`<prefix>seats:{<credential>}`, as HGETALL
 * gives it): the leases of the replicas' records that have not lapsed by `now` (epoch ms,
 * Redis' clock). A replica's field is `<expiry>|<lease>|<in flight>|…`; the field `limit`
 * is the shared limit (sharedLimit).
 */
export function liveLeases(hash, now) {
  let seats = 0
  for (const [field, value] of Object.entries(hash)) {
    if (field === 'limit') continue
    const [expiry, lease] = value.split('|')
    if (Number(expiry) > now) seats += Number(lease)
  }
  return seats
}

/**
 * The limit in the `limit` field of a credential's seats hash, or null without one: the
 * learner's record `{ limit, knee, at }`, sealed with GATEWAY_SECRET as `<tag>.<json>`
 * (read, not checked: the replicas check the seal).
 */
export function sharedLimit(value) {
  if (value === null || value === undefined) return null
  try {
    const record = JSON.parse(value.slice(value.indexOf('.') + 1))
    return typeof record?.limit === 'number' ? record.limit : null
  } catch {
    return null
  }
}

/**
 * Whether what Redis holds for the credential's seats and learned limit equals what the
 * replicas say: `redis` { live (liveLeases, read before), liveAfter (read again after the
 * replicas answered), limit (sharedLimit, or null) }; `replicas`: each one's governor of
 * the credential from /admin/status ({ seatsHeld, limit }), or null when it did not
 * answer. Null when they agree, else what differs.
 */
export function disagreement(redis, replicas) {
  if (replicas.some((r) => r === null)) return 'a replica gave no status'
  if (replicas.some((r) => typeof r.seatsHeld !== 'number')) return 'a replica names no seatsHeld in /admin/status'
  if (redis.live !== redis.liveAfter) return `seats changed while read (${redis.live} then ${redis.liveAfter})`
  const held = replicas.reduce((sum, r) => sum + r.seatsHeld, 0)
  const problems = []
  if (held !== redis.live) problems.push(`seats: Redis ${redis.live}, replicas ${replicas.map((r) => r.seatsHeld).join(' + ')}`)
  const limits = replicas.map((r) => r.limit)
  if (redis.limit === null || limits.some((l) => l !== redis.limit)) problems.push(`limit: Redis ${redis.limit ?? 'none'}, replicas ${limits.map((l) => l ?? 'none').join(' / ')}`)
  return problems.length > 0 ? problems.join('; ') : null
}

/**
 * RSS after the last fault (`last`) against after the first minute (`first`): within
 * `share` (0.2) above it, less what V8's new space grew between the two samples. V8 sizes
 * the young generation within --max-semi-space-size as allocation goes: grown from 4 to
 * 32 MiB it adds 28 MB of RSS without a byte more held. A new space V8 shrank frees
 * nothing RSS shows at once (seen: new space 32 to 1 MiB, heapTotal 66 to 37 MB, RSS
 * 133.9 to 136.3 MB), so a shrink is not counted either way.
 */
export function rssWithin(first, last, share = 0.2) {
  const grown = Math.max(0, (last.newSpace ?? 0) - (first.newSpace ?? 0))
  return last.rss - grown <= first.rss * (1 + share)
}

/** A small seeded generator (mulberry32): the same seed, the same faults in the same order. */
export function seededRandom(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The items in an order drawn with `random` (Fisher-Yates), as a new array. */
export function shuffled(items, random) {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[out[i], out[j]] = [out[j], out[i]]
  }
  return out
}
