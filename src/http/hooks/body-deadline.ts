import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { RequestTimeoutError } from '../../errors.js'
import { hasBody } from '../../access/admission.js'

/**
 * limits.bodyTimeout: a body must have arrived within it, counted from the end
 * of its headers. Node's own requestTimeout is checked once a second over the whole
 * request; this one holds whatever reads the body (a route's parser, the proxy's
 * stream, or nobody, when the call was refused before its body was read).
 * A closed listener cuts nothing off: the deadlines still pending are dropped with it
 * (an injected request's body that is never read never ends).
 */
export function bodyDeadlines(app: FastifyInstance, timeoutMs: number): void {
  const pending = new Set<NodeJS.Timeout>()
  app.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw
    if (hasBody(raw.headers) && !raw.complete) {
      const timer = setTimeout(() => {
        pending.delete(timer)
        cutOff(request, reply)
      }, timeoutMs)
      pending.add(timer)
      const clear = () => {
        clearTimeout(timer)
        pending.delete(timer)
      }
      raw.once('end', clear).once('close', clear)
    }
    done()
  })
  app.addHook('onClose', (_instance, done) => {
    for (const timer of pending) clearTimeout(timer)
    pending.clear()
    done()
  })
}

// The caller gets its 408 if nothing was answered yet; either way the connection is
// closed once the answer is out: what is left of the body would be read as the next request.
// A request destroyed before its body ended destroys its socket (Node's IncomingMessage);
// an injected request has no socket to close, and is ended alone.
function cutOff(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw
  if (reply.sent || reply.raw.headersSent) {
    raw.destroy()
    return
  }
  reply.raw.once('finish', () => raw.destroy())
  reply.header('connection', 'close').send(new RequestTimeoutError())
}
