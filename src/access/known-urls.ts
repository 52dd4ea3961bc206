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

/** What Admission reads and keeps of the memo: targets only. */
export interface TargetMemo {
  get(url: string): { known: KnownTarget } | undefined
  keepTarget(url: string, make: () => KnownTarget): KnownTarget
}

// Dashboards ask the same URLs again and again: a URL's checked target and its report's
// canonical form and key are kept, which keeps that work off the hit path. Filled only once
// a call passed its scope check (a refused call, 401, 403 or 400, leaves nothing), and
// bounded by the bytes each entry keeps (the URL, its decoded and encoded query, the
// canonical query): a URL can be 16 KB and its canonical query three times that.
export const KNOWN_URL_BYTES = 16 * 1024 * 1024

/** The one memo by URL, which every entrance reads: Admission keeps targets in it, report reads their forms. */
export class KnownUrls<F> implements TargetMemo {
  readonly #memo = new LRUCache<string, KnownUrl<F>>({ maxSize: KNOWN_URL_BYTES, sizeCalculation: entryBytes })

  /** What is kept for `url`, if anything (counted as a use). */
  get(url: string): KnownUrl<F> | undefined {
    return this.#memo.get(url)
  }

  /** Keeps the checked target of a URL whose call passed every check (made by `make` when none is kept yet); returns what is kept. */
  keepTarget(url: string, make: () => KnownTarget): KnownTarget {
    const kept = this.#memo.peek(url)
    if (kept) return kept.known
    const known = make()
    this.#memo.set(url, { known, forms: [] })
    return known
  }

  /** Adds `credential`'s form to a URL whose target is kept. */
  keepForm(url: string, credential: string, form: F): void {
    const kept = this.#memo.peek(url)
    if (!kept || kept.forms.some((f) => f.credential === credential)) return
    // A new entry rather than a changed one: lru-cache counts an entry's size when it is set.
    this.#memo.set(url, { known: kept.known, forms: [...kept.forms, { credential, form }] })
  }

  /** Bytes kept, as counted against KNOWN_URL_BYTES. */
  get bytes(): number {
    return this.#memo.calculatedSize
  }
}
