import type { TokenProvider } from './token-provider.js'
import { systemClock } from '../../clock.js'

/**
 * What the probe call (`platform.probe`) says of a token the platform answered 401 to:
 * `confirmed` (the probe answers 401 or 403: the token itself is refused), `unconfirmed`
 * (it answers anything else: only that call was refused), `probe_failed` (it did not
 * answer), `no_probe` (none is configured). Also the metric's label values.
 */
export type Verdict = 'confirmed' | 'unconfirmed' | 'probe_failed' | 'no_probe'

/**
 * The probe's interval: a credential's probe call starts at most once per this, whatever
 * callers do, and its verdict is trusted this long after it came (a flood of 401s costs
 * one probe per credential and interval, not one per call). A refused token is replaced
 * (or condemned) at once, so only verdicts that keep a token are ever reused.
 */
export const VERDICT_TRUST_MS = 5000

/**
 * How long a route that answered 401 to a token the probe found good is remembered (by
 * credential, route template and token): its further 401s are that route's refusals,
 * and cost no probe.
 */
export const REFUSING_ROUTE_MEMORY_MS = 10 * 60_000
/** Routes remembered so, across credentials; past it the oldest is forgotten. */
export const MAX_REFUSING_ROUTES = 1024

/** The status the probe call answers with `token`; null without a probe; throws when it fails. */
export type Probe = (provider: TokenProvider, token: string) => Promise<number | null>

interface Entry {
  token: string
  verdict: Promise<Verdict>
  /** The verdict once it came; null while the probe runs. */
  outcome: Verdict | null
  /** When the probe answered; null while it runs. */
  settledAt: number | null
}

/**
 * Tells a refused token from a refused call: before a 401 condemns the token,
 * the probe call is made with that token, on the gateway's terms, whatever callers do:
 * - one probe per credential at a time, shared by every call that saw a 401, and at most
 *   one per VERDICT_TRUST_MS (another token within it is probed only when the last
 *   verdict condemned its token, which is then replaced);
 * - none while the probe's own route (or the credential) is paused by the platform: its
 *   429 would say nothing of the token (`probe_failed`: the token stays);
 * - none for a route remembered to refuse a good token (REFUSING_ROUTE_MEMORY_MS).
 */
export class TokenVerdicts {
  readonly #probe: Probe
  readonly #now: () => number
  readonly #probePaused: (credential: string) => boolean
  /** By credential: the verdict on the token its last 401 was given to. */
  readonly #entries = new Map<string, Entry>()
  /** `credential\0route` → the token the route refused although the probe found it good, and until when that is remembered. */
  readonly #refusing = new Map<string, { token: string; until: number }>()

  constructor(opts: { probe: Probe; now?: () => number; probePaused?: (credential: string) => boolean }) {
    this.#probe = opts.probe
    this.#now = opts.now ?? systemClock.now
    this.#probePaused = opts.probePaused ?? (() => false)
  }

  /** The verdict on `token`, which the platform answered 401 to on `route` (a route template). */
  judge(provider: TokenProvider, token: string, route?: string): Promise<Verdict> {
    const now = this.#now()
    const routeKey = route === undefined ? null : `${provider.name}\0${route}`
    const known = routeKey === null ? undefined : this.#refusing.get(routeKey)
    if (known && known.token === token && now < known.until) return Promise.resolve('unconfirmed')
    const entry = this.#entries.get(provider.name)
    if (entry && (entry.settledAt === null || now - entry.settledAt < VERDICT_TRUST_MS)) {
      if (entry.token === token) return this.#remembered(entry.verdict, routeKey, token)
      // Another token while a probe runs: its verdict first, then this one is judged.
      if (entry.settledAt === null) return entry.verdict.then(() => this.judge(provider, token, route))
      if (entry.outcome !== 'confirmed') return Promise.resolve('probe_failed')
    }
    if (this.#probePaused(provider.name)) return Promise.resolve('probe_failed')
    const fresh: Entry = {
      token,
      outcome: null,
      settledAt: null,
      verdict: this.#ask(provider, token).then((verdict) => {
        fresh.settledAt = this.#now()
        fresh.outcome = verdict
        return verdict
      }),
    }
    this.#entries.set(provider.name, fresh)
    return this.#remembered(fresh.verdict, routeKey, token)
  }

  /** `verdict`; a route whose 401 it finds unconfirmed is remembered. */
  async #remembered(verdict: Promise<Verdict>, routeKey: string | null, token: string): Promise<Verdict> {
    const v = await verdict
    if (v === 'unconfirmed' && routeKey !== null) {
      this.#refusing.delete(routeKey)
      if (this.#refusing.size >= MAX_REFUSING_ROUTES) this.#refusing.delete(this.#refusing.keys().next().value as string)
      this.#refusing.set(routeKey, { token, until: this.#now() + REFUSING_ROUTE_MEMORY_MS })
    }
    return v
  }

  async #ask(provider: TokenProvider, token: string): Promise<Verdict> {
    let status: number | null
    try {
      status = await this.#probe(provider, token)
    } catch {
      return 'probe_failed'
    }
    if (status === null) return 'no_probe'
    return status === 401 || status === 403 ? 'confirmed' : 'unconfirmed'
  }
}
