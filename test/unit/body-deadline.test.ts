import type { IncomingMessage } from 'node:http'
import Fastify from 'fastify'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { bodyDeadlines } from '../../src/http/hooks/body-deadline.js'

// A call refused before its body is read (as a key is checked): the body is never read to its end.
async function refusingServer() {
  const app = Fastify()
  const requests: IncomingMessage[] = []
  bodyDeadlines(app, 1000)
  app.addHook('onRequest', async (request, reply) => {
    requests.push(request.raw)
    return reply.code(401).send({ code: 'GW_UNAUTHORIZED' })
  })
  app.post('/', async () => ({}))
  await app.ready()
  return { app, requests }
}
const refused = { method: 'POST' as const, url: '/', headers: { 'content-type': 'application/json' }, payload: '{"a":1}' }

describe('body deadlines', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('cuts off a body that has not arrived within its time while the listener is open', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const { app, requests } = await refusingServer()
    const res = await app.inject(refused)
    expect(res.statusCode).toBe(401)
    expect(requests.map((r) => r.destroyed)).toEqual([false])
    vi.advanceTimersByTime(999)
    expect(requests.map((r) => r.destroyed)).toEqual([false])
    vi.advanceTimersByTime(1)
    expect(requests.map((r) => r.destroyed)).toEqual([true])
    await app.close()
  })

  it('drops the deadlines still pending when the listener closes', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const { app } = await refusingServer()
    const res = await app.inject(refused)
    expect(res.statusCode).toBe(401)
    await app.close()
    expect(vi.getTimerCount()).toBe(0)
    expect(() => vi.advanceTimersByTime(1000)).not.toThrow()
  })
})
