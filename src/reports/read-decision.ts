import type { IncomingHttpHeaders } from 'node:http'
import type { Admission, Caller } from '../access/admission.js'
import type { KnownTarget, KnownUrl } from '../access/known-urls.js'
import type { RateDecision } from '../access/rate-limit.js'
import { assertMayCall, type Identity } from '../access/team-auth.js'
import { assertReportRead } from '../access/scope.js'
import type { CacheEntry } from '../cache/cache-entry.js'
import type { FillResult, ReportCache } from './report-cache.js'
import { forcesRefresh } from './forced-refresh.js'
import { canonicalGetReport, type CanonicalReport } from './report-query.js'
import type { Trace } from '../observe/tracing.js'

/** A GET report's canonical form and cache key, worked out once per URL and credential. */
export interface KnownReport {
  report: CanonicalReport
  key: string
  /** The account its credential's token acted for when the key was made (TokenProvider.account). */
  account: string
}

/** A read that passed every check its decision makes, counted against its team's limit. */
export interface AdmittedRead {
  identity: Identity
  known: KnownTarget
  form: KnownReport
  rate: RateDecision
  /** A scoped team's call naming campaigns: their owners are looked up (Admission.checkScope) before it is read. */
  scopePending: boolean
  /** It forces a fresh copy from the platform (forced-refresh.ts): no copy in memory answers it. */
  refresh: boolean
}

/** What a decision learned of a read it does not answer: whoever goes on with it does none of it again. */
export interface GoOn {
  /** It passed every check: its copy is read from Redis, or the platform. */
  admitted?: AdmittedRead
  /** The cold fill of its report under way in this process, for it to join. */
  flight?: Promise<FillResult>
  /** Its team's rate-limit decision, counted already (spent: `refused` is the 429). */
  rate?: RateDecision
  /** The refusal to answer (a GW_* error), where a check refused it. */
  refused?: unknown
  /** The admission step of a traced read, left open: its entrance ends it, or a refusal's answer does, failed. */
  admitting?: Trace | undefined
}

/** A fresh copy in memory to answer at once (`answer`, counted as a hit), or what was learned on the way to none. */
export type ReadDecision = (AdmittedRead & { answer: CacheEntry; admitting: Trace | undefined }) | { goOn: GoOn }

/** How a read is decided. */
export interface DecideHow {
  /** Decides only a URL the memo keeps for the caller's team (its own call passed before); any other goes on with nothing learned. */
  seenOnly?: boolean
  /** The call's rate-limit decision, counted already. */
  counted?: RateDecision | undefined
  /** Given a call record, its Caller is set on it once its key names it (as Admission.admit does). */
  into?: { caller: Caller | null }
}

const NOTHING_LEARNED: ReadDecision = { goOn: {} }

/**
 * The one decision of a GET report read, synchronous, made by both entrances (the one
 * before the router, http/reads/fast-path.ts, and the route): the target (400/404), the
 * key (401), the read rule (403), the rate limit (429), the canonical form (400) and the
 * scope (403) in the contract's order, through Admission; then the copy in memory, unless
 * the read forces a refresh (forced-refresh.ts). It answers a fresh copy, or says what it
 * learned for the entrance to go on with: an entrance never checks a read again. A call
 * naming a scoped team's campaigns waits for their owners' lookup (async): its decision
 * goes on with `scopePending`.
 */
export class ReadDecisions {
  readonly #admission: Admission
  readonly #reports: ReportCache
  readonly #maxRangeDays: number

  constructor(admission: Admission, reports: ReportCache, maxRangeDays: number) {
    this.#admission = admission
    this.#reports = reports
    this.#maxRangeDays = maxRangeDays
  }

  /**
   * The decision of a read of `url` by `method` (GET or HEAD) at `now`; `trace`: the
   * request's span, in which its checks are the step `admission`, returned open.
   */
  decide(method: string, url: string, headers: IncomingHttpHeaders, now: number, how: DecideHow, trace?: Trace): ReadDecision {
    const admission = this.#admission
    // One lookup by the URL: its checked target and its forms.
    const found = admission.seen(url)
    if (found === undefined && how.seenOnly === true) return NOTHING_LEARNED
    const admitting = trace?.step('admission')
    let rate = how.counted
    try {
      const checked = admission.target(url, found)
      const identity = admission.identify(headers)
      const team = identity.team
      // Another team's call of the URL is no help to this one: it goes on as a URL never seen
      // (to the router, nothing counted, when only those are decided), checked anew.
      const seen = admission.seenBy(found, team)
      if (found !== undefined && seen === null && how.seenOnly === true) return { goOn: { admitting } }
      const known = admission.targetFor(url, found, seen, checked)
      const caller = how.into ? (how.into.caller = admission.caller(identity, known)) : null
      // The target is searched for secrets unless this team's own call of it passed: another
      // team's URL costs what a URL never seen costs.
      admission.vet(identity, headers, seen === null ? url : undefined)
      assertMayCall(team, method, known.target.path)
      // Counted first, refused after: a spent decision goes on with the refusal, counted.
      rate = admission.count(team, now, rate)
      if (caller) caller.rate = rate
      admission.limit(team, now, rate)
      const credential = team.credential
      // A form kept for another account of the credential (a token of another customer put
      // in since) holds that account's key: made anew.
      const account = this.#reports.accountOf(credential)
      const kept = seen && formFor(seen, credential, account)
      const form = kept ?? this.#formOf(known, credential, account)
      let scopePending = false
      if (team.advertisers !== null) {
        assertReportRead(team, form.report.path)
        const named = admission.named(method, known, known)
        // Set before the check, so that a refusal's access line names the account asked.
        if (caller) caller.advertisers = named.accounts
        const accounts = admission.checkAccounts(method, team, named)
        if (caller) caller.accounts = accounts
        scopePending = named.campaigns.length > 0 || named.creativeSets.length > 0
      }
      const refresh = forcesRefresh(headers, team)
      if (scopePending) return { goOn: { admitted: { identity, known, form, rate, scopePending, refresh }, rate, admitting } }
      if (!kept) admission.remember(method, url, known.target, team, { credential, form })
      if (refresh) return { goOn: { admitted: { identity, known, form, rate, scopePending, refresh }, rate, admitting } }
      const entry = this.#reports.freshInMemory(form.key, now, team.name)
      if (entry !== null) {
        this.#reports.countServed(form.key, entry, 'HIT', 'l1', form.report, credential, team.name, now)
        return { answer: entry, identity, known, form, rate, scopePending, refresh, admitting }
      }
      const admitted: AdmittedRead = { identity, known, form, rate, scopePending, refresh }
      const flight = this.#reports.coldFlight(form.key)
      return { goOn: flight === null ? { admitted, rate, admitting } : { admitted, rate, flight, admitting } }
    } catch (refused) {
      return { goOn: rate === undefined ? { refused, admitting } : { refused, rate, admitting } }
    }
  }

  /**
   * Whether a read decided earlier may be answered now, after a wait (a fill it joined, a
   * copy in Redis): its key still runs and its report's accounts are in its team's scope as
   * they are now (Admission.stillAdmitted). A read that may not is decided again, refused.
   */
  stillAdmitted(read: AdmittedRead): boolean {
    return this.#admission.stillAdmits(read.identity, read.form.report.advertiserIds)
  }

  /** Keeps the form of a read whose scope was looked up (`scopePending`) and passed. */
  remember(method: string, url: string, admitted: AdmittedRead): void {
    this.#admission.remember(method, url, admitted.known.target, admitted.identity.team, { credential: admitted.identity.team.credential, form: admitted.form })
  }

  #formOf(known: KnownTarget, credential: string, account: string): KnownReport {
    const report = canonicalGetReport(known.target.path, known.target.search, { maxRangeDays: this.#maxRangeDays })
    return { report, key: this.#reports.keyFor(credential, report, account), account }
  }
}

/** The form `seen` keeps for `credential` acting for `account`, if any: what this decision kept (Admission keeps forms for it, unread). */
function formFor(seen: KnownUrl<unknown>, credential: string, account: string): KnownReport | undefined {
  for (const kept of seen.forms) if (kept.credential === credential && (kept.form as KnownReport).account === account) return kept.form as KnownReport
  return undefined
}
