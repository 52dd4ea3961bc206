import Fastify from 'fastify'
import { describe, expect, it } from 'vitest'
import { SCHEMA_CONTROLLER } from '../../src/http/schema-compilers.js'

// The listeners' schemas compiled once a process (schema-compilers.ts): an instance built
// after another checks and writes by its own routes' schemas, never by the other's.

async function listener(kinds: string[], count: 'integer' | 'string') {
  const app = Fastify({ schemaController: SCHEMA_CONTROLLER })
  app.get('/things', {
    schema: {
      querystring: { type: 'object', additionalProperties: false, properties: { kind: { enum: kinds } } },
      response: { 200: { type: 'object', properties: { count: { type: count } } } },
    },
  }, async () => ({ count: 7, hidden: true }))
  await app.ready()
  return app
}

describe('route schemas compiled once a process', () => {
  it('checks a query and writes an answer by each instance\'s own schema when two share a route', async () => {
    const first = await listener(['a'], 'integer')
    const second = await listener(['b'], 'string')
    const same = await listener(['a'], 'integer')
    try {
      expect((await first.inject('/things?kind=a')).statusCode).toBe(200)
      expect((await first.inject('/things?kind=b')).statusCode).toBe(400)
      expect((await second.inject('/things?kind=b')).statusCode).toBe(200)
      expect((await second.inject('/things?kind=a')).statusCode).toBe(400)
      expect((await same.inject('/things?kind=b')).statusCode).toBe(400)
      expect((await first.inject('/things')).json()).toEqual({ count: 7 })
      expect((await second.inject('/things')).json()).toEqual({ count: '7' })
      expect((await same.inject('/things')).json()).toEqual({ count: 7 })
    } finally {
      await Promise.all([first.close(), second.close(), same.close()])
    }
  })

  it('refuses a route that would validate its headers through a schema, at its start', async () => {
    const app = Fastify({ schemaController: SCHEMA_CONTROLLER })
    app.get('/h', { schema: { headers: { type: 'object', required: ['X-Thing'] } } }, async () => 'ok')
    await expect(app.ready()).rejects.toThrow(/GET \/h: a headers schema is not validated/)
    await app.close()
  })
})
