import type { FastifyPluginCallback, FastifyReply } from 'fastify'
import { parseCapacity, parseFailureMode, parseWeather } from './conditions.js'
import { sendNotFound } from './replies.js'
import type { Sandbox, SandboxRequestRecord } from './types.js'
import { parseThrottle } from './throttle-counts.js'
import { asRecord } from './validation.js'

// The Sandbox controls over HTTP, for benchmarks that run the sandbox in another
// process. The real platform has no `/__sandbox` prefix, so these can never
// shadow a platform route; they answer loopback callers only, whatever the bind.

export type SandboxControls = Pick<
  Sandbox,
  'issueToken' | 'revokeAllTokens' | 'setLatency' | 'setCapacity' | 'setWeather' | 'setThrottle' | 'setRouteThrottle' | 'setFailure' | 'setRouteFailure' | 'clearRouteFailures' | 'releaseHeld' | 'countRequests' | 'clearRequests' | 'concurrency' | 'resetConcurrency'
>

export function controlRoutes(controls: SandboxControls): FastifyPluginCallback {
  return (app, _options, done) => {
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, text, parsed) => {
      try {
        parsed(null, text === '' ? undefined : JSON.parse(text as string))
      } catch {
        parsed(Object.assign(new Error('The request body is not valid JSON.'), { statusCode: 400 }), undefined)
      }
    })
    app.addHook('onRequest', (request, reply, next) => {
      if (isLoopback(request.socket.remoteAddress)) next()
      else sendNotFound(reply)
    })

    app.post('/latency', (request, reply) => {
      const { ms, maxMs = ms } = asRecord(request.body)
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) return badRequest(reply, '"ms" must be a number >= 0')
      if (typeof maxMs !== 'number' || !Number.isFinite(maxMs) || maxMs < ms) return badRequest(reply, '"maxMs" must be a number >= "ms"')
      controls.setLatency(ms, maxMs)
      return maxMs === ms ? { ms } : { ms, maxMs }
    })

    app.post('/capacity', (request, reply) => {
      const capacity = parseCapacity(request.body)
      if (typeof capacity === 'string') return badRequest(reply, capacity)
      controls.setCapacity(capacity)
      return { capacity: { ...capacity, workers: Number.isFinite(capacity.workers) ? capacity.workers : null } }
    })

    app.post('/weather', (request, reply) => {
      const weather = parseWeather(request.body)
      if (typeof weather === 'string') return badRequest(reply, weather)
      controls.setWeather(weather)
      return { weather }
    })

    app.post('/throttle', (request, reply) => {
      const throttle = parseThrottle(request.body)
      if (typeof throttle === 'string') return badRequest(reply, throttle)
      controls.setThrottle(throttle)
      return { throttle }
    })

    app.post('/failure', (request, reply) => {
      const mode = parseFailureMode(request.body)
      if (typeof mode === 'string') return badRequest(reply, mode)
      controls.setFailure(mode)
      return { failure: mode }
    })

    app.post('/route-failure', (request, reply) => {
      const { path, ...rest } = asRecord(request.body)
      if (typeof path !== 'string' || !path.startsWith('/')) return badRequest(reply, '"path" must be a path starting with /')
      const mode = parseFailureMode(rest)
      if (typeof mode === 'string') return badRequest(reply, mode)
      controls.setRouteFailure(path, mode)
      return { path, failure: mode }
    })

    app.delete('/route-failure', (_request, reply) => {
      controls.clearRouteFailures()
      reply.code(204).send()
    })

    app.post('/release', (_request, reply) => {
      controls.releaseHeld()
      reply.code(204).send()
    })

    app.get('/requests/count', (request) => {
      const { path, method } = asRecord(request.query)
      const matches = (record: SandboxRequestRecord): boolean =>
        (typeof path !== 'string' || record.path === path) && (typeof method !== 'string' || record.method === method.toUpperCase())
      return { count: controls.countRequests(matches) }
    })

    app.delete('/requests', (_request, reply) => {
      controls.clearRequests()
      reply.code(204).send()
    })

    app.get('/concurrency', () => controls.concurrency())

    app.delete('/concurrency', (_request, reply) => {
      controls.resetConcurrency()
      reply.code(204).send()
    })

    app.post('/tokens', (request, reply) => {
      const { accountId, ttlSeconds } = asRecord(request.body)
      if (accountId !== undefined && typeof accountId !== 'number') return badRequest(reply, '"accountId" must be a number')
      if (ttlSeconds !== undefined && typeof ttlSeconds !== 'number') return badRequest(reply, '"ttlSeconds" must be a number')
      try {
        return { access_token: controls.issueToken({ accountId, ttlSeconds }) }
      } catch (error) {
        return badRequest(reply, (error as Error).message)
      }
    })

    app.delete('/tokens', (_request, reply) => {
      controls.revokeAllTokens()
      reply.code(204).send()
    })

    done()
  }
}

/** Sync handlers answer by returning a body; this sets the status on the way. */
function badRequest(reply: FastifyReply, message: string): { message: string } {
  reply.code(400)
  return { message }
}

function isLoopback(address: string | undefined): boolean {
  return address !== undefined && (address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.'))
}
