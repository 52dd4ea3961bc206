import { LRUCache } from 'lru-cache'
import { entryBytes } from '../perf/kept-bytes.js'
import type { NamedInCall } from './scope.js'
import type { RequestTarget } from './request-target.js'

/** A URL's target as the gateway checked it. */
export interface KnownTarget {
  target: RequestTarget
  /** What a body-less call to this target names; worked out once. */
  bodyless?: NamedInCall
}

/** A URL seen before: its checked target, and what each credential that read it worked out from it (`F`, a report's form). */
export interface KnownUrl<F> {
  known: KnownTarget
  forms: readonly { credential: string; form: F }[]
}

// Dashboards ask the same URLs again and again: a URL's checked target and its report's
// canonical form and key are kept, which keeps that work off the hit path. Filled only once
// a call passed its scope check (a refused call, 401, 403 or 400, leaves nothing), and
// bounded by the bytes each entry keeps (the URL, its decoded and encoded query, the
// canonical query): a URL can be 16 KB and its canonical query three times that.
export const KNOWN_URL_BYTES = 16 * 1024 * 1024

/** The one memo by URL, which every entrance reads; Admission keeps what it holds (targets, and report reads' forms). */
export class KnownUrls<F> {
  readonly #memo = new LRUCache<string, KnownUrl<F>>({ maxSize: KNOWN_URL_BYTES, sizeCalculation: entryBytes })

  /** What is kept for `url`, if anything (counted as a use). */
  get(url: string): KnownUrl<F> | undefined {
    return this.#memo.get(url)
  }

  /**
   * Keeps the checked target of a URL whose call passed every check (made by `make` when
   * none is kept yet) and, if given, the form one credential worked out from it; returns
   * the target kept. Admission.remember is its one caller: the memo has one writer.
   */
  keep(url: string, make: () => KnownTarget, form?: { credential: string; form: F }): KnownTarget {
    const kept = this.#memo.peek(url)
    if (kept && (!form || kept.forms.some((f) => f.credential === form.credential))) return kept.known
    const known = kept?.known ?? make()
    // A new entry rather than a changed one: lru-cache counts an entry's size when it is set.
    this.#memo.set(url, { known, forms: form ? [...(kept?.forms ?? []), form] : [] })
    return known
  }

  /** Bytes kept, as counted against KNOWN_URL_BYTES. */
  get bytes(): number {
    return this.#memo.calculatedSize
  }
}
