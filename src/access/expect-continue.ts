import type { IncomingMessage, Server, ServerResponse } from 'node:http'

// `expect: 100-continue` (RFC 9110, 10.1.1): the caller waits for `100 Continue` before
// it sends its body. Node sends it as soon as the head is read, before anything of the
// request is checked, unless the server listens for 'checkContinue': here it does, and
// the body is invited only when it is about to be read, once the key, the rate limit and
// the declared length allow it. A request answered without its body invited has its
// connection closed after the answer (Node does so: a body its caller may still send
// could not be told from its next request).

// The requests waiting for their 100 Continue, each with its answer.
const waiting = new WeakMap<object, ServerResponse>()

/**
 * Hands `server`'s requests that carry an `expect` to `handle` as any other request: with
 * 100-continue, its body waits for inviteBody; with another expectation, it is read as
 * none (RFC 9110 lets a server answer it 417, which Node writes bare, outside the
 * contract's errors; nothing of `expect` reaches the platform).
 */
export function holdContinues(server: Server, handle: (req: IncomingMessage, res: ServerResponse) => void): void {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    waiting.set(req, res)
    handle(req, res)
  })
  server.on('checkExpectation', handle)
}

/** Sends `100 Continue` to the request `req` (its body stream) when it waits for one: its body is about to be read. */
export function inviteBody(req: object): void {
  const res = waiting.get(req)
  if (res === undefined) return
  waiting.delete(req)
  if (!res.headersSent) res.writeContinue()
}
