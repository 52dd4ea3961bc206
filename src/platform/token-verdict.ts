import type { TokenProvider } from './token-provider.js'

/**
 * What the probe call (`platform.probe`) says of a token the platform answered 401 to:
 * `confirmed` (the probe answers 401 or 403: the token itself is refused), `unconfirmed`
 * (it answers anything else: only that call was refused), `probe_failed` (it did not
 * answer), `no_probe` (none is configured). Also the metric's label values.
 */
export type Verdict = 'confirmed' | 'unconfirmed' | 'probe_failed' | 'no_probe'

/**
 * How long a verdict is trusted for the same token: a flood of 401s from one route costs
 * one probe per credential and this window, not one per call. A refused token is replaced
 * (or condemned) at once, so only verdicts that keep a token are ever reused.
 */
export const VERDICT_TRUST_MS = 5000

/** The status the probe call answers with `token`; null without a probe; throws when it fails. */
export type Probe = (provider: TokenProvider, token: string) => Promise<number | null>

interface Entry {
  token: string
  verdict: Promise<Verdict>
  /** When the probe answered; null while it runs. */
  settledAt: number | null
}

/**
 * Tells a refused token from a refused call (issue 15): before a 401 condemns the token,
 * the probe call is made with that token. One probe per credential and token is in flight
 * at a time, shared by every call that saw a 401.
 */
export class TokenVerdicts {
  readonly #probe: Probe
  readonly #now: () => number
  /** By credential: the verdict on the token its last 401 was given to. */
  readonly #entries = new Map<string, Entry>()

  constructor(opts: { probe: Probe; now?: () => number }) {
    this.#probe = opts.probe
    this.#now = opts.now ?? Date.now
  }

  judge(provider: TokenProvider, token: string): Promise<Verdict> {
    const entry = this.#entries.get(provider.name)
    if (entry && entry.token === token && (entry.settledAt === null || this.#now() - entry.settledAt < VERDICT_TRUST_MS)) return entry.verdict
    const fresh: Entry = {
      token,
      settledAt: null,
      verdict: this.#ask(provider, token).then((verdict) => {
        fresh.settledAt = this.#now()
        return verdict
      }),
    }
    this.#entries.set(provider.name, fresh)
    return fresh.verdict
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
