import type { FastifyReply } from 'fastify'
import type { Validator } from './validation.js'

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

export function sendInvalid(reply: FastifyReply, validator: Validator): void {
  sendJson(reply, 422, validator.body())
}
