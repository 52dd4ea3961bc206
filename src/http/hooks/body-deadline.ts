import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { RequestTimeoutError } from '../../errors.js'
import { hasBody } from '../../access/admission.js'

/**
 * limits.bodyTimeout: a body must have arrived within it, counted from the end
 * of its headers. Node's own requestTimeout is checked once a second over the whole
 * request; this one holds whatever reads the body (a route's parser, the proxy's
 * stream, or nobody, when the call was refused before its body was read).
 */
export function bodyDeadline(timeoutMs: number): onRequestHookHandler {
  return (request, reply, done) => {
    const raw = request.raw
    if (hasBody(raw.headers) && !raw.complete) {
      const timer = setTimeout(() => cutOff(request, reply), timeoutMs)
      const clear = () => clearTimeout(timer)
      raw.once('end', clear).once('close', clear)
    }
    done()
  }
}

// The caller gets its 408 if nothing was answered yet; either way the connection is
// closed once the answer is out: what is left of the body would be read as the next request.
function cutOff(request: FastifyRequest, reply: FastifyReply): void {
  const socket = request.raw.socket
  if (reply.sent || reply.raw.headersSent) {
    socket.destroy()
    return
  }
  reply.raw.once('finish', () => socket.destroy())
  reply.header('connection', 'close').send(new RequestTimeoutError())
}
