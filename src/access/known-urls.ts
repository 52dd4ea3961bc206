import { TeamPartsLru } from '../cache/team-parts-lru.js'
import { entryBytes } from '../perf/kept-bytes.js'
import type { NamedInCall } from './scope.js'
import type { RequestTarget } from './request-target.js'

/** A URL's target as the gateway checked it. */
export interface KnownTarget {
  target: RequestTarget
  /** What a body-less call to this target names; worked out once. */
  bodyless?: NamedInCall
}

/** A URL seen before: its checked target, what each credential that read it worked out from it (`F`, a report's form), and the teams whose calls of it passed. */
export interface KnownUrl<F> {
  known: KnownTarget
  forms: readonly { credential: string; form: F }[]
  teams: readonly string[]
}

// Dashboards ask the same URLs again and again: a URL's checked target and its report's
// canonical form and key are kept, which keeps that work off the hit path. Filled only once
// a call passed its scope check (a refused call, 401, 403 or 400, leaves nothing), and
// bounded by the bytes each entry keeps (the URL, its decoded and encoded query, the
// canonical query): a URL can be 16 KB and its canonical query three times that. An entry
// serves the teams whose own calls of its URL passed (Admission.seenBy): to any other team
// the URL costs what a URL never seen costs, so the time of its answer (a 403 included)
// tells nothing of another team's reads. Each configured team has an even part once the memo
// is full, an entry counting on every team whose call of its URL passed (TeamPartsLru): one
// team's misses of long URLs push out its own entries, never another team's popular URLs,
// whichever team's call kept it first.
export const KNOWN_URL_BYTES = 16 * 1024 * 1024

/** The one memo by URL, which every entrance reads; Admission keeps what it holds (targets, and report reads' forms). */
export class KnownUrls<F> {
  readonly #memo: TeamPartsLru<KnownUrl<F>>

  /** `teams`: how many teams are configured now; `configured`: whether a team is one (one that is not has no part). */
  constructor(o: { teams: () => number; configured: (team: string) => boolean }) {
    this.#memo = new TeamPartsLru<KnownUrl<F>>({ maxBytes: KNOWN_URL_BYTES, teams: o.teams, configured: o.configured, size: entryBytes })
  }

  /** What is kept for `url`, if anything (counted as a use). */
  get(url: string): KnownUrl<F> | undefined {
    return this.#memo.get(url)
  }

  /**
   * Keeps the checked target of a URL whose call by `team` passed every check (made by
   * `make` when none is kept yet), the team, and, if given, the form one credential worked
   * out from it, in place of the one kept for that credential (made for the account its
   * token acted for before); returns the target kept. Admission.remember is its one
   * caller: the memo has one writer.
   */
  keep(url: string, make: () => KnownTarget, team: string, form?: { credential: string; form: F }): KnownTarget {
    const kept = this.#memo.peek(url)
    const hasTeam = kept?.teams.includes(team) === true
    const hasForm = !form || kept?.forms.some((f) => f.credential === form.credential && f.form === form.form) === true
    if (kept && hasTeam && hasForm) return kept.known
    const known = kept?.known ?? make()
    const forms = kept?.forms ?? []
    const teams = kept?.teams ?? []
    // A new entry rather than a changed one: lru-cache counts an entry's size when it is set.
    this.#memo.set(url, { known, forms: form && !hasForm ? [...forms.filter((f) => f.credential !== form.credential), form] : forms, teams: hasTeam ? teams : [...teams, team] }, team)
    return known
  }

  /** Forgets every URL: each is checked anew at its next call. */
  clear(): void {
    this.#memo.clear()
  }

  /** Bytes kept, as counted against KNOWN_URL_BYTES. */
  get bytes(): number {
    return this.#memo.bytes
  }
}
