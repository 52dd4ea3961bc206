import { Writable } from 'node:stream'
import pino from 'pino'
import { describe, expect, it } from 'vitest'
import { SecretSet, loggerOptions } from '../../src/observe/logger.js'
import { lazyRequestLogger } from '../../src/http/hooks/request-logger.js'

function gatewayLogger(level: string) {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    },
  })
  let children = 0
  const logger = pino({ ...loggerOptions(level, new SecretSet()), onChild: () => (children += 1) }, stream)
  return { logger, lines, children: () => children }
}

describe('a request logger (Fastify childLoggerFactory)', () => {
  it('makes no pino child for a request that logs nothing, or only below the level', () => {
    const { logger, lines, children } = gatewayLogger('warn')
    const log = lazyRequestLogger(logger, { reqId: 'r1' }, {})
    log.info({ a: 1 }, 'not logged at warn')
    log.debug('nor this')
    expect(log.level).toBe('warn')
    expect((log as unknown as { isLevelEnabled(l: string): boolean }).isLevelEnabled('info')).toBe(false)
    expect(children()).toBe(0)
    expect(lines).toEqual([])
  })

  it('logs what its level allows with the request id, redacted as every gateway line', () => {
    const { logger, lines, children } = gatewayLogger('warn')
    const log = lazyRequestLogger(logger, { reqId: 'r2' }, {})
    log.warn({ token: 'a-platform-token-value' }, 'first')
    log.error('second')
    expect(children()).toBe(1)
    expect(lines.map((l) => [l.reqId, l.msg, l.token])).toEqual([
      ['r2', 'first', '[REDACTED]'],
      ['r2', 'second', undefined],
    ])
    log.child({ step: 'x' }).warn('third')
    expect(lines.at(-1)).toMatchObject({ reqId: 'r2', step: 'x', msg: 'third' })
  })

  it('follows a level set for the request (a route logLevel) rather than its parent', () => {
    const { logger, lines } = gatewayLogger('warn')
    const log = lazyRequestLogger(logger, { reqId: 'r3' }, { level: 'debug' })
    log.debug('logged at the route level')
    expect(log.level).toBe('debug')
    expect(lines.map((l) => [l.reqId, l.msg])).toEqual([['r3', 'logged at the route level']])
    log.level = 'error'
    log.warn('now below the level')
    expect(lines).toHaveLength(1)
  })
})
