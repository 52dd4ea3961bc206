import { canonicalPath } from './canonical-path.js'

/**
 * A call's route: its path without the query in its one spelling (canonical-path.ts),
 * each numeric segment as `{id}`. Every spelling of a path is one route, so a caller's
 * spelling never makes one throttled route count as two.
 */
export function routeTemplate(url: string): string {
  const end = url.search(/[?#]/)
  return canonicalPath((end === -1 ? url : url.slice(0, end)) || '/').replace(NUMERIC_SEGMENT, '{id}')
}

/** A segment of digits alone, between slashes or at either end. Asked several times a platform call, so one pass over the path. */
const NUMERIC_SEGMENT = /(?<=^|\/)\d+(?=\/|$)/g
