import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { WebhookConnections } from '../../src/jobs/webhook-connections.js'
import type { PlatformCheck } from '../../src/jobs/webhook-target.js'
import { waitFor } from '../helpers/wait.js'

// The connections of one receiver origin are shared by every delivery to it, of every team:
// an attempt that ends without its answer read (timed out, cut at its bound) ends its own
// request, never another's under way on the same origin's pool.

const notPlatform: PlatformCheck = Object.assign(() => false, { key: 'none' })
let server: Server | null = null

afterEach(async () => {
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve))
  server = null
})

/** A receiver on loopback that answers nothing until told: the requests it holds, by path. */
async function receiver(): Promise<{ origin: URL; held: Map<string, ServerResponse> }> {
  const held = new Map<string, ServerResponse>()
  server = createServer((req, res) => {
    req.resume()
    held.set(req.url ?? '', res)
  })
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
  return { origin: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`), held }
}

describe('the connections of a receiver origin', () => {
  it('an attempt that timed out leaves the attempts under way beside it to their answers, and the next starts anew', async () => {
    const { origin, held } = await receiver()
    const connections = new WebhookConnections()
    // Each attempt asks for its origin's pool, as a delivery does: both get the one pool.
    const post = (path: string, signal?: AbortSignal) => connections.for(origin, notPlatform).request({ origin: origin.origin, path, method: 'POST', body: '{}', ...(signal ? { signal } : {}) })
    const dispatcher = connections.for(origin, notPlatform)
    connections.done(dispatcher)
    const cut = new AbortController()
    const healthy = post('/healthy')
    const timedOut = post('/silent', cut.signal).then(
      () => 'answered',
      () => {
        // As a delivery does after an attempt whose answer it did not read to the end, then as its attempt ends.
        connections.drop(origin, dispatcher)
        connections.done(dispatcher)
        return 'timed out'
      },
    )
    await waitFor('both attempts at the receiver', () => held.size === 2)
    cut.abort(new DOMException('no answer in time', 'TimeoutError'))
    expect(await timedOut).toBe('timed out')
    held.get('/healthy')?.writeHead(204).end()
    const res = await healthy
    await res.body.dump()
    expect(res.statusCode).toBe(204)
    // The retired pool closes as its last attempt ends; the next attempt starts anew.
    expect((dispatcher as unknown as { destroyed: boolean }).destroyed).toBe(false)
    connections.done(dispatcher)
    expect((dispatcher as unknown as { destroyed: boolean }).destroyed).toBe(true)
    expect(connections.for(origin, notPlatform)).not.toBe(dispatcher)
    await connections.close()
  })
})
