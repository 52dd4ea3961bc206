import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Agent } from 'undici'
import { afterAll, beforeAll } from 'vitest'

/** A password login's settings, for a token endpoint stand-in. */
export const LOGIN = { username: 'ops@example.com', password: 'hunter2-Pa55word', clientId: 7, clientSecret: 'client-secret-0123456789', tokenUrl: '/oauth/token', grantType: 'platform_dsp' }

/**
 * A token endpoint on loopback for the file's tests (started before them, closed after):
 * every login is answered `status` with the JSON body `reply()` gives at that moment.
 * `base()` is its address, `dispatcher` the connection pool the logins go through.
 */
export function tokenEndpoint(status: number, reply: () => unknown): { base: () => string; dispatcher: Agent } {
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(reply())))
  })
  const dispatcher = new Agent()
  let base = ''
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await dispatcher.close()
    await new Promise((resolve) => server.close(resolve))
  })
  return { base: () => base, dispatcher }
}
