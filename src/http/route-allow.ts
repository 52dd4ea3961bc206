import { METHODS } from 'node:http'
import type { FastifyInstance } from 'fastify'

// The order `allow` lists methods in: the proxy listener's (methods.ts API_ALLOW), then any other in Node's order.
const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', ...METHODS]

/** A route's path pattern (`/admin/credentials/:name/token`, `/console/*`) as a test of a request's path. */
function pathTest(url: string): RegExp {
  const segments = url.split('/').map((segment) =>
    segment
      .split(/(:[A-Za-z_$][\w$-]*(?:\([^)]*\))?|\*)/)
      .map((part, i) => (i % 2 === 0 ? part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : part === '*' ? '.*' : '[^/]+'))
      .join(''),
  )
  return new RegExp(`^${segments.join('/')}$`)
}

/** The `config` of a route that answers 404 to every method it takes (a path no call serves): it adds none to `allow`. */
export const SERVES_NONE = { servesNone: true } as const

/**
 * `allow` of a path of `app` (RFC 9110, 10.2.1): the methods its routes take there, read
 * from the routes as they are added (Fastify routes by method first, and tells no 405
 * from a 404 itself). Empty for a path no route serves, and for a CONNECT's target (a
 * host and port, no path): no method is allowed there. Call before any route is added.
 */
export function routeAllow(app: FastifyInstance): (target: string) => string {
  const routes: { path: RegExp; methods: readonly string[] }[] = []
  app.addHook('onRoute', (route) => {
    if ((route.config as { servesNone?: boolean } | undefined)?.servesNone === true) return
    routes.push({ path: pathTest(route.url), methods: ([] as string[]).concat(route.method) })
  })
  return (target) => {
    const path = target.split('?', 1)[0] as string
    const methods = new Set(routes.filter((r) => r.path.test(path)).flatMap((r) => r.methods))
    return [...new Set(ORDER)].filter((m) => methods.has(m)).join(', ')
  }
}
