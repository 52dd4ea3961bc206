// What a listener's 404 reads of a path no route of its serves: which listener serves it (a
// call sent to the wrong port is told where it goes), and a call after a base URL ending in /.

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

/** True for a path (no query) that is a call under /api/v1/ after empty segments (`//api/v1/…`): a base URL ending in `/`. */
export function apiAfterEmptySegments(path: string): boolean {
  return /^\/{2,}api\/v1\//.test(path)
}
