import { canonicalPath } from './canonical-path.js'

/**
 * A call's route: its path without the query in its one spelling (canonical-path.ts),
 * each numeric segment as `{id}`. Every spelling of a path is one route, so a caller's
 * spelling never makes one throttled route count as two.
 */
export function routeTemplate(url: string): string {
  const path = canonicalPath(url.split(/[?#]/, 1)[0] || '/')
  return path
    .split('/')
    .map((segment) => (/^\d+$/.test(segment) ? '{id}' : segment))
    .join('/')
}
