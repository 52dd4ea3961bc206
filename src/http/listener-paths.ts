// What a listener's 404 reads of a path no route of its serves: which listener serves it (a
// call sent to the wrong port is told where it goes), and a call after a base URL ending in /.

/** The health paths both listeners serve. */
export const HEALTH_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz'])

/** The first segments of the paths only the admin listener serves (/healthz and /readyz both serve). */
const ADMIN_LISTENER_ROOTS: ReadonlySet<string> = new Set(['admin', 'console', 'metrics', 'docs'])

/** True for a path (no query) the admin listener serves and the proxy listener does not: `/admin`, `/admin/…`, `/console…`, `/metrics`, `/docs…`. */
export function servedByAdminListener(path: string): boolean {
  const first = path.split('/')[1] ?? ''
  return ADMIN_LISTENER_ROOTS.has(first)
}

/** True for a path (no query) only the proxy listener serves: a platform call or a job's, under `/api/`. */
export function servedByProxyListener(path: string): boolean {
  return path.startsWith('/api/')
}

/** The path (no query) after its leading empty segments (`//admin/status`: `/admin/status`), null where it has none. */
export function afterEmptySegments(path: string): string | null {
  const rest = /^\/{2,}(.*)$/s.exec(path)
  return rest === null ? null : `/${rest[1]}`
}
