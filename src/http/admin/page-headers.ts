import type { FastifyInstance } from 'fastify'

/**
 * What the browser may do with the console: its own scripts and style only, calls to
 * this listener only, in no frame. The page holds no data, so it needs no token.
 */
export const CONSOLE_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

/**
 * Swagger UI at /docs under the console's policy, with images from `data:` URLs besides:
 * its style sheet draws its icons with them. Its scripts are files of this listener, none
 * inline, and it calls only this listener (`/docs/json`).
 */
export const DOCS_CSP = CONSOLE_CSP.replace("img-src 'self'", "img-src 'self' data:")

/**
 * The headers of a page the admin listener serves a browser, and of each of its files:
 * its policy `csp`, read as its `content-type` says, in no frame, sending no referrer,
 * kept by no cache, and in a window of its own origin alone: a page of another origin
 * that opened it (window.open) holds a handle that reads as closed, so it cannot send the
 * operator's console to a look-alike page asking for the token (reverse tabnabbing).
 */
function pageHeaders(csp: string): Readonly<Record<string, string>> {
  return {
    'content-security-policy': csp,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
    'cross-origin-opener-policy': 'same-origin',
  }
}

/**
 * Writes the page's headers under `csp` on every answer of `scope`'s routes (a plugin's
 * scope of its own), its refusals and 404s included, and on no route outside it.
 */
export function answerAsPages(scope: FastifyInstance, csp: string): void {
  const headers = pageHeaders(csp)
  scope.addHook('onSend', async (_request, reply, payload) => {
    reply.headers(headers)
    return payload
  })
}
