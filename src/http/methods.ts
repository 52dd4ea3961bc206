import { METHODS } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { MethodNotAllowedError, ProxyUnservedPathError, type GatewayError } from '../errors.js'
import { API_PREFIX, isSafeApiPath } from '../access/path-safety.js'

// Which methods reach the platform (contract, "Calling the proxy listener"): those its
// calls are made of. TRACE would have the platform hand the request back, the gateway's
// token in it (RFC 9110 says a server SHOULD reflect it); CONNECT asks for a tunnel;
// OPTIONS asks what a path takes, which the gateway answers itself; the other methods
// Node reads (QUERY, WebDAV's, ...) are no call of the platform's.

/** The methods forwarded to the platform, in the order `allow` lists them. */
export const FORWARDED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']

/** `allow` under /api/v1/: the methods forwarded, and OPTIONS, which the gateway answers. */
export const API_ALLOW = [...FORWARDED_METHODS, 'OPTIONS'].join(', ')

/**
 * `allow` of the gateway's own paths under /api/v1/ (a report job, its result): the methods
 * they serve, the first that matches. Every other path under /api/v1/jobs (itself, `/`,
 * deeper, and one a decoding router reads elsewhere, `..%2F..%2Fadmin`: path-safety.ts) is
 * the gateway's 404 in every method but OPTIONS (job-routes.ts, `jobPaths`): OPTIONS is all
 * it serves there (RFC 9110, 10.2.1).
 */
const OWN_PATHS: readonly [RegExp, string][] = [
  [/^\/api\/v1\/jobs\/[^/?]+(\?|$)/, 'GET, HEAD, DELETE, OPTIONS'],
  [/^\/api\/v1\/jobs\/[^/?]+\/result(\?|$)/, 'GET, HEAD, OPTIONS'],
]
const JOBS_PATH = /^\/api\/v1\/jobs(\/|\?|$)/

/**
 * What OPTIONS of `url` answers in `allow` (a path of the OpenAPI document too:
 * `/api/v1/jobs/{id}`), and so the `allow` of a 405 there: one list per path, whatever
 * method asked it. A path under /api/v1/ of an unsafe spelling (path-safety.ts), which every
 * method finds 404, and with `jobsOn` false (the cache off, no job routes) every job path,
 * serve no method but OPTIONS.
 */
export function allowOf(url: string, jobsOn = true): string {
  const unsafe = url.startsWith(API_PREFIX) && !isSafeApiPath(url)
  if (!unsafe && !JOBS_PATH.test(url)) return API_ALLOW
  const own = jobsOn && !unsafe ? OWN_PATHS.find(([path]) => path.test(url)) : undefined
  return own?.[1] ?? 'OPTIONS'
}

// Every other method Node reads, but CONNECT, which never reaches the router (server.ts refuses it with allowOf).
const REFUSED = METHODS.filter((m) => m !== 'CONNECT' && m !== 'OPTIONS' && !FORWARDED_METHODS.includes(m))

/**
 * The 405 of a method not forwarded under /api/v1/ (the proxy listener's, before its router
 * too: server.ts refuseMethod); outside /api/v1/ a method Node's parser does not know is the
 * 404 of any method there, and CONNECT, to any target, a 405.
 */
export function methodRefusal(method: string, allow: string, path = API_PREFIX): GatewayError {
  if (method !== 'CONNECT' && !path.startsWith(API_PREFIX)) return new ProxyUnservedPathError()
  return new MethodNotAllowedError(method, allow)
}

/**
 * The answers to the methods that are not forwarded, for every path under /api/v1/, before
 * its key, target or body is read: OPTIONS 204 with `allow`; any other method 405
 * GW_METHOD_NOT_ALLOWED with the same `allow` (allowOf). `api` holds the /api/v1 routes (api.ts);
 * `jobsOn`: whether it has the job routes (the cache on).
 */
export function methodRoutes(api: FastifyInstance, jobsOn: boolean): void {
  const refuse = (request: FastifyRequest, reply: FastifyReply): never => {
    const allow = allowOf(request.url, jobsOn)
    reply.header('allow', allow)
    throw methodRefusal(request.method, allow)
  }
  // Fastify routes some methods only once told of them. All the refused ones are bodyless to
  // it (QUERY too, whose missing content-type would be a 400 first): nothing of a body is
  // read before the 405.
  for (const method of REFUSED) api.addHttpMethod(method, { hasBody: false, overrideExisting: true })
  api.route({ method: REFUSED, url: '/api/v1/*', schema: { hide: true }, handler: refuse })
  api.options('/api/v1/*', { schema: { hide: true } }, (request, reply) => reply.code(204).header('allow', allowOf(request.url, jobsOn)).send())
}
