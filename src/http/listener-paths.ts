// Which listener serves a path, for the 404 of the other one: a call sent to the wrong port
// is told where it goes.

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
