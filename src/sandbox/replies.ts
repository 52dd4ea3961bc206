import type { FastifyReply } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import type { Validator } from './validation.js'
import { expectsJson } from './laravel-request.js'

// The platform is a Laravel app: bare `application/json` (no charset) and
// `{"message": ...}` bodies. Bodies are serialized here, once, so that a report
// asked twice is the same bytes twice; sent as a Buffer because Fastify appends
// `; charset=utf-8` to any JSON string it sends.

export function sendJson(reply: FastifyReply, status: number, body: unknown): void {
  reply.code(status).header('content-type', 'application/json').send(Buffer.from(JSON.stringify(body)))
}

export function sendNotFound(reply: FastifyReply): void {
  sendJson(reply, 404, { message: 'Not Found' })
}

export function sendUnauthenticated(reply: FastifyReply): void {
  sendJson(reply, 401, { message: 'Unauthenticated.' })
}

export function sendForbidden(reply: FastifyReply): void {
  sendJson(reply, 403, { message: 'This action is unauthorized.' })
}

/**
 * A failed validation as Laravel's exception handler answers it: 422 with the errors when
 * the request expects JSON, else a 302 back to the previous URL (UrlGenerator::previous):
 * the referer, or, with no page in the session before it (the gateway sends no cookie),
 * the app's root, `http://<Host>` (UrlGenerator::to('/') trims the slash), with the body
 * Symfony's RedirectResponse writes, naming it.
 */
export function sendInvalid(request: { headers: IncomingHttpHeaders }, reply: FastifyReply, validator: Validator): void {
  if (expectsJson(request.headers)) return sendJson(reply, 422, validator.body())
  const referer = request.headers.referer
  const back = referer !== undefined && URL.canParse(referer) ? referer : `http://${request.headers.host ?? 'localhost'}`
  const html = back.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
  reply.code(302).header('location', back).header('content-type', 'text/html; charset=utf-8').send(REDIRECT_PAGE.replaceAll('%1$s', html))
}

// Symfony\Component\HttpFoundation\RedirectResponse::setTargetUrl's body.
const REDIRECT_PAGE = `<!DOCTYPE html>
<html>
    <head>
        <meta charset="UTF-8" />
        <meta http-equiv="refresh" content="0;url='%1$s'" />

        <title>Redirecting to %1$s</title>
    </head>
    <body>
        Redirecting to <a href="%1$s">%1$s</a>.
    </body>
</html>`
